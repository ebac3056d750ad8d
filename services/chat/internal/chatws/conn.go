package chatws

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/services/chat/internal/room"
)

// conn is one client connection. Frames wait in q, bounded by QueueSize,
// for one of the server's writers (see writers): a connection with
// something to write (frames, a ping or pong, the close) is put in the
// writers' ready queue once, and the writer that takes it writes
// everything waiting at that moment, encoded as WebSocket frames into one
// buffer, with one non-blocking system call. So an idle socket holds no
// goroutine, queue array or buffer; a burst to thousands of sockets runs
// on a few goroutines instead of one per socket; and a socket that fell
// behind catches up in few writes, its frames gathered while it waited.
//
// A write the socket cannot take at once (the client reads slowly) is
// finished by a goroutine of the connection's own, so a slow client never
// holds a writer up: it takes over the writer's buffer (the frames' data
// is shared by the session's sockets and is not copied), writes with a
// deadline per write, and stops at a frame boundary once the connection
// closes, for the close frame to follow. Every write to the connection is a
// writer's: pings from the client are answered through it, and a close
// from the client is answered by the reader ending the connection. (The
// one exception: the WebSocket library answers a client's protocol error
// with a close frame of its own; the writer then sends none, see read.)
//
// writing says who may write: it is set while the connection waits in the
// ready queue, while a writer or its slow goroutine writes, and from
// newConn until start hands the connection over; exactly one of them
// holds it, and only it tears the connection down.
type conn struct {
	ws  *websocket.Conn
	nc  net.Conn        // the connection under the WebSocket, for writes
	raw syscall.RawConn // nc's descriptor; nil: every write goes the slow way
	log *slog.Logger
	// pool is the server's writers.
	pool *writers
	// cancel ends the context of the client's command being run.
	cancel context.CancelFunc
	// timeout bounds each blocking write (writeTimeout; tests shorten it).
	timeout time.Duration
	// stopping is set with closing, for the replay and the slow goroutine
	// to stop between frames without taking mu.
	stopping atomic.Bool
	// ended is closed when the connection has been torn down.
	ended chan struct{}

	mu      sync.Mutex
	q       []room.Frame
	writing bool    // queued, being written, or not started yet: see above
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
// if a writer held it, so that nothing goes out before the first frames.
func newConn(ws *websocket.Conn, log *slog.Logger, pool *writers, cancel context.CancelFunc) *conn {
	c := &conn{ws: ws, log: log, pool: pool, cancel: cancel, ended: make(chan struct{}), writing: true, replayed: -1, timeout: writeTimeout}
	if ws != nil {
		c.nc, c.raw = rawConn(ws.NetConn())
	}
	return c
}

// rawConn returns the network connection under a hijacked one (fasthttp
// wraps it to serve reads buffered before the upgrade; writes go straight
// through) and its descriptor, when it has one.
func rawConn(nc net.Conn) (net.Conn, syscall.RawConn) {
	if u, ok := nc.(interface{ UnsafeConn() net.Conn }); ok {
		nc = u.UnsafeConn()
	}
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			return nc, raw
		}
	}
	return nc, nil
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

// kickLocked puts c in the writers' queue unless it is there already or
// being written; c.mu must be held.
func (c *conn) kickLocked() {
	if c.writing {
		return
	}
	c.writing = true
	c.pool.push(c)
}

// dueLocked reports whether c has something to write; c.mu must be held.
func (c *conn) dueLocked() bool {
	return c.closing || c.ping || c.pong != nil || len(c.q) > 0
}

// handOff ends a turn at writing: c goes back in the writers' queue (at
// its end, after the others waiting) if more is due, else it is idle.
func (c *conn) handOff() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dueLocked() {
		c.pool.push(c)
		return
	}
	c.writing = false
	c.q = nil // let the array go while idle
}

// errClosing stops a writer that finds c closing.
var errClosing = errors.New("connection closing")

// start sends head first, then (when replay is not nil) the log through
// replay, then what was queued since newConn: frames with a line at or
// below the last replayed one are skipped. It also starts the pings.
func (c *conn) start(head []room.Frame, replay func(put func(...room.Frame) error) (int64, error)) {
	c.mu.Lock()
	c.pinger = time.AfterFunc(pingEvery, c.pingDue)
	if replay == nil {
		c.q = append(head, c.q...)
		c.mu.Unlock()
		c.handOff()
		return
	}
	c.mu.Unlock()
	go func() {
		if err := c.put(head...); err != nil {
			c.stop(err)
			return
		}
		last, err := replay(c.put)
		if err != nil {
			c.stop(err)
			return
		}
		c.mu.Lock()
		c.replayed = last
		c.mu.Unlock()
		c.handOff()
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

// put writes frames (see writeFrames) with the write deadline, blocking:
// the replay's writes, made by the goroutine start runs. Once c is
// closing, it stops between frames with errClosing.
func (c *conn) put(frames ...room.Frame) error {
	if c.isClosing() {
		return errClosing
	}
	bp, _ := writeBufs.Get().(*[]byte)
	defer writeBufs.Put(bp)
	buf, _, err := writeFrames(deadlineWriter{c.nc, c.timeout}, (*bp)[:0], frames, &c.stopping)
	*bp = buf[:0]
	return err
}

// deadlineWriter writes with a deadline (timeout) per write, then clears
// it (a deadline left behind would fail the writers' non-blocking writes).
type deadlineWriter struct {
	nc      net.Conn
	timeout time.Duration
}

func (w deadlineWriter) Write(p []byte) (int, error) {
	if err := w.nc.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		return 0, err
	}
	n, err := w.nc.Write(p)
	if derr := w.nc.SetWriteDeadline(time.Time{}); err == nil {
		err = derr
	}
	return n, err
}

// tryWrite writes what p's connection takes without blocking and returns
// how much that was (0 when its buffer is full, or when c has no
// descriptor to write to).
func (c *conn) tryWrite(p []byte) (int, error) {
	if c.raw == nil {
		return 0, nil
	}
	var n int
	var werr error
	if len(p) == 0 {
		return 0, nil
	}
	err := c.raw.Write(func(fd uintptr) bool {
		for {
			n, werr = rawWrite(fd, p)
			if !errors.Is(werr, syscall.EINTR) {
				return true // never wait for the poller: the slow path does
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errors.Is(werr, syscall.EAGAIN):
		return 0, nil
	case werr != nil:
		return 0, werr
	}
	return max(n, 0), nil
}

// rawWrite is write(2) on a non-blocking socket without telling the Go
// scheduler: it cannot block (a full socket answers EAGAIN), and a
// scheduler told of every write (syscall.Write) hands the writer's
// processor to another thread whenever one takes over 20 µs, which a
// loopback write does (it runs the receiving side too): a thread switch
// per write. fd is held by RawConn.Write for the call, so it cannot be
// closed and reused meanwhile.
func rawWrite(fd uintptr, p []byte) (int, error) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return -1, errno
	}
	return int(n), nil
}

// errWouldBlock ends a writer's turn at c when the socket takes only part
// of a write: the rest is the slow path's (see finishSlowly).
var errWouldBlock = errors.New("socket buffer full")

// nbWriter writes to c without blocking; a write the socket takes only in
// part fails with errWouldBlock, and tail is its unwritten end (in p, not
// copied).
type nbWriter struct {
	c    *conn
	tail []byte
}

func (w *nbWriter) Write(p []byte) (int, error) {
	n, err := w.c.tryWrite(p)
	if err == nil && n < len(p) {
		w.tail, err = p[n:], errWouldBlock
	}
	return n, err
}

// flush is a writer's turn at c: it writes everything due (buf is the
// writer's buffer, returned for reuse), then hands c off.
func (c *conn) flush(buf []byte) []byte {
	c.mu.Lock()
	if c.closing {
		code := c.code
		c.mu.Unlock()
		return c.finish(buf, code)
	}
	ping, pong := c.ping, c.pong
	c.ping, c.pong = false, nil
	batch, skipTo := c.q, c.replayed
	c.q = nil
	c.mu.Unlock()

	buf = buf[:0]
	if ping {
		buf = appendControl(buf, websocket.PingMessage, nil)
	}
	if pong != nil {
		buf = appendControl(buf, websocket.PongMessage, []byte(*pong))
	}
	frames := batch[:0]
	for _, f := range batch {
		if f.Line == 0 || f.Line > skipTo {
			frames = append(frames, f)
		}
	}
	w := nbWriter{c: c}
	buf, rest, err := writeFrames(&w, buf, frames, nil)
	switch {
	case errors.Is(err, errWouldBlock):
		// The slow goroutine takes buf over (the tail may lie in it);
		// the writer goes on with another.
		go c.finishSlowly(buf, w.tail, rest)
		bp, _ := writeBufs.Get().(*[]byte)
		return (*bp)[:0]
	case err != nil:
		c.fail()
	default:
		c.handOff()
	}
	return buf
}

// finishSlowly writes what a writer's turn left because the socket could
// not take it at once: tail, the unwritten end of its last write (in buf
// or in a frame's data), then rest. Each write has the deadline; buf, the
// writer's buffer, is taken over and goes back to the pool. Once c is
// closing it stops at the next frame boundary, for the close frame to
// follow; then it hands c off.
func (c *conn) finishSlowly(buf, tail []byte, rest unwritten) {
	w := deadlineWriter{c.nc, c.timeout}
	_, err := w.Write(tail)
	if err == nil && len(rest.data) > 0 {
		_, err = w.Write(rest.data)
	}
	if err == nil {
		buf, _, err = writeFrames(w, buf[:0], rest.frames, &c.stopping)
	}
	buf = buf[:0]
	writeBufs.Put(&buf)
	if err != nil && !errors.Is(err, errClosing) {
		c.fail()
		return
	}
	c.handOff()
}

// fail tears c down after a failed write, without a close frame (the
// stream may end mid-frame).
func (c *conn) fail() {
	c.close(0)
	c.teardown()
}

// stop ends the start goroutine after err: errClosing leaves the close to
// a writer; after a failed write the connection is torn down at once.
func (c *conn) stop(err error) {
	if errors.Is(err, errClosing) {
		c.handOff()
		return
	}
	c.fail()
}

// closeTimeout bounds the write of a close frame the socket could not
// take at once.
const closeTimeout = time.Second

// finish sends the close frame (when code is not 0) and tears c down;
// a close frame the socket cannot take at once gets a second, by a
// goroutine of its own.
func (c *conn) finish(buf []byte, code int) []byte {
	if code == 0 {
		c.teardown()
		return buf
	}
	reason := ""
	if code == CloseTooSlow {
		reason = "too slow: reconnect with after_line"
	}
	buf = appendControl(buf[:0], websocket.CloseMessage, websocket.FormatCloseMessage(code, reason))
	n, err := c.tryWrite(buf)
	if err != nil || n == len(buf) {
		c.teardown()
		return buf
	}
	rest := append([]byte(nil), buf[n:]...)
	go func() {
		_, _ = deadlineWriter{c.nc, closeTimeout}.Write(rest) // the connection goes either way
		c.teardown()
	}()
	return buf
}

// teardown closes the connection, which also ends the reader's pending
// read: fasthttp closes a hijacked connection only after its handler
// returns (Close is a no-op before), so the read is ended by a deadline in
// the past. Only the holder of writing calls it, once.
func (c *conn) teardown() {
	c.mu.Lock()
	if c.pinger != nil {
		c.pinger.Stop()
	}
	c.mu.Unlock()
	if c.ws != nil {
		_ = c.ws.NetConn().SetReadDeadline(time.Now())
		_ = c.ws.NetConn().Close()
	}
	close(c.ended)
}

// writeChunk is the size of the buffers frames are encoded into.
const writeChunk = 32 << 10

var writeBufs = sync.Pool{New: func() any { b := make([]byte, 0, writeChunk); return &b }}

// writeFrames writes frames as final, unmasked WebSocket text frames
// (RFC 6455 §5.2, server to client, no extension) after what buf already
// holds, as many as fit in buf's capacity per write; a frame larger than
// that is written as its header, then its data. It returns buf, emptied,
// for reuse. When stop (if not nil) is set at a frame boundary, it stops
// there with errClosing. After a failed write, the unwritten returned is
// what was to follow that write.
func writeFrames(w io.Writer, buf []byte, frames []room.Frame, stop *atomic.Bool) ([]byte, unwritten, error) {
	for i, f := range frames {
		n := len(f.Data)
		if len(buf) > 0 && len(buf)+maxHeader+n > cap(buf) {
			if err := writeBoundary(w, buf, stop); err != nil {
				return buf[:0], unwritten{frames: frames[i:]}, err
			}
			buf = buf[:0]
		}
		buf = appendHeader(buf, websocket.TextMessage, n)
		if maxHeader+n > cap(buf) {
			// buf holds only the header: the data follows it directly.
			if err := writeBoundary(w, buf, stop); err != nil {
				return buf[:0], unwritten{data: f.Data, frames: frames[i+1:]}, err
			}
			buf = buf[:0]
			if _, err := w.Write(f.Data); err != nil {
				return buf, unwritten{frames: frames[i+1:]}, err
			}
			continue
		}
		buf = append(buf, f.Data...)
	}
	if len(buf) > 0 {
		if err := writeBoundary(w, buf, stop); err != nil {
			return buf[:0], unwritten{}, err
		}
	}
	return buf[:0], unwritten{}, nil
}

// unwritten is what was to follow a write that failed in writeFrames:
// data (a large frame's, when the write was its header), then frames.
type unwritten struct {
	data   []byte
	frames []room.Frame
}

// writeBoundary writes p, which starts at a frame boundary; stop set (if
// not nil) ends the writing there, with errClosing.
func writeBoundary(w io.Writer, p []byte, stop *atomic.Bool) error {
	if stop != nil && stop.Load() {
		return errClosing
	}
	_, err := w.Write(p)
	return err
}

// maxHeader is the longest header appendHeader writes.
const maxHeader = 10

// appendHeader appends the header of a final, unmasked frame of the given
// opcode and n bytes.
func appendHeader(b []byte, opcode, n int) []byte {
	fin := byte(0x80 | opcode) //nolint:gosec // G115: opcodes are 4 bits
	switch {
	case n < 126:
		return append(b, fin, byte(n)) //nolint:gosec // G115: 0 ≤ n < 126 here
	case n <= 0xFFFF:
		return binary.BigEndian.AppendUint16(append(b, fin, 126), uint16(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, fin, 127), uint64(n))
	}
}

// appendControl appends a control frame (ping, pong or close); its
// payload is at most 125 bytes (RFC 6455 §5.5), longer is cut.
func appendControl(b []byte, opcode int, payload []byte) []byte {
	payload = payload[:min(len(payload), 125)]
	return append(appendHeader(b, opcode, len(payload)), payload...)
}

// writers are the server's writer goroutines: connections with something
// to write wait in ready, in the order they became ready, and up to max
// goroutines take them in turn. A writer is started when a connection is
// queued and fewer than max run; it ends when the queue is empty.
type writers struct {
	max int

	mu      sync.Mutex
	ready   []*conn
	head    int // ready[head:] wait
	running int
}

// yieldEvery is how many connections a writer serves before it lets the
// goroutines that produce the frames run (its writes never block, so it
// would otherwise keep its processor through a long burst).
const yieldEvery = 16

func newWriters(n int) *writers { return &writers{max: max(n, 1)} }

// push queues c; c.mu is held by the caller, and c is in no queue.
func (w *writers) push(c *conn) {
	w.mu.Lock()
	w.ready = append(w.ready, c)
	start := w.running < w.max
	if start {
		w.running++
	}
	w.mu.Unlock()
	if start {
		go w.run()
	}
}

// pop takes the next connection; nil (and the caller is to end) when none
// waits.
func (w *writers) pop() *conn {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.head == len(w.ready) {
		w.running--
		if cap(w.ready) > 4096 {
			w.ready = nil // a burst's array is not kept while idle
		}
		w.ready, w.head = w.ready[:0], 0
		return nil
	}
	c := w.ready[w.head]
	w.ready[w.head] = nil
	w.head++
	if w.head >= 1024 && w.head*2 >= len(w.ready) {
		n := copy(w.ready, w.ready[w.head:])
		clear(w.ready[n:])
		w.ready, w.head = w.ready[:n], 0
	}
	return c
}

// run is one writer goroutine.
func (w *writers) run() {
	bp, _ := writeBufs.Get().(*[]byte)
	defer writeBufs.Put(bp)
	for i := 1; ; i++ {
		c := w.pop()
		if c == nil {
			return
		}
		*bp = c.flush((*bp)[:0])[:0]
		if i%yieldEvery == 0 {
			runtime.Gosched()
		}
	}
}
