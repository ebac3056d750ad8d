package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// wireMsg is any line of the protocol (codex.md §2): a request (method and
// id), a notification (method only) or a response (id only). Only the
// fields routing needs are decoded; the line itself is kept raw.
type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// hasID reports whether the message carries an id (null is none).
func (m *wireMsg) hasID() bool {
	id := bytes.TrimSpace(m.ID)
	return len(id) > 0 && !bytes.Equal(id, []byte("null"))
}

// idString is the id as text: a JSON string's value, or a number's digits.
func (m *wireMsg) idString() string {
	var s string
	if json.Unmarshal(m.ID, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(m.ID))
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// JSON-RPC error codes: the one we send, and Codex's backpressure answer
// (codex.md §2), which says nothing about the request itself.
const (
	codeMethodNotFound = -32601
	codeOverloaded     = -32001
)

// RPCError is a JSON-RPC error answer from the app-server.
type RPCError struct {
	Method  string // the request it answers
	Code    int
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("codex %s: error %d: %s", e.Method, e.Code, e.Message)
}

// errNoResponse: a request got no response in time.
var errNoResponse = errors.New("no response from codex app-server in time")

// decodeLenient decodes JSON into v, keeping what fits when some field has
// an unexpected type (the protocol gains and changes fields). It reports
// false only for input that is not valid JSON.
func decodeLenient(data []byte, v any) bool {
	if len(data) == 0 {
		return false
	}
	err := json.Unmarshal(data, v)
	var typeErr *json.UnmarshalTypeError
	return err == nil || errors.As(err, &typeErr)
}

// parseWire classifies one stdout line. ok is false for a line that is not
// a JSON object.
func parseWire(line []byte) (wireMsg, bool) {
	var m wireMsg
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' || !decodeLenient(trimmed, &m) {
		return m, false
	}
	return m, true
}

// Kinds of lines, by shape (codex.md §8).
const (
	shapeResponse     = "response"
	shapeRequest      = "request"
	shapeNotification = "notification"
	shapeInvalid      = "invalid"
)

// shape tells a response (id, no method), a server request (method and id)
// and a notification (method, no id) apart.
func (m *wireMsg) shape() string {
	switch {
	case m.Method != "" && m.hasID():
		return shapeRequest
	case m.Method != "":
		return shapeNotification
	case m.hasID():
		return shapeResponse
	}
	return shapeInvalid
}

func itoa(n int) string { return strconv.Itoa(n) }
