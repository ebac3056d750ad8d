package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// Defaults of Config's durations.
const (
	DefaultControlTimeout = 5 * time.Second
	DefaultKillDelay      = 5 * time.Second
	DefaultCloseGrace     = 5 * time.Second
	DefaultWriteTimeout   = 30 * time.Second
)

// DefaultDenyMessage is told to the model when a deny carries no message.
const DefaultDenyMessage = "The user refused this tool use."

// Config configures a Provider.
type Config struct {
	agent.Options
	// ExtraArgs are appended to the CLI's argv (e.g. "--setting-sources=").
	ExtraArgs []string
	// ControlTimeout bounds the wait for an acknowledgment of interrupt and
	// set_permission_mode; past it, the interrupt is forced and the mode
	// change reported next_turn. Default 5 s.
	ControlTimeout time.Duration
	// KillDelay is the time between SIGINT and SIGKILL when an interrupt
	// is forced. Default 5 s.
	KillDelay time.Duration
	// CloseGrace is how long Close (and a respawn) wait for the process to
	// exit after closing its stdin before killing its group. Default 5 s.
	CloseGrace time.Duration
	// WriteTimeout bounds one write to the CLI's stdin. Default 30 s.
	WriteTimeout time.Duration
	// Geteuid reports the effective user id (IS_SANDBOX for root);
	// nil means os.Geteuid.
	Geteuid func() int
}

// Provider runs one chat session's Claude Code CLI. Create it with New.
type Provider struct {
	cfg    Config
	log    *slog.Logger
	events *agent.Stream

	opMu sync.Mutex // serialises spawn, respawn and Close

	mu        sync.Mutex
	proc      *process // the live process, or nil
	sessionID string   // the CLI's session id, for --resume
	// fork: sessionID is the parent's (a forked chat session's first
	// launch): resume it with --fork-session, until the CLI reports the
	// new session's id.
	fork bool
	mode string // the session's permission mode: the last set or reported
	// pendingMode is a mode change the live process did not take
	// (next_turn): the next turn on an idle process relaunches it in it.
	pendingMode string
	lastTotal   float64 // total_cost_usd of the last result, and whether there was one
	haveTotal   bool
	closed      bool
}

var _ agent.Provider = (*Provider)(nil)

// Capabilities of the agent-sdk provider.
var Capabilities = agent.Caps{LiveControls: true, Images: true, Resume: true}

// New returns a Provider with no process yet; Start or Send launches it.
func New(cfg Config) *Provider {
	if cfg.ControlTimeout <= 0 {
		cfg.ControlTimeout = DefaultControlTimeout
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
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Provider{
		cfg:       cfg,
		log:       log.With("provider", Name),
		events:    agent.NewStream(),
		sessionID: cfg.Resume,
		fork:      cfg.Fork && cfg.Resume != "",
		mode:      cfg.PermissionMode,
	}
}

// Name implements agent.Provider.
func (p *Provider) Name() string { return Name }

// Caps implements agent.Provider.
func (p *Provider) Caps() agent.Caps { return Capabilities }

// Events implements agent.Provider.
func (p *Provider) Events() *agent.Stream { return p.events }

// SessionID implements agent.Provider.
func (p *Provider) SessionID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessionID
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

// PermissionMode is the session's permission mode: the last one set, or
// the one the agent last reported switching to.
func (p *Provider) PermissionMode() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pendingMode != "" {
		return p.pendingMode
	}
	return p.mode
}

func (p *Provider) euid() int {
	if p.cfg.Geteuid != nil {
		return p.cfg.Geteuid()
	}
	return os.Geteuid()
}

// Start implements agent.Provider: it launches the CLI if none is running
// and waits for its answer to initialize.
func (p *Provider) Start(ctx context.Context) error {
	p.opMu.Lock()
	pr, err := p.ensure(ctx, false)
	p.opMu.Unlock()
	if err != nil {
		return err
	}
	select {
	case <-pr.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	pr.mu.Lock()
	initErr, exited := pr.initErr, pr.exited
	pr.mu.Unlock()
	if initErr != nil {
		return fmt.Errorf("start %s: %w", Name, initErr)
	}
	if exited {
		<-pr.done
		pr.mu.Lock()
		reason := pr.exit.Reason
		pr.mu.Unlock()
		return fmt.Errorf("start %s: %w: %s", Name, agent.ErrProcessExited, reason)
	}
	return nil
}

// ensure returns the live process, launching one if there is none. For a
// turn, an idle process that did not take a mode change (the next_turn
// path of SetPermissionMode) is first stopped and relaunched in the new
// mode, resuming the session. The caller holds opMu.
func (p *Provider) ensure(ctx context.Context, forTurn bool) (*process, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, agent.ErrClosed
	}
	pr, pending := p.proc, p.pendingMode
	p.mu.Unlock()
	if pr != nil && forTurn && pending != "" && pr.currentMode() != pending && !pr.busy() && !pr.gone() {
		p.log.InfoContext(ctx, "respawning agent for permission mode", "pid", pr.pid, "from", pr.currentMode(), "to", pending)
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
	launch := Launch{
		Model: p.cfg.Model, PermissionMode: p.mode, Resume: p.sessionID, ForkSession: p.fork,
		ExtraArgs: p.cfg.ExtraArgs,
	}
	p.mu.Unlock()
	pr, err := spawn(ctx, p, p.cfg.Executable, launch)
	if err != nil {
		return nil, err
	}
	if launch.Resume != "" {
		// A conversation the CLI no longer has (its files lost, another
		// machine, a process killed before it saved its first turn)
		// would fail every later turn the same way: start a new one,
		// and say that the agent's memory of the session is gone.
		if why := pr.refusedResume(ctx, p.cfg.ControlTimeout); why != "" {
			p.log.WarnContext(ctx, "the agent cannot resume its conversation: starting a new one", "resume", launch.Resume, "reason", why)
			p.mu.Lock()
			p.sessionID, p.fork = "", false
			p.mu.Unlock()
			p.events.Push(agent.ResumeLost{SessionID: launch.Resume, Reason: why})
			launch.Resume, launch.ForkSession = "", false
			if pr, err = spawn(ctx, p, p.cfg.Executable, launch); err != nil {
				return nil, err
			}
		}
	}
	p.mu.Lock()
	p.proc = pr
	p.mu.Unlock()
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

func (p *Provider) noteSessionID(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fork && id != p.sessionID {
		p.fork = false // the fork has its own session now
	}
	p.sessionID = id
}

// noteCost sets the turn's own cost when the CLI did not report it
// (model_usage_since_last_result is missing before 2.1.330): the growth of
// total_cost_usd, which is cumulative over the session, resumed processes
// included.
func (p *Provider) noteCost(t *agent.TurnEnded, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !known && p.haveTotal && t.TotalCostUSD >= p.lastTotal {
		t.CostUSD = t.TotalCostUSD - p.lastTotal
	}
	p.lastTotal, p.haveTotal = t.TotalCostUSD, true
}

// noteMode records a mode the agent reported being in.
func (p *Provider) noteMode(mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = mode
	if p.pendingMode == mode {
		p.pendingMode = ""
	}
}

func (p *Provider) current() *process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proc
}

// userMessage is the stdin line of a user turn, as the TypeScript SDK
// writes it (§3.1).
type userMessage struct {
	Type            string      `json:"type"`
	SessionID       string      `json:"session_id"`
	Message         userContent `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
}

type userContent struct {
	Role    string         `json:"role"`
	Content []contentBlock `json:"content"`
}

type contentBlock struct {
	Type   string       `json:"type"`
	Text   string       `json:"text,omitempty"`
	Source *imageSource `json:"source,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

func buildUserMessage(t agent.Turn) (userMessage, error) {
	if t.Text == "" && len(t.Images) == 0 {
		return userMessage{}, fmt.Errorf("empty turn: %w", agent.ErrInvalidInput)
	}
	blocks := make([]contentBlock, 0, len(t.Images)+1)
	for i, img := range t.Images {
		if img.MediaType == "" || img.Data == "" {
			return userMessage{}, fmt.Errorf("image %d lacks media type or data: %w", i, agent.ErrInvalidInput)
		}
		blocks = append(blocks, contentBlock{Type: "image", Source: &imageSource{Type: "base64", MediaType: img.MediaType, Data: img.Data}})
	}
	if t.Text != "" {
		blocks = append(blocks, contentBlock{Type: "text", Text: t.Text})
	}
	return userMessage{Type: "user", Message: userContent{Role: "user", Content: blocks}}, nil
}

// Send implements agent.Provider.
func (p *Provider) Send(ctx context.Context, t agent.Turn) error {
	msg, err := buildUserMessage(t)
	if err != nil {
		return err
	}
	p.opMu.Lock()
	defer p.opMu.Unlock()
	pr, err := p.ensure(ctx, true)
	if err != nil {
		return err
	}
	queued := pr.beginTurn()
	p.events.Push(agent.TurnStarted{Queued: queued})
	if err := pr.writeJSON(ctx, msg); err != nil {
		pr.cancelTurn()
		return fmt.Errorf("send turn: %w", pr.exitError(err))
	}
	return nil
}

// Interrupt implements agent.Provider: the interrupt control request, and
// if it is not acknowledged within ControlTimeout, SIGINT to the process
// group and SIGKILL KillDelay later.
func (p *Provider) Interrupt(ctx context.Context) (agent.InterruptOutcome, error) {
	pr := p.current()
	if pr == nil || !pr.busy() {
		return agent.InterruptIdle, nil
	}
	resp, err := pr.control(ctx, "interrupt", map[string]any{"subtype": "interrupt"}, p.cfg.ControlTimeout)
	if err == nil && resp.Subtype == "success" {
		return agent.InterruptAcknowledged, nil
	}
	if ctx.Err() != nil {
		return "", fmt.Errorf("interrupt: %w", ctx.Err())
	}
	if errors.Is(err, agent.ErrProcessExited) {
		return agent.InterruptForced, nil // it is gone already
	}
	p.log.WarnContext(ctx, "interrupt not acknowledged; signalling process group", "pid", pr.pid, "err", err, "error", resp.Error)
	pr.interruptHard()
	return agent.InterruptForced, nil
}

// SetPermissionMode implements agent.Provider. The change is live when the
// running process acknowledges set_permission_mode within ControlTimeout.
// Otherwise (refused, timed out, no live process, or a process launched in
// bypassPermissions, which has no approval gate to return to) it is
// next_turn: the next Send that finds the process idle relaunches it in the
// new mode with --resume, continuing the session. (While a turn runs, turns
// keep going to the old process.)
func (p *Provider) SetPermissionMode(ctx context.Context, mode string) (agent.Applied, error) {
	if !ValidMode(mode) {
		return "", fmt.Errorf("set permission mode %q: %w", mode, agent.ErrInvalidPermissionMode)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return "", agent.ErrClosed
	}
	pr := p.proc
	if pr == nil || pr.gone() {
		// The next launch uses it.
		p.mode, p.pendingMode = mode, ""
		p.mu.Unlock()
		return agent.AppliedNextTurn, nil
	}
	p.mu.Unlock()
	if pr.launch.PermissionMode == ModeBypassPermissions && pr.currentMode() != mode {
		// No approval gate to switch back to: relaunch (decision table).
		p.setPending(mode)
		return agent.AppliedNextTurn, nil
	}
	resp, err := pr.control(ctx, "set_permission_mode", map[string]any{"subtype": "set_permission_mode", "mode": mode}, p.cfg.ControlTimeout)
	if err == nil && resp.Subtype == "success" {
		pr.setMode(mode)
		p.noteMode(mode)
		return agent.AppliedLive, nil
	}
	p.log.InfoContext(ctx, "permission mode not applied live", "pid", pr.pid, "mode", mode, "err", err, "error", resp.Error, "error_code", resp.ErrorCode)
	p.setPending(mode)
	return agent.AppliedNextTurn, nil
}

func (p *Provider) setPending(mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pendingMode = mode
}

// permissionAnswer is the "response" of our control_response to
// can_use_tool (§5).
type permissionAnswer struct {
	Behavior           agent.Behavior    `json:"behavior"`
	UpdatedInput       json.RawMessage   `json:"updatedInput,omitempty"`
	UpdatedPermissions []json.RawMessage `json:"updatedPermissions,omitempty"`
	Message            string            `json:"message,omitempty"`
	Interrupt          bool              `json:"interrupt,omitempty"`
	ToolUseID          string            `json:"toolUseID,omitempty"`
}

// RespondPermission implements agent.Provider. Allow always carries
// updatedInput (the original input unless replaced) and, with a suggestion
// index, that suggestion as the single updatedPermissions entry.
func (p *Provider) RespondPermission(ctx context.Context, requestID string, d agent.PermissionDecision) error {
	pr := p.current()
	if pr == nil {
		return agent.ErrPermissionExpired
	}
	var ans permissionAnswer
	req, err := pr.takePerm(requestID, func(req agent.PermissionRequest) error {
		var err error
		ans, err = permissionResponse(req, d)
		return err
	})
	if err != nil {
		return fmt.Errorf("answer permission request %s: %w", requestID, err)
	}
	msg := map[string]any{
		"type": "control_response",
		"response": map[string]any{
			"subtype":    "success",
			"request_id": req.RequestID,
			"response":   ans,
		},
	}
	if err := pr.writeJSON(ctx, msg); err != nil {
		return fmt.Errorf("answer permission request %s: %w", requestID, err)
	}
	return nil
}

func permissionResponse(req agent.PermissionRequest, d agent.PermissionDecision) (permissionAnswer, error) {
	ans := permissionAnswer{Behavior: d.Behavior, ToolUseID: req.ToolUseID}
	switch d.Behavior {
	case agent.Allow:
		ans.UpdatedInput = req.Input
		if d.UpdatedInput != nil {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(d.UpdatedInput, &obj); err != nil || obj == nil {
				return ans, fmt.Errorf("updated input is not a JSON object: %w", agent.ErrInvalidInput)
			}
			ans.UpdatedInput = d.UpdatedInput
		}
		if i := d.SuggestionIndex; i != nil {
			if *i < 0 || *i >= len(req.Suggestions) {
				return ans, fmt.Errorf("suggestion index %d out of %d: %w", *i, len(req.Suggestions), agent.ErrInvalidInput)
			}
			ans.UpdatedPermissions = []json.RawMessage{req.Suggestions[*i]}
		}
	case agent.Deny:
		ans.Message = d.Message
		if ans.Message == "" {
			ans.Message = DefaultDenyMessage
		}
		ans.Interrupt = d.Interrupt
	default:
		return ans, fmt.Errorf("behavior %q: %w", d.Behavior, agent.ErrInvalidInput)
	}
	return ans, nil
}

// Close implements agent.Provider: stdin is closed, and the process group
// killed if the CLI has not exited within CloseGrace. Events is closed
// after the final ProcessExited.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.opMu.Lock()
	defer p.opMu.Unlock()
	if pr := p.current(); pr != nil {
		pr.stop(agent.ExitClosed, p.cfg.CloseGrace)
	}
	p.events.Close()
	return nil
}
