// Package announce keeps this terminal host in the registry the gateway
// routes by (libs/termhosts): a heartbeat every third of the host TTL, and
// at once whenever its terminals change, carrying its address, its load and
// the list of its terminals; a claim on each session whose terminal it
// starts, released when the terminal ends; a withdrawal on a clean
// shutdown. It implements terminals.Hooks.
package announce

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/svc-code/svc-code/libs/termhosts"
	"github.com/svc-code/svc-code/services/terminal/internal/terminals"
)

// redisTimeout bounds every registry call.
const redisTimeout = 2 * time.Second

// Announcer announces one host.
type Announcer struct {
	reg  *termhosts.Registry
	host termhosts.Host
	log  *slog.Logger
	kick chan struct{}

	mu      sync.Mutex
	list    func() []terminals.Info
	failing bool
}

var _ terminals.Hooks = (*Announcer)(nil)

// New returns an announcer of host (ID and URL) through reg.
func New(reg *termhosts.Registry, host termhosts.Host, log *slog.Logger) *Announcer {
	return &Announcer{reg: reg, host: host, log: log, kick: make(chan struct{}, 1), list: func() []terminals.Info { return nil }}
}

// SetSource names where the host's terminals are listed from.
func (a *Announcer) SetSource(list func() []terminals.Info) {
	a.mu.Lock()
	a.list = list
	a.mu.Unlock()
}

// Host is the host as announced.
func (a *Announcer) Host() termhosts.Host { return a.host }

// Publish announces the host and its terminals now.
func (a *Announcer) Publish(ctx context.Context) error {
	a.mu.Lock()
	list := a.list
	a.mu.Unlock()
	infos := list()
	terms := make([]termhosts.Terminal, len(infos))
	for i, t := range infos {
		terms[i] = Terminal(t, a.host.ID)
	}
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	err := a.reg.Publish(ctx, a.host, terms)
	a.mu.Lock()
	was := a.failing
	a.failing = err != nil
	a.mu.Unlock()
	switch {
	case err != nil && !was:
		a.log.WarnContext(ctx, "terminal host heartbeat failed; the gateway stops routing here once it expires", "host_id", a.host.ID, "err", err)
	case err == nil && was:
		a.log.InfoContext(ctx, "terminal host heartbeat restored", "host_id", a.host.ID)
	}
	return err
}

// Terminal is the registry's record of a terminal of host.
func Terminal(t terminals.Info, host string) termhosts.Terminal {
	return termhosts.Terminal{Session: t.Session, PID: t.PID, Cwd: t.Cwd, Started: t.Started, Clients: t.Clients, Host: host}
}

// Run beats until ctx ends: every third of the host TTL, and soon after
// each change.
func (a *Announcer) Run(ctx context.Context) {
	tick := time.NewTicker(a.reg.HostTTL() / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-a.kick:
		}
		_ = a.Publish(ctx)
	}
}

// Changed asks for a heartbeat soon; it never blocks.
func (a *Announcer) Changed() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// Started claims the session for this host and returns its previous
// holder.
func (a *Announcer) Started(ctx context.Context, t terminals.Info) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
	defer cancel()
	prev, err := a.reg.ClaimSwap(ctx, t.Session, a.host.ID)
	if err != nil {
		a.log.WarnContext(ctx, "claim terminal session; a reconnect may not find this host", "session_id", t.Session, "err", err)
	}
	return prev
}

// Ended releases the session's claim.
func (a *Announcer) Ended(t terminals.Info) {
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	if err := a.reg.Release(ctx, t.Session, a.host.ID); err != nil {
		a.log.WarnContext(ctx, "release terminal session", "session_id", t.Session, "err", err)
	}
}

// Withdraw removes the host from the registry, with the claims of the
// sessions named.
func (a *Announcer) Withdraw(ctx context.Context, sessions []string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
	defer cancel()
	return a.reg.Withdraw(ctx, a.host.ID, sessions)
}
