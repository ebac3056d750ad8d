package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// Defaults of Config's durations.
const (
	DefaultRequestTimeout = 30 * time.Second
	DefaultKillDelay      = 5 * time.Second
	DefaultCloseGrace     = 5 * time.Second
	DefaultWriteTimeout   = 30 * time.Second
)

// Config configures a Provider.
type Config struct {
	agent.Options
	// DefaultPolicy replaces the approval policy and sandbox of the
	// default permission mode where set (see PolicyFor).
	DefaultPolicy Policy
	// ExtraArgs are appended to `app-server` (e.g. "-c", "key=value").
	ExtraArgs []string
	// Prices prices the turns; nil means DefaultPrices.
	Prices Prices
	// RequestTimeout bounds the wait for the answer to one of our
	// requests (initialize, thread/*, turn/start). Default 30 s.
	RequestTimeout time.Duration
	// KillDelay is the time between SIGINT and SIGKILL on Interrupt.
	// Default 5 s.
	KillDelay time.Duration
	// CloseGrace is how long Close (and a respawn) wait for the process to
	// exit after closing its stdin before killing its group. Default 5 s.
	CloseGrace time.Duration
	// WriteTimeout bounds one write to the process's stdin. Default 30 s.
	WriteTimeout time.Duration
}

// Provider runs one chat session's codex app-server. Create it with New.
type Provider struct {
	cfg    Config
	log    *slog.Logger
	events *agent.Stream

	opMu sync.Mutex // serialises spawn, respawn and Close

	mu     sync.Mutex
	proc   *process
	procs  int    // processes started, numbering permission request ids
	thread string // the Codex thread id, for thread/resume
	fork   bool   // the next thread is a fork of thread
	mode   string // the mode of the next launch
	// pendingMode is a mode change the live process did not take: the
	// next turn on an idle process relaunches it in it.
	pendingMode string
	totalCost   float64
	closed      bool
}

var _ agent.Provider = (*Provider)(nil)

// New returns a Provider with no process yet; Start or Send launches it.
func New(cfg Config) *Provider {
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.KillDelay <= 0 {
		cfg.KillDelay = DefaultKillDelay
	}
	if cfg.CloseGrace <= 0 {
		cfg.CloseGrace = DefaultCloseGrace
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.Executable == "" {
		cfg.Executable = DefaultProgram
	}
	if cfg.PermissionMode == "" {
		cfg.PermissionMode = ModeDefault
	}
	if cfg.Prices == nil {
		cfg.Prices = DefaultPrices
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Provider{
		cfg: cfg, log: log.With("provider", Name), events: agent.NewStream(),
		thread: cfg.Resume, fork: cfg.Fork && cfg.Resume != "", mode: cfg.PermissionMode,
	}
}

// Name implements agent.Provider.
func (p *Provider) Name() string { return Name }

// Caps implements agent.Provider.
func (p *Provider) Caps() agent.Caps { return Capabilities }

// Events implements agent.Provider.
func (p *Provider) Events() *agent.Stream { return p.events }

// SessionID implements agent.Provider: the Codex thread id.
func (p *Provider) SessionID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.thread
}

// PID is the live process's id, or 0.
func (p *Provider) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return 0
	}
	return p.proc.pid
}

// PermissionMode is the mode of the next launch (or the live one).
func (p *Provider) PermissionMode() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pendingMode != "" {
		return p.pendingMode
	}
	return p.mode
}

func (p *Provider) noteThread(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.thread = id
}

func (p *Provider) forked() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fork = false
}

func (p *Provider) addCost(c float64) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.totalCost += c
	return p.totalCost
}

// Start implements agent.Provider: it launches the app-server if none runs
// and waits until its thread is ready.
func (p *Provider) Start(ctx context.Context) error {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	_, err := p.ensure(ctx, false)
	return err
}

// ensure returns the live process, launching one (handshake and thread
// included) if there is none. For a turn, an idle process that did not take
// a mode change is first stopped and relaunched in the new mode, resuming
// the thread. The caller holds opMu.
func (p *Provider) ensure(ctx context.Context, forTurn bool) (*process, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, agent.ErrClosed
	}
	pr, pending := p.proc, p.pendingMode
	p.mu.Unlock()
	if pr != nil && forTurn && pending != "" && pr.launch.Mode != pending && !pr.busy() && !pr.gone() {
		p.log.InfoContext(ctx, "respawning agent for permission mode", "pid", pr.pid, "from", pr.launch.Mode, "to", pending)
		pr.stop(agent.ExitRespawn, p.cfg.CloseGrace)
		pr = nil
	}
	if pr != nil && !pr.gone() {
		return pr, nil
	}
	p.mu.Lock()
	if p.pendingMode != "" {
		p.mode, p.pendingMode = p.pendingMode, ""
	}
	p.procs++
	l := launch{
		Program: p.cfg.Executable, Args: Args(p.cfg.ExtraArgs), Mode: p.mode,
		Policy: PolicyFor(p.mode, p.cfg.DefaultPolicy), Model: p.cfg.Model,
		Resume: p.thread, Fork: p.fork,
	}
	num := p.procs
	p.mu.Unlock()
	pr, err := spawn(ctx, p, num, l)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.proc = pr
	}
	p.mu.Unlock()
	if closed { // Close ran while it started: it did not see this process
		pr.stop(agent.ExitClosed, 0)
		return nil, agent.ErrClosed
	}
	if err := pr.handshake(ctx); err != nil {
		pr.stop(agent.ExitCrashed, 0)
		return nil, fmt.Errorf("start %s: %w", Name, err)
	}
	return pr, nil
}

// processGone is called by a process once it has exited and reported it.
func (p *Provider) processGone(pr *process) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == pr {
		p.proc = nil
	}
}

func (p *Provider) current() *process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proc
}

// Input builds turn/start's input items: the images as data URLs, then
// the text.
func Input(t agent.Turn) ([]map[string]any, error) {
	if strings.TrimSpace(t.Text) == "" && len(t.Images) == 0 {
		return nil, fmt.Errorf("empty turn: %w", agent.ErrInvalidInput)
	}
	items := make([]map[string]any, 0, len(t.Images)+1)
	for i, img := range t.Images {
		if img.MediaType == "" || img.Data == "" {
			return nil, fmt.Errorf("image %d lacks media type or data: %w", i, agent.ErrInvalidInput)
		}
		items = append(items, map[string]any{"type": "image", "url": "data:" + img.MediaType + ";base64," + img.Data})
	}
	if t.Text != "" {
		items = append(items, map[string]any{"type": "text", "text": t.Text, "text_elements": []any{}})
	}
	return items, nil
}

// Send implements agent.Provider. A turn sent while another runs is queued
// here (TurnStarted{Queued}) and started when the running one completes.
// Send returns once Codex has accepted the turn; a refusal (a JSON-RPC
// error) is returned and the turn did not start.
func (p *Provider) Send(ctx context.Context, t agent.Turn) error {
	input, err := Input(t)
	if err != nil {
		return err
	}
	p.opMu.Lock()
	pr, err := p.ensure(ctx, true)
	if err != nil {
		p.opMu.Unlock()
		return err
	}
	ts := newTurn(input)
	pr.mu.Lock()
	if pr.cur != nil || len(pr.queue) > 0 {
		ts.announced = true
		pr.queue = append(pr.queue, ts)
		pr.mu.Unlock()
		p.opMu.Unlock()
		p.events.Push(agent.TurnStarted{Queued: true})
		return nil
	}
	pr.cur = ts
	pr.mu.Unlock()
	p.opMu.Unlock()
	if err := pr.startTurn(ctx, ts); err != nil {
		if !isRPC(err) {
			pr.mu.Lock()
			if pr.cur == ts && !ts.announced {
				pr.cur = nil
			}
			pr.mu.Unlock()
		}
		return fmt.Errorf("send turn: %w", err)
	}
	return nil
}

// Interrupt implements agent.Provider the line-protocol way: SIGINT to the
// process group, SIGKILL KillDelay later. The cut turn ends with a result
// (interrupted); the next turn respawns the process and resumes the thread.
func (p *Provider) Interrupt(ctx context.Context) (agent.InterruptOutcome, error) {
	pr := p.current()
	if pr == nil || pr.gone() || !pr.busy() {
		return agent.InterruptIdle, nil
	}
	p.log.InfoContext(ctx, "interrupting agent process group", "pid", pr.pid)
	pr.interruptHard()
	return agent.InterruptForced, nil
}

// SetPermissionMode implements agent.Provider: always next_turn. Without a
// process the next launch uses the mode; with one, the next turn that finds
// it idle relaunches it in the mode, resuming the thread.
func (p *Provider) SetPermissionMode(_ context.Context, mode string) (agent.Applied, error) {
	if !ValidMode(mode) {
		return "", fmt.Errorf("set permission mode %q: %w", mode, agent.ErrInvalidPermissionMode)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return "", agent.ErrClosed
	}
	pr := p.proc
	switch {
	case pr == nil || pr.gone():
		p.mode, p.pendingMode = mode, ""
	case pr.launch.Mode == mode:
		p.pendingMode = ""
	default:
		p.pendingMode = mode
	}
	return agent.AppliedNextTurn, nil
}

// RespondPermission implements agent.Provider. Allow is "accept", or the
// decision of the picked suggestion ("acceptForSession": always allow for
// this session; "acceptWithExecpolicyAmendment"); deny is "decline", or
// "cancel" (which also stops the turn) with Interrupt. Codex cannot run a
// changed input: an UpdatedInput other than the request's (or a bad
// suggestion index) declines the request and returns ErrInvalidInput.
func (p *Provider) RespondPermission(ctx context.Context, requestID string, d agent.PermissionDecision) error {
	pr := p.current()
	if pr == nil {
		return agent.ErrPermissionExpired
	}
	pr.mu.Lock()
	e := pr.perms[requestID]
	pr.mu.Unlock()
	if e == nil {
		return agent.ErrPermissionExpired
	}
	decision, invalid := decide(e, d)
	if invalid != nil {
		// The chat layer retires a request whose answer failed: decline it
		// rather than leave the turn waiting for an answer nobody can give.
		decision = "decline"
	}
	if pr.takePerm(requestID) == nil {
		return agent.ErrPermissionExpired
	}
	msg := map[string]any{"id": e.rawID, "result": map[string]any{"decision": decision}}
	if err := pr.writeJSON(ctx, msg); err != nil {
		return fmt.Errorf("answer permission request %s: %w", requestID, err)
	}
	if invalid != nil {
		return fmt.Errorf("answer permission request %s (declined): %w", requestID, invalid)
	}
	return nil
}

func decide(e *permEntry, d agent.PermissionDecision) (any, error) {
	switch d.Behavior {
	case agent.Allow:
		if d.UpdatedInput != nil && !sameJSON(d.UpdatedInput, e.req.Input) {
			return nil, fmt.Errorf("codex cannot run a changed tool input: %w", agent.ErrInvalidInput)
		}
		if i := d.SuggestionIndex; i != nil {
			if *i < 0 || *i >= len(e.always) {
				return nil, fmt.Errorf("suggestion index %d out of %d: %w", *i, len(e.always), agent.ErrInvalidInput)
			}
			return e.always[*i], nil
		}
		return "accept", nil
	case agent.Deny:
		if d.Interrupt {
			return "cancel", nil
		}
		return "decline", nil
	}
	return nil, fmt.Errorf("behavior %q: %w", d.Behavior, agent.ErrInvalidInput)
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// Close implements agent.Provider: stdin is closed, and the process group
// killed if the app-server has not exited within CloseGrace. Events is
// closed after the final ProcessExited.
//
// The process is ended before opMu is taken: a launch holds opMu while it
// waits for the handshake's answers, which a hung process never sends, and
// Close must not wait RequestTimeout for that.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	pr := p.proc
	p.mu.Unlock()
	if pr != nil {
		pr.stop(agent.ExitClosed, p.cfg.CloseGrace)
	}
	p.opMu.Lock()
	defer p.opMu.Unlock()
	if pr := p.current(); pr != nil {
		pr.stop(agent.ExitClosed, p.cfg.CloseGrace)
	}
	p.events.Close()
	return nil
}
