package protocol

import (
	"encoding/json"
	"time"
)

// Web Push (chat's /api/push routes): the bodies of the routes and the
// payloads the service worker decrypts.

// Kinds of push payload.
const (
	PushPermission = "permission"
	PushTurnEnded  = "turn_ended"
	PushResolved   = "resolved"
	PushTest       = "test"
)

// PushKey answers GET /api/push/key: the VAPID public key, the
// applicationServerKey of pushManager.subscribe.
type PushKey struct {
	// PublicKey is the uncompressed P-256 point, base64url without padding.
	PublicKey string `json:"public_key"`
}

// PushSubscriptionKeys are a browser subscription's keys, base64url.
type PushSubscriptionKeys struct {
	P256dh string `json:"p256dh"`
	Auth   string `json:"auth"`
}

// BrowserPushSubscription is PushSubscription.toJSON() of the browser.
type BrowserPushSubscription struct {
	Endpoint string               `json:"endpoint"`
	Keys     PushSubscriptionKeys `json:"keys"`
}

// PushSubscribeRequest is the body of POST /api/push/subscriptions.
type PushSubscribeRequest struct {
	Name         string                  `json:"name"`
	Subscription BrowserPushSubscription `json:"subscription"`
}

// PushSubscription is a registered device as listed (its endpoint is never
// echoed in full: only its origin).
type PushSubscription struct {
	ID             string     `json:"id"`
	Name           string     `json:"name"`
	EndpointOrigin string     `json:"endpoint_origin"`
	CreatedAt      time.Time  `json:"created_at"`
	LastSuccessAt  *time.Time `json:"last_success_at"`
	LastError      *string    `json:"last_error"`
	UserAgent      string     `json:"user_agent"`
}

// PushSubscriptionList answers GET /api/push/subscriptions.
type PushSubscriptionList struct {
	Subscriptions []PushSubscription `json:"subscriptions"`
}

// PushAnswerRequest is the body of POST /api/push/answer.
type PushAnswerRequest struct {
	Token    string `json:"token"`
	Decision string `json:"decision" tstype:"'allow' | 'deny'"`
}

// PushAnswer answers POST /api/push/answer.
type PushAnswer struct {
	SessionID string `json:"session_id"`
	RequestID string `json:"request_id"`
	Decision  string `json:"decision" tstype:"'allow' | 'deny'"`
}

// PushTestRequest is the body of POST /api/push/test.
type PushTestRequest struct {
	ID string `json:"id"`
}

// PushTestResult answers POST /api/push/test (200) once the test push is
// done with: Delivered when the push service took it; otherwise Error says
// why not (recorded as the device's last error too) and Removed that the
// push service said the subscription is gone (404/410) and it was deleted.
// Status is the push service's last answer (0: it was not reached).
type PushTestResult struct {
	Delivered bool   `json:"delivered"`
	Status    int    `json:"status"`
	Removed   bool   `json:"removed,omitempty"`
	Error     string `json:"error,omitempty"`
}

// PushTestQueued answers POST /api/push/test (202) when the push is still
// being tried after the route's wait (the push service is slow or being
// retried): the device list's last_success_at / last_error tell the
// outcome later.
type PushTestQueued struct {
	Queued bool `json:"queued"`
}

// PushPending answers GET /api/push/pending: the permission requests
// waiting over all sessions (the app badge).
type PushPending struct {
	Count int `json:"count"`
}

// PushPayload is what a push carries (JSON, encrypted per RFC 8291); Kind
// says which fields are set.
type PushPayload struct {
	Kind string `json:"kind" tstype:"'permission' | 'turn_ended' | 'resolved' | 'test'"`
	// Pending is the count of permission requests waiting (the badge).
	Pending      int    `json:"pending"`
	SessionID    string `json:"session_id,omitempty"`
	SessionTitle string `json:"session_title,omitempty"`
	URL          string `json:"url,omitempty"`
	// permission (and resolved: RequestID)
	RequestID string `json:"request_id,omitempty"`
	ToolName  string `json:"tool_name,omitempty"`
	// Input is the tool's whole input, or when it does not fit a string
	// holding its beginning, with InputTruncated true (then the
	// notification offers no Allow: only Open).
	Input          json.RawMessage `json:"input,omitempty" tstype:"unknown"`
	InputTruncated bool            `json:"input_truncated,omitempty"`
	// Token answers this request once through POST /api/push/answer.
	Token     string `json:"token,omitempty"`
	ExpiresAt string `json:"expires_at,omitempty"`
	// turn_ended
	DurationMS int64   `json:"duration_ms,omitempty"`
	CostUSD    float64 `json:"cost_usd,omitempty"`
	Status     string  `json:"status,omitempty"`
}
