package termws

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Control frame types (JSON text frames). Terminal output always travels
// in binary frames, so a text frame from the server is always one of these.
const (
	TypeConnected = "connected"
	TypeExit      = "exit"
	TypeHeartbeat = "heartbeat"
	TypePong      = "pong"
	TypeError     = "error"
	TypeResync    = "resync"
	// TypeScreen precedes one binary frame holding the serialized screen
	// (flow connections only).
	TypeScreen = "screen"
	// TypeSkip tells a client that asked for skip_lines that plain output
	// it could never show was left out (flow connections only).
	TypeSkip = "skip"
	// Client to server.
	TypeResize = "resize"
	TypePing   = "ping"
	// TypeAck acknowledges rendered output (flow connections only).
	TypeAck = "ack"
)

// Error codes of error frames.
const (
	// CodeBadRequest: a control message the server could not act on (a
	// resize out of range); nothing changed.
	CodeBadRequest = "bad_request"
	// CodeTerminalLost: the session's terminal was on a host that died;
	// this connection got a new shell.
	CodeTerminalLost = "terminal_lost"
	// CodeInputTimeout: the terminal did not take typed input in time
	// (its input buffer is full and nothing reads it); the rest of that
	// message was dropped.
	CodeInputTimeout = "input_timeout"
	// CodeInternal: the server failed (the shell could not start).
	CodeInternal = "internal"
	// CodeUnavailable: the host is shutting down.
	CodeUnavailable = "unavailable"
)

// Resize bounds: a size outside them is refused with an error frame.
const (
	MinSize = 1
	MaxSize = 1000
)

// Connected is the first frame of every connection.
type Connected struct {
	Type    string `json:"type"`
	Session string `json:"session"`
	Cwd     string `json:"cwd"`
	Home    string `json:"home"`
	PID     int    `json:"pid"`
	// HasScrollback: output between Offset and the live end follows as a
	// replay.
	HasScrollback bool `json:"has_scrollback"`
	// ScrollbackTruncated: output the client asked for (all of it, or all
	// after its offset) has already left the ring.
	ScrollbackTruncated bool `json:"scrollback_truncated"`
	// Stream and Offset let a client resume: Offset is the stream offset
	// of the first byte that follows.
	Stream  string `json:"stream"`
	Offset  int64  `json:"offset"`
	Created bool   `json:"created"`
	Rows    uint16 `json:"rows"`
	Cols    uint16 `json:"cols"`
	Host    string `json:"host"`
	// Flow: the server accepted flow=1 (acks, flow control, screens).
	Flow bool `json:"flow,omitempty"`
}

// Screen announces the serialized screen, in the one binary frame of
// Bytes bytes that follows (not part of the stream): written to a freshly
// reset terminal of Rows×Cols it reproduces the screen at stream offset
// Offset, where the output that follows starts.
type Screen struct {
	Type   string `json:"type"`
	Offset int64  `json:"offset"`
	Rows   int    `json:"rows"`
	Cols   int    `json:"cols"`
	Bytes  int    `json:"bytes"`
}

// Skip tells that the output from From to Offset was left out: plain text
// followed by more lines than the client keeps (skip_lines), so that none
// of it could be on its screen or in its scrollback once they are drawn.
// SGR is the pen that output would have left: the client writes it in its
// place, after all it was sent before, and the next output starts at
// Offset.
type Skip struct {
	Type   string `json:"type"`
	From   int64  `json:"from"`
	Offset int64  `json:"offset"`
	SGR    string `json:"sgr"`
}

// Exit tells that the shell ended, with its code.
type Exit struct {
	Type string `json:"type"`
	Code int    `json:"code"`
}

// Error reports a problem with the connection or a message.
type Error struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Resync tells a client that fell more than the scrollback behind that it
// missed Skipped bytes; the output that follows starts at Offset.
type Resync struct {
	Type    string `json:"type"`
	Skipped int64  `json:"skipped"`
	Offset  int64  `json:"offset"`
}

var (
	frameHeartbeat = []byte(`{"type":"heartbeat"}`)
	framePong      = []byte(`{"type":"pong"}`)
)

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("termws: encode frame: " + err.Error()) // only fixed struct types are encoded
	}
	return b
}

func errorFrame(code, message string) []byte {
	return encode(Error{Type: TypeError, Code: code, Message: message})
}

// control is a client control message.
type control struct {
	kind       string // TypeResize, TypePing or TypeAck
	rows, cols uint16
	offset     int64  // of an ack
	err        string // set when the message is a control message that is invalid
}

// parseControl reports whether msg, a complete text message, is a control
// message. Only a JSON object whose "type" is a known client control type
// is one; anything else, malformed JSON included, is input for the shell.
func parseControl(msg []byte) (control, bool) {
	if len(msg) == 0 || msg[0] != '{' {
		return control{}, false
	}
	var probe struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(msg, &probe) != nil {
		return control{}, false
	}
	switch probe.Type {
	case TypePing:
		return control{kind: TypePing}, true
	case TypeResize:
		c := control{kind: TypeResize}
		var r struct {
			Rows json.RawMessage `json:"rows"`
			Cols json.RawMessage `json:"cols"`
		}
		_ = json.Unmarshal(msg, &r) // it parsed as an object above
		// Integers only: "24", 24.0 and 2.4e1 are refused.
		rows, rerr := strconv.ParseInt(string(r.Rows), 10, 64)
		cols, cerr := strconv.ParseInt(string(r.Cols), 10, 64)
		if rerr != nil || cerr != nil || rows < MinSize || rows > MaxSize || cols < MinSize || cols > MaxSize {
			c.err = fmt.Sprintf("resize needs integer rows and cols from %d to %d; the size is unchanged", MinSize, MaxSize)
			return c, true
		}
		c.rows, c.cols = uint16(rows), uint16(cols)
		return c, true
	case TypeAck:
		c := control{kind: TypeAck}
		var a struct {
			Offset json.RawMessage `json:"offset"`
		}
		_ = json.Unmarshal(msg, &a)
		off, err := strconv.ParseInt(string(a.Offset), 10, 64)
		if err != nil || off < 0 {
			c.err = "ack needs an integer offset, 0 or more; nothing changed"
			return c, true
		}
		c.offset = off
		return c, true
	}
	return control{}, false
}
