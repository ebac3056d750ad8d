package protocol

// Headers the gateway sets on every request it forwards to a backend. A
// backend trusts them only when HeaderInternal carries the internal
// credential; the gateway strips any copy a client sent.
const (
	// HeaderInternal carries the internal credential (see libs/internalauth).
	HeaderInternal = "X-Svc-Internal"
	// HeaderAuthKind names the credential the client used: "cookie",
	// "bearer" or "tkn".
	HeaderAuthKind = "X-Svc-Auth-Kind"
	// HeaderRequestID correlates the gateway's and the backend's logs.
	HeaderRequestID = "X-Request-Id"
	// HeaderTerminalLostHost names the dead terminal host a session's PTY
	// was on, when the gateway sends the session to another host.
	HeaderTerminalLostHost = "X-Svc-Terminal-Lost-Host"
)
