package protocol

import "encoding/json"

// The events socket, GET /api/events (docs/api.md, "Events socket"): the
// sessions and pending permission requests of every session, for a
// sidebar and an inbox, without one /chat socket per session.

// SessionSummary is a session of the sidebar: the session object and its
// live counts.
type SessionSummary struct {
	Session `tstype:",extends"`
	// PendingPermissions counts the session's pending permission requests.
	PendingPermissions int `json:"pending_permissions"`
	// Queued counts the prompts waiting in its queue.
	Queued int `json:"queued"`
	// IsFavorite: the session is a favorite (GET /api/favorites).
	IsFavorite bool `json:"is_favorite"`
}

// PendingPermission is a pending permission request of some session.
type PendingPermission struct {
	SessionID   string            `json:"session_id"`
	RequestID   string            `json:"request_id"`
	ToolName    string            `json:"tool_name"`
	Input       json.RawMessage   `json:"input" tstype:"JSONObject"`
	Suggestions []json.RawMessage `json:"suggestions" tstype:"unknown[]"`
}

// SnapshotEvent is the whole state: the first frame, and again whenever
// the server cannot be sure the client saw every change (the client
// replaces its state with it).
type SnapshotEvent struct {
	Type string `json:"type" tstype:"'snapshot'"`
	// Sessions are the sessions that are not archived, most recently
	// updated first (at most MaxSnapshotSessions).
	Sessions []SessionSummary `json:"sessions"`
	// Pending are the pending permission requests of every session, the
	// oldest of each session first.
	Pending []PendingPermission `json:"pending"`
}

// MaxSnapshotSessions bounds a snapshot's sessions.
const MaxSnapshotSessions = 500

// SessionEvent says a session was created or changed (title, favorite,
// archived, agent_running, is_compacting, its counts).
type SessionEvent struct {
	Type    string         `json:"type" tstype:"'session'"`
	Session SessionSummary `json:"session"`
}

// SessionDeletedEvent says a session was deleted.
type SessionDeletedEvent struct {
	Type      string `json:"type" tstype:"'session_deleted'"`
	SessionID string `json:"session_id"`
}

// PermissionRequestEvent says a session's agent asks for a permission.
type PermissionRequestEvent struct {
	Type              string `json:"type" tstype:"'permission_request'"`
	PendingPermission `tstype:",extends"`
}

// PermissionResolvedEvent says a pending request was answered or retired.
type PermissionResolvedEvent struct {
	Type       string `json:"type" tstype:"'permission_resolved'"`
	SessionID  string `json:"session_id"`
	RequestID  string `json:"request_id"`
	Behavior   string `json:"behavior" tstype:"'allow' | 'deny' | ''"`
	OK         bool   `json:"ok"`
	Reason     string `json:"reason,omitempty"`
	AnsweredBy string `json:"answered_by,omitempty"`
}

// HeartbeatEvent is sent every few seconds of silence, so that a client
// knows the socket is alive.
type HeartbeatEvent struct {
	Type string `json:"type" tstype:"'heartbeat'"`
}

// PongEvent answers the client's {"type": "ping"}.
type PongEvent struct {
	Type string `json:"type" tstype:"'pong'"`
}

// ErrorEvent reports a bad client message; the socket stays open.
type ErrorEvent struct {
	Type    string `json:"type" tstype:"'error'"`
	Message string `json:"message"`
}

//tygo:emit
var _ = `/** Every frame the server sends on /api/events. */
export type EventFrame = SnapshotEvent | SessionEvent | SessionDeletedEvent | PermissionRequestEvent
  | PermissionResolvedEvent | HeartbeatEvent | PongEvent | ErrorEvent;`
