package chatws

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/services/chat/internal/room"
)

// conn is one client connection. Frames wait in q, bounded by QueueSize,
// for a writer goroutine: one is started when there is something to write
// (frames, a ping or pong, the close) and ends when there is nothing left,
// so an idle socket holds no writer goroutine, no queue array and no write
// buffer. Send never blocks.
//
// The writer writes all the frames waiting, encoded as WebSocket frames
// into one buffer from a pool, with one system call (a frame larger than
// the buffer takes two): a socket that fell behind catches up in few
// writes. Writers write while holding one of the server's write slots
// (see slotWriter), so that a burst to thousands of sockets does not put
// thousands of writers in the scheduler's run queue ahead of the goroutines
// that produce the frames. Every write to the connection is the writer's: pings from the
// client are answered through it, and a close from the client is answered
// by the reader ending the connection.
type conn struct {
	ws    *websocket.Conn
	log   *slog.Logger
	slots chan struct{} // the server's write slots
	// cancel ends the context of the client's command being run.
	cancel context.CancelFunc
	// stopping is set with closing, for the writer to stop mid-batch
	// without taking mu.
	stopping atomic.Bool
	// ended is closed when the connection has been torn down.
	ended chan struct{}

	mu      sync.Mutex
	q       []room.Frame
	writing bool    // a writer goroutine runs (or is about to)
	ping    bool    // a ping is due
	pong    *string // a pong is due, with this payload
	closing bool    // close requested: code is set
	code    int     // close code to send; 0 sends none
	pinger  *time.Timer
	// replayed is the last line replayed from the log (-1: none): a
	// frame at or below it, broadcast after the replay read it, is not
	// written again.
	replayed int64
}

// newConn returns a conn whose frames wait until start: writing is set, as
// if a writer ran, so that nothing goes out before the first frames.
func newConn(ws *websocket.Conn, log *slog.Logger, slots chan struct{}, cancel context.CancelFunc) *conn {
	return &conn{ws: ws, log: log, slots: slots, cancel: cancel, ended: make(chan struct{}), writing: true, replayed: -1}
}

// Send implements room.Sink: it queues f and never blocks; a frame that
// finds QueueSize frames waiting closes c with CloseTooSlow and the queue
// is dropped (the client reconnects with after_line).
func (c *conn) Send(f room.Frame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return
	}
	if len(c.q) >= QueueSize {
		c.closeLocked(CloseTooSlow)
		return
	}
	c.q = append(c.q, f)
	c.kickLocked()
}

// close asks for c to be closed with code (0: without a close frame).
func (c *conn) close(code int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked(code)
}

func (c *conn) closeLocked(code int) {
	if c.closing {
		return
	}
	c.closing, c.code = true, code
	c.stopping.Store(true)
	c.q = nil
	c.cancel()
	c.kickLocked()
}

// isClosing reports whether c is closing.
func (c *conn) isClosing() bool { return c.stopping.Load() }

// kickLocked starts a writer unless one runs; c.mu must be held.
func (c *conn) kickLocked() {
	if c.writing {
		return
	}
	c.writing = true
	go c.drain()
}

// errClosing stops a writer that finds c closing.
var errClosing = errors.New("connection closing")

// start runs the first writer: it writes head, then (when replay is not
// nil) the log through replay, then drains the queue. Frames sent since
// newConn wait in the queue; those with a line at or below the last
// replayed one are skipped. It also starts the pings.
func (c *conn) start(head []room.Frame, replay func(put func(...room.Frame) error) (int64, error)) {
	c.mu.Lock()
	c.pinger = time.AfterFunc(pingEvery, c.pingDue)
	c.mu.Unlock()
	go func() {
		if err := c.put(head...); err != nil {
			c.stop(err)
			return
		}
		if replay != nil {
			last, err := replay(c.put)
			if err != nil {
				c.stop(err)
				return
			}
			c.mu.Lock()
			c.replayed = last
			c.mu.Unlock()
		}
		c.loop()
	}()
}

// pingDue runs on the ping timer.
func (c *conn) pingDue() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return
	}
	c.ping = true
	c.pinger.Reset(pingEvery)
	c.kickLocked()
}

// pingReceived is the connection's ping handler (it runs on the reader):
// the pong goes through the writer.
func (c *conn) pingReceived(data string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closing {
		c.pong = &data
		c.kickLocked()
	}
	return nil
}

// put writes frames (see writeFrames) through a slotWriter.
func (c *conn) put(frames ...room.Frame) error {
	if c.isClosing() {
		return errClosing
	}
	w := slotWriter{slots: c.slots, nc: c.ws.NetConn()}
	w.acquire() // before writeFrames takes a buffer: at most one buffer per slot
	defer w.release()
	return writeFrames(&w, frames)
}

// slotHold is how long a write may block while holding a write slot.
const slotHold = 10 * time.Millisecond

// slotWriter writes to c's connection holding one of the server's write
// slots (a channel used as a semaphore: waiting writers are parked, and
// served in turn). A write that cannot complete within slotHold (the
// client is not reading fast enough) releases the slot and finishes
// within writeTimeout without it: a slow client never holds up the
// others.
type slotWriter struct {
	slots chan struct{}
	nc    net.Conn
	held  bool
}

func (w *slotWriter) Write(p []byte) (int, error) {
	nc := w.nc
	w.acquire()
	if err := nc.SetWriteDeadline(time.Now().Add(slotHold)); err != nil {
		return 0, err
	}
	n, err := nc.Write(p)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return n, err
	}
	w.release()
	if err := nc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return n, err
	}
	m, err := nc.Write(p[n:])
	return n + m, err
}

func (w *slotWriter) acquire() {
	if !w.held {
		w.slots <- struct{}{}
		w.held = true
	}
}

func (w *slotWriter) release() {
	if w.held {
		<-w.slots
		w.held = false
	}
}

// writeChunk is the size of the pooled buffers frames are encoded into.
const writeChunk = 32 << 10

var writeBufs = sync.Pool{New: func() any { b := make([]byte, 0, writeChunk); return &b }}

// writeFrames writes frames as final, unmasked WebSocket text frames
// (RFC 6455 §5.2, server to client, no extension), as many as fit in one
// pooled buffer per write; a frame larger than the buffer is written as
// its header, then its data.
func writeFrames(w io.Writer, frames []room.Frame) error {
	bp, _ := writeBufs.Get().(*[]byte)
	buf := (*bp)[:0]
	defer func() {
		*bp = buf[:0]
		writeBufs.Put(bp)
	}()
	for _, f := range frames {
		n := len(f.Data)
		if len(buf) > 0 && len(buf)+maxHeader+n > cap(buf) {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
		buf = appendHeader(buf, n)
		if maxHeader+n > cap(buf) {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
			if _, err := w.Write(f.Data); err != nil {
				return err
			}
			continue
		}
		buf = append(buf, f.Data...)
	}
	if len(buf) > 0 {
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// maxHeader is the longest header appendHeader writes.
const maxHeader = 10

// appendHeader appends the header of a final text frame of n bytes.
func appendHeader(b []byte, n int) []byte {
	const finText = 0x80 | websocket.TextMessage
	switch {
	case n < 126:
		return append(b, finText, byte(n)) //nolint:gosec // G115: 0 ≤ n < 126 here
	case n <= 0xFFFF:
		return binary.BigEndian.AppendUint16(append(b, finText, 126), uint16(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, finText, 127), uint64(n))
	}
}

func (c *conn) drain() { c.loop() }

// loop writes the queued frames until the queue is empty (the writer then
// ends) or c closes (the writer then tears the connection down).
func (c *conn) loop() {
	for {
		c.mu.Lock()
		switch {
		case c.closing:
			code := c.code
			c.mu.Unlock()
			c.teardown(code)
			return
		case c.ping, c.pong != nil:
			kind, data := websocket.PingMessage, []byte(nil)
			if !c.ping {
				kind, data = websocket.PongMessage, []byte(*c.pong)
				c.pong = nil
			}
			c.ping = false
			c.mu.Unlock()
			if err := c.ws.WriteControl(kind, data, time.Now().Add(writeTimeout)); err != nil {
				c.stop(err)
				return
			}
			continue
		case len(c.q) == 0:
			c.writing = false
			c.q = nil // let the array go while idle
			c.mu.Unlock()
			return
		}
		batch, skipTo := c.q, c.replayed
		c.q = nil
		c.mu.Unlock()
		out := batch[:0]
		for _, f := range batch {
			if f.Line == 0 || f.Line > skipTo {
				out = append(out, f)
			}
		}
		// errClosing: the next round sends the close frame.
		if err := c.put(out...); err != nil && !errors.Is(err, errClosing) {
			c.stop(err)
			return
		}
	}
}

// stop ends the writer after err: errClosing leaves the close to loop's
// next round; after a failed write the connection is torn down at once,
// without a close frame (the stream may end mid-frame).
func (c *conn) stop(err error) {
	if errors.Is(err, errClosing) {
		c.loop()
		return
	}
	c.close(0)
	c.teardown(0)
}

// teardown sends the close frame (when code is not 0) and closes the
// connection, which also ends the reader's pending read: fasthttp closes a
// hijacked connection only after its handler returns (Close is a no-op
// before), so the read is ended by a deadline in the past. Only the writer
// calls it, once.
func (c *conn) teardown(code int) {
	c.mu.Lock()
	if c.pinger != nil {
		c.pinger.Stop()
	}
	c.mu.Unlock()
	if code != 0 {
		reason := ""
		if code == CloseTooSlow {
			reason = "too slow: reconnect with after_line"
		}
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	}
	_ = c.ws.NetConn().SetReadDeadline(time.Now())
	_ = c.ws.NetConn().Close()
	close(c.ended)
}
