package agent

import "encoding/json"

// Kind names an event type.
type Kind string

// The kinds of Event.
const (
	KindMessage           Kind = "message"
	KindControl           Kind = "control"
	KindRawOutput         Kind = "raw_output"
	KindStderr            Kind = "stderr"
	KindPermissionRequest Kind = "permission_request"
	KindPermissionRetired Kind = "permission_retired"
	KindCompaction        Kind = "compaction"
	KindModeChanged       Kind = "mode_changed"
	KindTurnStarted       Kind = "turn_started"
	KindTurnEnded         Kind = "turn_ended"
	KindProcessStarted    Kind = "process_started"
	KindProcessExited     Kind = "process_exited"
	KindResumeLost        Kind = "resume_lost"
)

// Event is one thing a provider reports; switch on the concrete type.
//
// One agent line can give several events: the pass-through Message first,
// then what the provider derived from it (a result line gives Message, then
// TurnEnded).
type Event interface {
	Kind() Kind
}

// The agent-shaped message kinds of Message.Type that /chat forwards as
// agent_message. Other kinds (e.g. "stream_event", "keep_alive",
// "rate_limit_event", or ones newer agents add) are passed through as well.
const (
	TypeSystem    = "system"
	TypeAssistant = "assistant"
	TypeUser      = "user"
	TypeResult    = "result"
)

// Message is an agent message (any JSON object line that is not part of the
// control protocol), passed through unchanged.
type Message struct {
	Type      string          `json:"type"`              // "system", "assistant", "user", "result", ...
	Subtype   string          `json:"subtype,omitempty"` // e.g. "init", "status", "compact_boundary", "success"
	SessionID string          `json:"session_id,omitempty"`
	UUID      string          `json:"uuid,omitempty"`
	Raw       json.RawMessage `json:"raw"` // the line exactly as the agent printed it
}

// Control is a control-protocol line that needs no action from the chat
// layer: a control_response (the provider has already routed it to its
// request), a control_request the provider answered itself, or a
// control_cancel_request for something that was not a permission request.
// It is reported so that no line is lost; /chat need not forward it.
type Control struct {
	Type      string          `json:"type"`              // control_response, control_request, control_cancel_request
	Subtype   string          `json:"subtype,omitempty"` // success/error, or the request's subtype
	RequestID string          `json:"request_id,omitempty"`
	Request   string          `json:"request,omitempty"` // for a response: the subtype of the request it answers, when known
	Raw       json.RawMessage `json:"raw"`
}

// RawOutput is a stdout line that is not a JSON object, e.g. debug output.
type RawOutput struct {
	Line string `json:"line"`
}

// Stderr is one line the agent wrote to stderr.
type Stderr struct {
	Line string `json:"line"`
}

// PermissionRequest asks whether the agent may use a tool. The turn waits
// until RespondPermission answers it, or until PermissionRetired.
type PermissionRequest struct {
	RequestID string          `json:"request_id"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	// Suggestions are the agent's suggested permission updates
	// (always-allow rules, a mode switch, directories), passed through as
	// the agent sent them; PermissionDecision.SuggestionIndex picks one.
	Suggestions    []json.RawMessage `json:"suggestions,omitempty"`
	ToolUseID      string            `json:"tool_use_id,omitempty"`
	Description    string            `json:"description,omitempty"`
	DecisionReason string            `json:"decision_reason,omitempty"`
	BlockedPath    string            `json:"blocked_path,omitempty"`
	Raw            json.RawMessage   `json:"raw"` // the whole request line
}

// Reasons of PermissionRetired.
const (
	RetiredCancelled     = "cancelled"      // the agent withdrew it (e.g. after an interrupt)
	RetiredProcessExited = "process_exited" // its process is gone
)

// PermissionRetired says a PermissionRequest can no longer be answered.
type PermissionRetired struct {
	RequestID string `json:"request_id"`
	Reason    string `json:"reason"`
}

// Phases of Compaction.
const (
	CompactionStarted  = "started"  // compaction is running
	CompactionFinished = "finished" // it ended; Result says how
	CompactionBoundary = "boundary" // the conversation was cut here; token counts set
)

// Compaction reports progress of a conversation compaction (manual through
// "/compact", or automatic).
type Compaction struct {
	Phase      string `json:"phase"`
	Result     string `json:"result,omitempty"`  // finished: e.g. "success"
	Trigger    string `json:"trigger,omitempty"` // boundary: "manual" or "auto"
	PreTokens  int64  `json:"pre_tokens,omitempty"`
	PostTokens int64  `json:"post_tokens,omitempty"`
}

// ModeChanged reports that the agent itself switched permission mode, e.g.
// after an accepted "setMode" suggestion or a live SetPermissionMode.
type ModeChanged struct {
	Mode string `json:"mode"`
}

// TurnStarted is reported when a user message is written to the agent.
type TurnStarted struct {
	// Queued: another turn was still running, so the agent queues this one.
	Queued bool `json:"queued,omitempty"`
}

// Usage counts the tokens of one turn.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// TurnEnded is the end of a turn, from the agent's result message: exactly
// one per turn, also for an interrupted or failed one.
type TurnEnded struct {
	SessionID string `json:"session_id,omitempty"`
	Subtype   string `json:"subtype"` // "success", "error_during_execution", ...
	IsError   bool   `json:"is_error"`
	// Interrupted: the turn was aborted by an interrupt.
	Interrupted    bool     `json:"interrupted,omitempty"`
	Result         string   `json:"result,omitempty"`
	Errors         []string `json:"errors,omitempty"`
	TerminalReason string   `json:"terminal_reason,omitempty"` // "completed", "aborted_streaming", "api_error", ...
	StopReason     string   `json:"stop_reason,omitempty"`
	APIErrorStatus int      `json:"api_error_status,omitempty"`
	// CostUSD is this turn's cost; TotalCostUSD the agent's running total
	// for the conversation, as it reported it.
	CostUSD       float64 `json:"cost_usd"`
	TotalCostUSD  float64 `json:"total_cost_usd"`
	Usage         Usage   `json:"usage"`
	DurationMS    int64   `json:"duration_ms"`
	DurationAPIMS int64   `json:"duration_api_ms"`
	NumTurns      int     `json:"num_turns"`
	Model         string  `json:"model,omitempty"`
}

// ProcessStarted is reported when an agent process has been launched.
type ProcessStarted struct {
	PID            int      `json:"pid"`
	Args           []string `json:"args"`
	Resume         string   `json:"resume,omitempty"` // the conversation it continues
	PermissionMode string   `json:"permission_mode"`
}

// Causes of ProcessExited.
const (
	ExitClosed      = "closed"      // Close ended it
	ExitRespawn     = "respawn"     // stopped to relaunch with new settings
	ExitInterrupted = "interrupted" // signalled after an unacknowledged interrupt
	ExitExited      = "exited"      // it exited by itself with status 0
	ExitCrashed     = "crashed"     // it exited by itself with an error or a signal
)

// ProcessExited is reported when the agent process has exited and all its
// output has been reported. Pending permission requests are retired first.
type ProcessExited struct {
	PID      int    `json:"pid"`
	ExitCode int    `json:"exit_code"`        // -1 when killed by a signal
	Signal   string `json:"signal,omitempty"` // e.g. "interrupt", "killed"
	Cause    string `json:"cause"`
	// Reason is a human sentence for session_ended: the exit status and,
	// for a failure, the last stderr line.
	Reason string `json:"reason"`
	// TurnRunning: a turn was cut off without its TurnEnded.
	TurnRunning bool `json:"turn_running,omitempty"`
}

// Kind implements Event.
func (Message) Kind() Kind { return KindMessage }

// Kind implements Event.
func (Control) Kind() Kind { return KindControl }

// Kind implements Event.
func (RawOutput) Kind() Kind { return KindRawOutput }

// Kind implements Event.
func (Stderr) Kind() Kind { return KindStderr }

// Kind implements Event.
func (PermissionRequest) Kind() Kind { return KindPermissionRequest }

// Kind implements Event.
func (PermissionRetired) Kind() Kind { return KindPermissionRetired }

// Kind implements Event.
func (Compaction) Kind() Kind { return KindCompaction }

// Kind implements Event.
func (ModeChanged) Kind() Kind { return KindModeChanged }

// Kind implements Event.
func (TurnStarted) Kind() Kind { return KindTurnStarted }

// Kind implements Event.
func (TurnEnded) Kind() Kind { return KindTurnEnded }

// Kind implements Event.
func (ProcessStarted) Kind() Kind { return KindProcessStarted }

// Kind implements Event.
func (ProcessExited) Kind() Kind { return KindProcessExited }

// ResumeLost says the agent could not continue its conversation (the CLI
// has no such session any more, Codex refused the thread) and a new one
// was started in its place: the agent no longer remembers the session's
// earlier messages. The turn goes on in the new conversation.
type ResumeLost struct {
	// SessionID is the conversation that could not be continued.
	SessionID string `json:"session_id"`
	// Reason is the agent's own word for it.
	Reason string `json:"reason"`
}

// Kind implements Event.
func (ResumeLost) Kind() Kind { return KindResumeLost }
