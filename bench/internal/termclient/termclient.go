// Package termclient is a client of the terminal WebSocket (/ws/terminal),
// served by the terminal service and, in front of it, by the gateway. It
// turns the socket into a plain stream of terminal output, handling the
// JSON control frames that travel on the same socket, and types keys.
package termclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/bench/internal/termload"
)

var _ termload.Conn = (*Conn)(nil)

// Control is a server control frame; only the fields of its Type are set.
type Control struct {
	Type string
	// connected
	Session       string
	Cwd           string
	Home          string
	PID           int
	HasScrollback bool
	// exit
	ExitCode int
	// error
	ErrorCode string
	Message   string
	// resync: output the server dropped because this client fell behind
	Skipped int64
	// connected (flow=1): Flow, and the stream offset of the first byte
	// of output; screen: the offset the output after it starts at
	Flow   bool
	Offset int64
	// screen: the size of the serialized screen in the binary frame after it
	Bytes int
}

// Control frame types.
const (
	TypeConnected = "connected"
	TypeExit      = "exit"
	TypeHeartbeat = "heartbeat"
	TypePong      = "pong"
	TypeError     = "error"
	TypeResync    = "resync"
	TypeScreen    = "screen"
)

// ParseControl reads a text frame as a control frame. Following the
// interface's rule, a frame is one only when it is a JSON object whose
// type is a known control type; anything else is terminal output.
func ParseControl(msg []byte) (Control, bool) {
	if len(msg) == 0 || msg[0] != '{' {
		return Control{}, false
	}
	var w struct {
		Type          string          `json:"type"`
		Session       string          `json:"session"`
		Cwd           string          `json:"cwd"`
		Home          string          `json:"home"`
		PID           int             `json:"pid"`
		HasScrollback bool            `json:"has_scrollback"`
		Code          json.RawMessage `json:"code"` // a number in exit, a string in error
		Message       string          `json:"message"`
		Skipped       int64           `json:"skipped"`
		Flow          bool            `json:"flow"`
		Offset        int64           `json:"offset"`
		Bytes         int             `json:"bytes"`
	}
	if err := json.Unmarshal(msg, &w); err != nil {
		return Control{}, false
	}
	c := Control{
		Type: w.Type, Session: w.Session, Cwd: w.Cwd, Home: w.Home, PID: w.PID,
		HasScrollback: w.HasScrollback, Message: w.Message, Skipped: w.Skipped,
		Flow: w.Flow, Offset: w.Offset, Bytes: w.Bytes,
	}
	switch w.Type {
	case TypeExit:
		if json.Unmarshal(w.Code, &c.ExitCode) != nil {
			return Control{}, false
		}
	case TypeError:
		_ = json.Unmarshal(w.Code, &c.ErrorCode) // an error frame without a code is still one
	case TypeConnected, TypeHeartbeat, TypePong, TypeResync, TypeScreen:
	default:
		return Control{}, false
	}
	return c, true
}

// ErrExited is returned by Read once the shell has exited.
var ErrExited = errors.New("the shell exited")

// Conn is one open terminal socket. A goroutine of its own reads the
// socket, so that a Read that times out leaves the connection usable (a
// WebSocket read that times out would not).
type Conn struct {
	ws      *websocket.Conn
	chunks  chan chunk
	done    chan struct{} // closed by Close
	closing sync.Once
	reader  sync.WaitGroup
	rest    []byte // the unread part of the current chunk
	err     error  // the reader's final error, once received
	timer   *time.Timer
	expired bool // the timer has fired for the current deadline
	// Connected is the first frame.
	Connected Control
	skipped   atomic.Int64
	frames    atomic.Int64 // output frames received
	screens   atomic.Int64 // screen frames received (flow=1)
	// Flow connections (flow=1) acknowledge what Read has returned: pos
	// is the stream offset after it, acked the last acknowledgement.
	flow       bool
	pos, acked int64
	ackedAt    time.Time
	writeMu    sync.Mutex
}

// chunk is a piece of output, the reader's final error, or (screen set)
// a screen: the output after it starts at stream offset at.
type chunk struct {
	b      []byte
	err    error
	screen bool
	at     int64
}

// Acknowledgement cadence of a flow connection: every ackEvery bytes read
// or ackInterval, whichever comes first (as the browser's pane does).
const (
	ackEvery    = 64 << 10
	ackInterval = 100 * time.Millisecond
)

// maxFrame bounds a frame: a larger one fails the connection.
const maxFrame = 16 << 20

// Dial opens url (ws://host:port/ws/terminal?session=...) with header and
// reads the connected frame.
func Dial(ctx context.Context, url string, header http.Header, timeout time.Duration) (*Conn, error) {
	d := websocket.Dialer{HandshakeTimeout: timeout, ReadBufferSize: 64 << 10, WriteBufferSize: 4 << 10}
	ws, resp, err := d.DialContext(ctx, url, header)
	if resp != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial %s: %w (status %d)", url, err, resp.StatusCode)
		}
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	ws.SetReadLimit(maxFrame)
	if err := ws.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		_ = ws.Close()
		return nil, err
	}
	typ, msg, err := ws.ReadMessage()
	if err != nil {
		_ = ws.Close()
		return nil, fmt.Errorf("read the connected frame: %w", err)
	}
	f, ok := ParseControl(msg)
	if typ != websocket.TextMessage || !ok || f.Type != TypeConnected {
		_ = ws.Close()
		return nil, fmt.Errorf("first frame is %.200q, want a connected frame", msg)
	}
	if err := ws.SetReadDeadline(time.Time{}); err != nil {
		_ = ws.Close()
		return nil, err
	}
	c := &Conn{ws: ws, chunks: make(chan chunk, 64), done: make(chan struct{}), Connected: f,
		flow: f.Flow, pos: f.Offset, acked: f.Offset, ackedAt: time.Now()}
	c.timer = time.NewTimer(time.Hour)
	c.timer.Stop()
	c.reader.Add(1)
	go c.read()
	return c, nil
}

// read turns frames into chunks until the socket fails or closes.
func (c *Conn) read() {
	defer c.reader.Done()
	send := func(ch chunk) bool {
		select {
		case c.chunks <- ch:
			return true
		case <-c.done:
			return false
		}
	}
	for {
		typ, msg, err := c.ws.ReadMessage()
		if err != nil {
			send(chunk{err: err})
			return
		}
		if typ == websocket.TextMessage {
			if f, ok := ParseControl(msg); ok {
				switch f.Type {
				case TypeExit:
					send(chunk{err: fmt.Errorf("%w with code %d", ErrExited, f.ExitCode)})
					return
				case TypeError:
					send(chunk{err: fmt.Errorf("error frame: %s: %s", f.ErrorCode, f.Message)})
					return
				case TypeResync:
					c.skipped.Add(f.Skipped)
				case TypeScreen:
					// The serialized screen follows: not output (a client
					// with a screen would reset and draw it).
					if _, _, err := c.ws.ReadMessage(); err != nil {
						send(chunk{err: err})
						return
					}
					c.screens.Add(1)
					if !send(chunk{screen: true, at: f.Offset}) {
						return
					}
				}
				continue
			}
		}
		if len(msg) == 0 {
			continue
		}
		c.frames.Add(1)
		if !send(chunk{b: msg}) {
			return
		}
	}
}

// Read reads terminal output: binary frames, and text frames that are not
// control frames. It returns ErrExited when the shell exits, an error for
// an error frame, and os.ErrDeadlineExceeded past the read deadline.
func (c *Conn) Read(p []byte) (int, error) {
	if len(c.rest) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		if c.expired {
			return 0, os.ErrDeadlineExceeded
		}
		select {
		case ch := <-c.chunks:
			if ch.err != nil {
				c.err = ch.err
				return 0, ch.err
			}
			if ch.screen {
				c.pos, c.acked = ch.at, ch.at
				return 0, nil
			}
			c.rest = ch.b
		case <-c.timer.C:
			c.expired = true
			return 0, os.ErrDeadlineExceeded
		case <-c.done:
			return 0, net.ErrClosed
		}
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	if c.flow {
		c.pos += int64(n)
		if c.pos-c.acked >= ackEvery || time.Since(c.ackedAt) >= ackInterval {
			if err := c.ack(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// ack acknowledges the output Read has returned (flow=1).
func (c *Conn) ack() error {
	c.acked, c.ackedAt = c.pos, time.Now()
	return c.write(websocket.TextMessage, []byte(fmt.Sprintf(`{"type":"ack","offset":%d}`, c.pos)))
}

func (c *Conn) write(kind int, msg []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if err := c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	return c.ws.WriteMessage(kind, msg)
}

// Screens is how many screen frames a flow connection got (it fell
// behind the ring and was resynchronised to the screen).
func (c *Conn) Screens() int64 { return c.screens.Load() }

// SetReadDeadline bounds pending and future Reads; the zero time removes
// the bound. Unlike the socket's own deadline, passing it breaks nothing.
// It must not be called during a Read.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.timer.Stop()
	c.expired = false
	if !t.IsZero() {
		c.timer.Reset(time.Until(t))
	}
	return nil
}

// Skipped is how much output the server dropped for this client because
// it fell behind (the sum of its resync frames).
func (c *Conn) Skipped() int64 { return c.skipped.Load() }

// Frames is how many frames of output have arrived so far.
func (c *Conn) Frames() int64 { return c.frames.Load() }

// Send types keys, as one text message (as a browser's terminal does).
func (c *Conn) Send(keys []byte) error {
	return c.write(websocket.TextMessage, keys)
}

// Resize sets the terminal's size.
func (c *Conn) Resize(rows, cols int) error {
	b, _ := json.Marshal(map[string]any{"type": "resize", "rows": rows, "cols": cols}) // cannot fail
	return c.Send(b)
}

// Close closes the socket (with a normal closure) and waits for its
// reader. It is safe to call more than once, and from another goroutine.
func (c *Conn) Close() error {
	var err error
	c.closing.Do(func() {
		close(c.done)
		_ = c.ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		err = c.ws.Close()
		c.reader.Wait()
	})
	return err
}

// Pos is the stream offset after the output Read has returned, on a flow
// connection (flow=1); call it from the goroutine that reads.
func (c *Conn) Pos() int64 { return c.pos }
