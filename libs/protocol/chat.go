package protocol

import (
	"encoding/json"
	"time"
)

// The /chat WebSocket (docs/api.md, "Chat WebSocket"): every frame the
// server sends and every message a client sends, one type each. Each has a
// Type field holding its name; chat encodes its frames from these types,
// and web/src/protocol/types.gen.ts is generated from this file.

//tygo:emit
var _ = `/** A JSON object, passed through as the agent or the client wrote it. */
export type JSONObject = { [key: string]: unknown };`

// ProviderCaps are what a provider can do (GET /api/providers, connected).
type ProviderCaps struct {
	// LiveControls: interrupt and permission-mode changes act on the
	// running process, without a restart.
	LiveControls bool `json:"live_controls"`
	// Images: prompts may carry images.
	Images bool `json:"images"`
	// Resume: a dead process is respawned continuing the conversation.
	Resume bool `json:"resume"`
}

// ImageSource is the image itself, base64 (standard alphabet).
type ImageSource struct {
	Type      string `json:"type" tstype:"'base64'"`
	MediaType string `json:"media_type" tstype:"'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp'"`
	Data      string `json:"data"`
}

// ImageBlock is an image of a prompt: the block of POST /api/upload-image
// goes into user_message's images as is.
type ImageBlock struct {
	Type   string      `json:"type" tstype:"'image'"`
	Source ImageSource `json:"source"`
}

// StoredPrompt is a user prompt as the log stores it (message_stored's
// message, a user_prompt line's payload).
type StoredPrompt struct {
	Role    string       `json:"role" tstype:"'user'"`
	Content string       `json:"content"`
	Images  []ImageBlock `json:"images,omitempty"`
}

// StoredNotice is a server notice of the log (message_stored's message,
// a notice line's payload): why a prompt got no answer (level error, with
// the prompt's line), what became of the agent's conversation, or a gap
// notice (level warning, with Gap): agent messages the log does not hold.
type StoredNotice struct {
	Role       string     `json:"role" tstype:"'notice'"`
	Level      string     `json:"level" tstype:"'error' | 'warning'"`
	Content    string     `json:"content"`
	PromptLine int64      `json:"prompt_line,omitempty"`
	Gap        *NoticeGap `json:"gap,omitempty"`
	// Cause marks the notices of a fault: NoticeServerRestarted (a turn its
	// server died during, closed by the next start: the session_ended that
	// went with it is given again to a socket whose replay holds it),
	// NoticeResumeLost (the agent could not continue its conversation and
	// started a new one). Absent on the others.
	Cause string `json:"cause,omitempty" tstype:"'server_restarted' | 'resume_lost'"`
}

// NoticeGap is what a gap notice says is missing: the lines FromLine to
// ToLine, whose frames went out but which a crash of PostgreSQL lost; or
// Messages agent messages that could not be stored at all (PostgreSQL
// unreachable for longer than chat retries) and were never sent.
type NoticeGap struct {
	FromLine int64 `json:"from_line,omitempty"`
	ToLine   int64 `json:"to_line,omitempty"`
	Messages int   `json:"messages,omitempty"`
}

// Causes of a StoredNotice; NoticeServerRestarted is a session_ended cause
// too.
const (
	NoticeServerRestarted = "server_restarted"
	NoticeResumeLost      = "resume_lost"
)

// QueuedPrompt is a prompt waiting for the running turn to end (see the
// queue frame).
type QueuedPrompt struct {
	QueueID   string       `json:"queue_id"`
	Content   string       `json:"content"`
	Images    []ImageBlock `json:"images,omitempty"`
	CreatedAt time.Time    `json:"created_at"`
}

// ConnectedFrame is the first frame of every /chat socket.
type ConnectedFrame struct {
	Type                string       `json:"type" tstype:"'connected'"`
	SessionID           string       `json:"session_id"`
	Cwd                 string       `json:"cwd"`
	Home                string       `json:"home"`
	Workspace           string       `json:"workspace"`
	IsReconnect         bool         `json:"is_reconnect"`
	AgentRunning        bool         `json:"agent_running"`
	IsCompacting        bool         `json:"is_compacting"`
	Provider            string       `json:"provider"`
	ProviderDisplayName string       `json:"provider_display_name"`
	ProviderCaps        ProviderCaps `json:"provider_caps"`
	ProviderLocked      bool         `json:"provider_locked"`
	PermissionMode      string       `json:"permission_mode"`
	// Queue is the session's prompt queue, oldest first.
	Queue []QueuedPrompt `json:"queue"`
}

// AgentMessageFrame is an agent message; Line is 0 (absent) only when it
// could not be stored.
type AgentMessageFrame struct {
	Type string          `json:"type" tstype:"'agent_message'"`
	Data json.RawMessage `json:"data" tstype:"JSONObject"`
	Line int64           `json:"line,omitempty"`
}

// MessageStoredFrame is a stored prompt or server notice of the log.
type MessageStoredFrame struct {
	Type    string          `json:"type" tstype:"'message_stored'"`
	Message json.RawMessage `json:"message" tstype:"StoredPrompt | StoredNotice"`
	Line    int64           `json:"line"`
}

// UserMessageStoredFrame acknowledges a prompt to its sender.
type UserMessageStoredFrame struct {
	Type       string `json:"type" tstype:"'user_message_stored'"`
	PromptID   string `json:"promptId"`
	IsFavorite bool   `json:"isFavorite"`
}

// UserMessageQueuedFrame acknowledges to its sender a prompt that was
// queued (a turn was running, or older prompts wait): it is in the queue
// frame, and goes when its turn comes.
type UserMessageQueuedFrame struct {
	Type    string `json:"type" tstype:"'user_message_queued'"`
	QueueID string `json:"queue_id"`
}

// RawOutputFrame is a stdout line of the agent that is not JSON.
type RawOutputFrame struct {
	Type string `json:"type" tstype:"'raw_output'"`
	Line string `json:"line"`
}

// StderrFrame is a stderr line of the agent.
type StderrFrame struct {
	Type string `json:"type" tstype:"'stderr'"`
	Line string `json:"line"`
}

// PermissionRequestFrame asks the user to allow or deny a tool call.
type PermissionRequestFrame struct {
	Type      string          `json:"type" tstype:"'permission_request'"`
	RequestID string          `json:"request_id"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input" tstype:"JSONObject"`
	// Suggestions are the agent's suggested permission updates, answered
	// by their index (suggestion_index).
	Suggestions []json.RawMessage `json:"suggestions" tstype:"unknown[]"`
	// Replay: sent again to a joining socket, not new.
	Replay bool `json:"replay,omitempty"`
}

// PermissionResolvedFrame retires a permission request everywhere.
type PermissionResolvedFrame struct {
	Type      string `json:"type" tstype:"'permission_resolved'"`
	RequestID string `json:"request_id"`
	// Behavior is "allow" or "deny", "" when the agent retired it.
	Behavior string `json:"behavior" tstype:"'allow' | 'deny' | ''"`
	// OK is false when the request was no longer pending (expired,
	// answered already).
	OK bool `json:"ok"`
	// Reason, when retired without an answer: cancelled, process_exited,
	// session_cleared, owner_lost.
	Reason string `json:"reason,omitempty"`
	// AnsweredBy is the answering page's label (permission_response's
	// answered_by), when it gave one.
	AnsweredBy string `json:"answered_by,omitempty"`
}

// SessionClearedFrame says the conversation moved to an archived session.
type SessionClearedFrame struct {
	Type              string `json:"type" tstype:"'session_cleared'"`
	SessionID         string `json:"session_id"`
	ArchivedSessionID string `json:"archived_session_id"`
}

// StoppedFrame tells a stop's outcome.
type StoppedFrame struct {
	Type    string `json:"type" tstype:"'stopped'"`
	Outcome string `json:"outcome" tstype:"'idle' | 'acknowledged' | 'forced'"`
}

// PermissionModeChangedFrame tells a mode change and when it applies.
type PermissionModeChangedFrame struct {
	Type    string `json:"type" tstype:"'permission_mode_changed'"`
	Mode    string `json:"mode"`
	Applied string `json:"applied" tstype:"'live' | 'next_turn'"`
}

// CompactProgressFrame is a compaction's progress (Phase set) or the turn
// heartbeat (Heartbeat true, with ElapsedMS and SilentMS).
type CompactProgressFrame struct {
	Type         string `json:"type" tstype:"'compact_progress'"`
	Heartbeat    bool   `json:"heartbeat,omitempty"`
	Phase        string `json:"phase,omitempty" tstype:"'started' | 'finished' | 'boundary'"`
	Result       string `json:"result,omitempty"`
	Trigger      string `json:"trigger,omitempty"`
	IsCompacting bool   `json:"is_compacting"`
	ElapsedMS    int64  `json:"elapsed_ms,omitempty"`
	SilentMS     int64  `json:"silent_ms,omitempty"`
}

// SessionEndedFrame says the agent process ended.
type SessionEndedFrame struct {
	Type     string `json:"type" tstype:"'session_ended'"`
	Reason   string `json:"reason"`
	Cause    string `json:"cause" tstype:"'closed' | 'exited' | 'crashed' | 'interrupted' | 'server_restarted'"`
	ExitCode int    `json:"exit_code"`
}

// QueueFrame is the session's whole prompt queue, oldest first, sent to
// every socket whenever it changes.
type QueueFrame struct {
	Type  string         `json:"type" tstype:"'queue'"`
	Items []QueuedPrompt `json:"items"`
}

// ErrorFrame reports a failure; the socket stays open.
type ErrorFrame struct {
	Type string `json:"type" tstype:"'error'"`
	// Code, when set, is an error code of the HTTP answers (e.g.
	// storage_unavailable).
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

// StorageFrame tells every socket of an instance whether PostgreSQL, where
// the log is, can be reached: Available false when chat found it
// unreachable (it retries: the session's frames and prompts wait), true
// once it answers again. Not part of the log.
type StorageFrame struct {
	Type      string `json:"type" tstype:"'storage'"`
	Available bool   `json:"available"`
	Code      string `json:"code,omitempty" tstype:"'storage_unavailable'"`
	Message   string `json:"message"`
}

// PongFrame answers ping.
type PongFrame struct {
	Type string `json:"type" tstype:"'pong'"`
}

//tygo:emit
var _ = `/** Every frame the server sends on /chat. */
export type ChatFrame = ConnectedFrame | AgentMessageFrame | MessageStoredFrame | UserMessageStoredFrame
  | UserMessageQueuedFrame | RawOutputFrame | StderrFrame | PermissionRequestFrame | PermissionResolvedFrame | SessionClearedFrame
  | StoppedFrame | PermissionModeChangedFrame | CompactProgressFrame | SessionEndedFrame | QueueFrame
  | StorageFrame | ErrorFrame | PongFrame;`

// UserMessage sends a prompt; while a turn runs (or older prompts wait
// in the queue) it is queued.
type UserMessage struct {
	Type    string       `json:"type" tstype:"'user_message'"`
	Content string       `json:"content"`
	Images  []ImageBlock `json:"images,omitempty"`
}

// PingMessage asks for a pong.
type PingMessage struct {
	Type string `json:"type" tstype:"'ping'"`
}

// StopMessage interrupts the running turn.
type StopMessage struct {
	Type string `json:"type" tstype:"'stop'"`
}

// ClearSessionMessage moves the conversation to an archived session.
type ClearSessionMessage struct {
	Type string `json:"type" tstype:"'clear_session'"`
}

// SetPermissionModeMessage changes the permission mode.
type SetPermissionModeMessage struct {
	Type string `json:"type" tstype:"'set_permission_mode'"`
	Mode string `json:"mode" tstype:"'default' | 'acceptEdits' | 'bypassPermissions' | 'plan'"`
}

// PermissionResponseMessage answers a permission request.
type PermissionResponseMessage struct {
	Type      string `json:"type" tstype:"'permission_response'"`
	RequestID string `json:"request_id"`
	Behavior  string `json:"behavior" tstype:"'allow' | 'deny'"`
	// UpdatedInput replaces the tool's input (allow only).
	UpdatedInput json.RawMessage `json:"updated_input,omitempty" tstype:"JSONObject"`
	// SuggestionIndex applies one of the request's suggestions.
	SuggestionIndex *int `json:"suggestion_index,omitempty"`
	// Message is the reason given to the agent with a deny.
	Message string `json:"message,omitempty"`
	// AnsweredBy is a short label of the answering page or device,
	// echoed in permission_resolved (at most MaxAnsweredBy bytes).
	AnsweredBy string `json:"answered_by,omitempty"`
}

// ToolAnswerMessage answers an ask-user prompt.
type ToolAnswerMessage struct {
	Type      string `json:"type" tstype:"'tool_answer'"`
	RequestID string `json:"request_id"`
	// Answers maps each question's text to the chosen label(s).
	Answers json.RawMessage `json:"answers" tstype:"JSONObject"`
	// AnsweredBy: as in PermissionResponseMessage.
	AnsweredBy string `json:"answered_by,omitempty"`
}

// CancelQueuedMessage removes a queued prompt before it is sent.
type CancelQueuedMessage struct {
	Type    string `json:"type" tstype:"'cancel_queued'"`
	QueueID string `json:"queue_id"`
}

// SendNowMessage moves a queued prompt to the front of the queue and
// stops the running turn, so that it goes next (at once when no turn
// runs).
type SendNowMessage struct {
	Type    string `json:"type" tstype:"'send_now'"`
	QueueID string `json:"queue_id"`
}

// VisibilityMessage says whether the page that holds this socket is
// visible to its user (document.visibilityState). A socket counts as
// watching its session from visible true until visible false or its close;
// while any socket watches a session, no Web Push goes for it.
type VisibilityMessage struct {
	Type    string `json:"type" tstype:"'visibility'"`
	Visible bool   `json:"visible"`
}

//tygo:emit
var _ = `/** Every message a client sends on /chat. */
export type ChatClientMessage = UserMessage | PingMessage | StopMessage | ClearSessionMessage
  | SetPermissionModeMessage | PermissionResponseMessage | ToolAnswerMessage | CancelQueuedMessage
  | SendNowMessage | VisibilityMessage;`
