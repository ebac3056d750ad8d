package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
)

// Provider is the agent of one chat session: it owns at most one agent
// process at a time, keeps it warm between turns and respawns it, continuing
// the same conversation, when it has died or must be relaunched.
//
// Everything the agent reports arrives on Events. Methods may be called from
// several goroutines; Close ends the process and, once the last events are
// queued, the stream.
type Provider interface {
	// Name is the provider's name in the API, e.g. "agent-sdk".
	Name() string
	// Caps reports what the provider can do.
	Caps() Caps
	// Events is the stream of everything the provider reports. It is the
	// same stream for the provider's whole life, across process restarts.
	Events() *Stream
	// Start makes sure a warm process is running, starting one if needed,
	// and waits until it is ready for a turn (or ctx ends).
	Start(ctx context.Context) error
	// Send starts a turn with a user message, starting (or respawning) the
	// process first if needed. It returns once the message is written; the
	// turn's output arrives on Events and ends with TurnEnded. A message sent
	// while a turn runs is queued by the agent.
	Send(ctx context.Context, turn Turn) error
	// Interrupt stops the running turn. See InterruptOutcome.
	Interrupt(ctx context.Context) (InterruptOutcome, error)
	// SetPermissionMode changes the permission mode and reports whether it
	// took effect in the running process (AppliedLive) or will when the
	// process is respawned for the next turn (AppliedNextTurn).
	SetPermissionMode(ctx context.Context, mode string) (Applied, error)
	// RespondPermission answers a pending PermissionRequest. It returns
	// ErrPermissionExpired when the request is no longer pending (answered,
	// cancelled by the agent, or its process is gone).
	RespondPermission(ctx context.Context, requestID string, d PermissionDecision) error
	// SessionID is the agent's own conversation id ("" until the agent has
	// reported one). Store it: Options.Resume continues the conversation in a
	// later Provider.
	SessionID() string
	// Close ends the process (its whole process group) and closes Events
	// after the final ProcessExited. It is safe to call more than once.
	Close() error
}

// Options are the provider-neutral settings of one session's agent.
type Options struct {
	// Executable is the agent program: a path, or a name looked up on PATH.
	// Empty means the provider's default name ("claude").
	Executable string
	// Cwd is the working directory of the agent process.
	Cwd string
	// Model is the model to ask for; empty leaves the agent's default.
	Model string
	// PermissionMode is the initial permission mode; empty means "default".
	PermissionMode string
	// Resume is a conversation id from an earlier SessionID to continue.
	Resume string
	// Fork asks for Resume to be continued as a new conversation (a fork
	// of it) rather than appended to; the new id is reported as usual.
	// Set for the first launch of a forked session.
	Fork bool
	// Env holds extra KEY=VALUE entries added to the server's environment.
	Env []string
	// Log receives the provider's diagnostics; nil discards them.
	Log *slog.Logger
}

// Caps are the capabilities of a provider, served in the provider catalog
// and in the /chat connected frame as provider_caps.
type Caps struct {
	// LiveControls: interrupt and permission-mode changes act on the running
	// process through the agent's control protocol, without a restart.
	LiveControls bool `json:"live_controls"`
	// Images: user turns may carry image content blocks.
	Images bool `json:"images"`
	// Resume: a dead process is respawned continuing the same conversation.
	Resume bool `json:"resume"`
}

// Turn is one user message.
type Turn struct {
	// Text is the prompt. Slash commands (e.g. "/compact") are plain text.
	Text string
	// Images are sent as image content blocks before the text.
	Images []Image
}

// Image is a base64-encoded image, the /chat `images` item's `source`.
type Image struct {
	MediaType string // e.g. "image/png"
	Data      string // base64, as received from the client
}

// Behavior is the answer to a permission request.
type Behavior string

// The two answers to a permission request.
const (
	Allow Behavior = "allow"
	Deny  Behavior = "deny"
)

// PermissionDecision answers a PermissionRequest.
type PermissionDecision struct {
	Behavior Behavior
	// UpdatedInput replaces the tool's input on allow; nil sends the
	// original input back unchanged.
	UpdatedInput json.RawMessage
	// SuggestionIndex, on allow, picks one of the request's Suggestions; it
	// is sent back as the single entry of updatedPermissions.
	SuggestionIndex *int
	// Message is the reason given to the model on deny; empty uses a
	// default.
	Message string
	// Interrupt, on deny, also stops the turn.
	Interrupt bool
}

// Applied tells when a permission-mode change takes effect.
type Applied string

// The two answers of SetPermissionMode.
const (
	AppliedLive     Applied = "live"
	AppliedNextTurn Applied = "next_turn"
)

// InterruptOutcome is what Interrupt did.
type InterruptOutcome string

const (
	// InterruptIdle means no turn was running; nothing was sent.
	InterruptIdle InterruptOutcome = "idle"
	// InterruptAcknowledged means the agent acknowledged the interrupt; the
	// aborted turn still ends with TurnEnded and the process stays warm.
	InterruptAcknowledged InterruptOutcome = "acknowledged"
	// InterruptForced means the agent did not acknowledge in time (or the
	// provider has no live controls), so the process group got SIGINT and,
	// if still alive after the kill delay, SIGKILL. ProcessExited follows
	// and the next turn respawns the process.
	InterruptForced InterruptOutcome = "forced"
)

// Errors that callers tell apart with errors.Is.
var (
	// ErrClosed: the provider was closed.
	ErrClosed = errors.New("agent provider closed")
	// ErrPermissionExpired: the permission request is no longer pending.
	ErrPermissionExpired = errors.New("permission request expired")
	// ErrProcessExited: the agent process exited before answering.
	ErrProcessExited = errors.New("agent process exited")
	// ErrInvalidPermissionMode: the mode is not one the provider knows.
	ErrInvalidPermissionMode = errors.New("invalid permission mode")
	// ErrInvalidInput: a turn or decision the provider cannot send.
	ErrInvalidInput = errors.New("invalid input")
)

// MissingExecutableError reports that a provider's program cannot be run:
// not found, or not executable. Its message names the program and how to
// set its path, for the session's error frame.
type MissingExecutableError struct {
	Provider string // e.g. "agent-sdk"
	Program  string // what was looked up, e.g. "claude" or "/opt/claude"
	PathName string // the {name} of PUT /api/app/provider-path/{name}
	Err      error
}

func (e *MissingExecutableError) Error() string {
	return fmt.Sprintf("%s: cannot run %q (%v); set its path with PUT /api/app/provider-path/%s",
		e.Provider, e.Program, e.Err, e.PathName)
}

func (e *MissingExecutableError) Unwrap() error { return e.Err }
