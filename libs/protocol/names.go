package protocol

// The names of the frames and client messages of the /chat and events
// sockets, for Go code (the TypeScript types carry them as literal types,
// so this file is left out of the generation).

// Types of the server's /chat frames.
const (
	FrameConnected             = "connected"
	FrameAgentMessage          = "agent_message"
	FrameMessageStored         = "message_stored"
	FrameUserMessageStored     = "user_message_stored"
	FrameUserMessageQueued     = "user_message_queued"
	FrameRawOutput             = "raw_output"
	FrameStderr                = "stderr"
	FramePermissionRequest     = "permission_request"
	FramePermissionResolved    = "permission_resolved"
	FrameSessionCleared        = "session_cleared"
	FrameStopped               = "stopped"
	FramePermissionModeChanged = "permission_mode_changed"
	FrameCompactProgress       = "compact_progress"
	FrameSessionEnded          = "session_ended"
	FrameQueue                 = "queue"
	FrameStorage               = "storage"
	FrameError                 = "error"
	FramePong                  = "pong"
)

// Types of the client's /chat messages.
const (
	MsgUserMessage        = "user_message"
	MsgPing               = "ping"
	MsgStop               = "stop"
	MsgSetPermissionMode  = "set_permission_mode"
	MsgPermissionResponse = "permission_response"
	MsgClearSession       = "clear_session"
	MsgToolAnswer         = "tool_answer"
	MsgCancelQueued       = "cancel_queued"
	MsgSendNow            = "send_now"
	// MsgVisibility says whether the page showing the session is visible
	// (Web Push is held back while one is).
	MsgVisibility = "visibility"
)

// MaxAnsweredBy is the longest answered_by label, in bytes.
const MaxAnsweredBy = 200

// Types of the events socket's frames.
const (
	EventSnapshot           = "snapshot"
	EventSession            = "session"
	EventSessionDeleted     = "session_deleted"
	EventPermissionRequest  = "permission_request"
	EventPermissionResolved = "permission_resolved"
	EventHeartbeat          = "heartbeat"
	EventPong               = "pong"
	EventError              = "error"
)
