// Package terminals keeps this host's terminals: one PTY per session,
// running the user's shell, with a scrollback ring that takes every byte
// the shell writes whether or not anyone watches. Subscribers (the
// WebSocket clients) are cursors into the ring, so a slow one costs the
// server nothing but its cursor and never holds up the shell. A terminal
// outlives its subscribers: it ends when its shell exits, when it is
// killed, or after an idle time with nobody attached.
package terminals

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svc-code/svc-code/services/terminal/internal/pty"
)

// Errors of the manager.
var (
	ErrNotFound = errors.New("no such terminal")
	ErrClosed   = errors.New("the terminal host is shutting down")
	ErrEnded    = errors.New("the terminal has ended")
)

// Default flow-control watermarks.
const (
	DefaultFlowHigh = 512 << 10
	DefaultFlowLow  = 256 << 10
)

// Initial size of a new terminal, until its first resize.
const (
	DefaultRows = 24
	DefaultCols = 80
)

// Config is what the manager needs.
type Config struct {
	// Shell and ShellArgs start each terminal's shell.
	Shell     string
	ShellArgs []string
	// Env is the shell's environment; TERM=xterm-256color is set on top.
	Env []string
	// Scrollback is each terminal's ring size in bytes.
	Scrollback int
	// IdleTimeout ends a terminal nobody has been attached to for that
	// long; zero keeps it until its shell exits.
	IdleTimeout time.Duration
	// KillGrace is how long a hung-up session has before SIGKILL.
	KillGrace time.Duration
	// InputTimeout bounds one write of input to a terminal that does not
	// take it.
	InputTimeout time.Duration
	// FlowHigh and FlowLow are the flow-control watermarks in bytes: the
	// PTY is not read while the most advanced flow client has FlowHigh
	// or more unacknowledged, until it has less than FlowLow. FlowHigh
	// is also the most a flow client is sent beyond its acknowledgement;
	// it is capped at half of Scrollback, so that a client keeping pace
	// never falls behind the ring, even when the lead passes to another.
	FlowHigh, FlowLow int64
	Log               *slog.Logger
	Now               func() time.Time
}

// Hooks are told about the terminals' lives (the host registry).
type Hooks interface {
	// Started is called when a session's terminal has started, before any
	// client sees it. It returns the host that held the session before
	// ("" when none or unknown).
	Started(ctx context.Context, info Info) (previousHost string)
	// Ended is called when it has ended, before its session can start a
	// new one.
	Ended(info Info)
	// Changed is called when terminals or their client counts changed.
	Changed()
}

type noHooks struct{}

func (noHooks) Started(context.Context, Info) string { return "" }
func (noHooks) Ended(Info)                           {}
func (noHooks) Changed()                             {}

// Manager holds this host's terminals by session.
type Manager struct {
	cfg   Config
	hooks Hooks

	mu       sync.Mutex
	terms    map[string]*Terminal
	starting map[string]chan struct{} // sessions whose terminal is being started
	closed   bool
	wg       sync.WaitGroup // the terminals' goroutines
}

// NewManager returns a manager; hooks may be nil.
func NewManager(cfg Config, hooks Hooks) *Manager {
	if hooks == nil {
		hooks = noHooks{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.FlowHigh <= 0 {
		cfg.FlowHigh = DefaultFlowHigh
	}
	// No client that keeps pace may fall behind the ring. The pace is the
	// most advanced acknowledgement, and the lead can pass to another
	// client at once (a slow page given a screen acknowledges up to the
	// ring's end): the head then runs up to FlowHigh beyond the new lead,
	// while the former lead may still be FlowHigh behind the old one. So
	// the ring holds at least twice FlowHigh.
	cfg.FlowHigh = min(cfg.FlowHigh, int64(max(cfg.Scrollback/2, 1)))
	if cfg.FlowLow <= 0 || cfg.FlowLow >= cfg.FlowHigh {
		cfg.FlowLow = cfg.FlowHigh / 4
	}
	return &Manager{cfg: cfg, hooks: hooks, terms: map[string]*Terminal{}, starting: map[string]chan struct{}{}}
}

// AttachRequest asks for a session's terminal.
type AttachRequest struct {
	Session string
	// Resume, when set, continues a stream the client was reading.
	Resume *Resume
	// Flow makes the subscriber a flow subscriber (it acknowledges).
	Flow bool
	// SkipLines, for a flow subscriber, is the scrollback its client keeps,
	// in lines: plain-text floods it cannot show are left out (skip.go).
	// 0 sends every byte.
	SkipLines int
	// Cwd picks the working directory when the session has no terminal
	// and one must be started.
	Cwd func(ctx context.Context) (string, error)
}

// Attach subscribes to the session's terminal, starting it when the
// session has none (or its last one is ending).
func (m *Manager) Attach(ctx context.Context, req AttachRequest) (*Attachment, error) {
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, ErrClosed
		}
		if t := m.terms[req.Session]; t != nil {
			m.mu.Unlock()
			if a := t.attach(req.Resume, req.Flow, req.SkipLines); a != nil {
				return a, nil
			}
			if err := wait(ctx, t.gone); err != nil {
				return nil, err
			}
			continue
		}
		if ch := m.starting[req.Session]; ch != nil {
			m.mu.Unlock()
			if err := wait(ctx, ch); err != nil {
				return nil, err
			}
			continue
		}
		ch := make(chan struct{})
		m.starting[req.Session] = ch
		m.mu.Unlock()

		t, err := m.start(ctx, req)

		m.mu.Lock()
		delete(m.starting, req.Session)
		close(ch)
		if err == nil && m.closed {
			err = ErrClosed
		}
		if err != nil {
			m.mu.Unlock()
			if t != nil {
				m.abandon(t)
			}
			return nil, err
		}
		m.terms[req.Session] = t
		a := t.attach(req.Resume, req.Flow, req.SkipLines)
		t.run()
		m.mu.Unlock()
		a.Created, a.PreviousHost = true, t.previousHost
		return a, nil
	}
}

func wait(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// start starts a terminal for req's session without publishing it.
func (m *Manager) start(ctx context.Context, req AttachRequest) (*Terminal, error) {
	cwd, err := req.Cwd(ctx)
	if err != nil {
		return nil, err
	}
	p, err := pty.Start(pty.Options{
		Path: m.cfg.Shell, Args: m.cfg.ShellArgs, Dir: cwd, Env: shellEnv(m.cfg.Env),
		Rows: DefaultRows, Cols: DefaultCols,
	})
	if err != nil {
		return nil, err
	}
	t := newTerminal(m, req.Session, cwd, p, DefaultRows, DefaultCols)
	t.previousHost = m.hooks.Started(ctx, t.Info())
	m.cfg.Log.InfoContext(ctx, "terminal started", "session_id", req.Session, "pid", p.Pid(), "cwd", cwd)
	return t, nil
}

// abandon ends a terminal that was started but never published (the host
// began shutting down meanwhile).
func (m *Manager) abandon(t *Terminal) {
	_ = t.pty.Hangup(m.cfg.KillGrace) // the shell is not reaped yet: its pid is safe
	t.pty.Reap()
	_ = t.pty.Close()
	m.hooks.Ended(t.Info())
}

func shellEnv(base []string) []string {
	env := slices.DeleteFunc(slices.Clone(base), func(kv string) bool { return strings.HasPrefix(kv, "TERM=") })
	return append(env, "TERM=xterm-256color")
}

// remove frees t's session slot.
func (m *Manager) remove(t *Terminal) {
	m.mu.Lock()
	if m.terms[t.session] == t {
		delete(m.terms, t.session)
	}
	m.mu.Unlock()
}

// Get returns the session's terminal, or nil.
func (m *Manager) Get(session string) *Terminal {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.terms[session]
}

// List describes every terminal, oldest first.
func (m *Manager) List() []Info {
	m.mu.Lock()
	terms := make([]*Terminal, 0, len(m.terms))
	for _, t := range m.terms {
		terms = append(terms, t)
	}
	m.mu.Unlock()
	out := make([]Info, 0, len(terms))
	for _, t := range terms {
		out = append(out, t.Info())
	}
	slices.SortFunc(out, func(a, b Info) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return strings.Compare(a.Session, b.Session)
	})
	return out
}

// Len is the number of terminals.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.terms)
}

// Kill ends the session's terminal and waits until it has ended, returning
// its exit code; ErrNotFound when the session has none here.
func (m *Manager) Kill(ctx context.Context, session string) (int, error) {
	t := m.Get(session)
	if t == nil {
		return 0, ErrNotFound
	}
	t.Kill()
	if err := wait(ctx, t.gone); err != nil {
		return 0, err
	}
	return t.ExitCode(), nil
}

// Close refuses new terminals, ends every terminal (hang-up, then SIGKILL
// after the kill grace) and waits for them until ctx ends.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	terms := make([]*Terminal, 0, len(m.terms))
	for _, t := range m.terms {
		terms = append(terms, t)
	}
	m.mu.Unlock()
	for _, t := range terms {
		t.Kill()
	}
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errors.New("terminals did not end before the shutdown deadline")
	}
}
