// Package termws speaks the terminal WebSocket protocol over one
// connection to a terminal: a `connected` frame first, the scrollback
// replay, then the shell's output as binary frames and JSON control frames
// (heartbeat, pong, error, resync, exit) as text frames; keystrokes in as
// text or binary frames, and the resize and ping control messages.
//
// Each connection has one reader (the upgrade handler's goroutine, which
// types input into the PTY) and one writer goroutine, the only one that
// writes to the socket. The writer pulls output from the terminal's ring at
// its own pace, so a slow client costs the server one frame buffer, never
// a queue, and never slows the shell; a client that falls more than the
// ring behind is told what it missed (resync). Every read and write has a
// deadline; the raw connection is closed on teardown, which unblocks both.
// Hub tracks the connections so that a shutdown can close them all.
package termws

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/services/terminal/internal/terminals"
)

// Limits of a connection.
const (
	// MaxMessage is the largest message a client may send (a paste); a
	// larger one closes the connection with 1009.
	MaxMessage = 1 << 20
	// MaxFrame is the largest output frame the server sends, and the only
	// output buffer a connection holds.
	MaxFrame = 64 << 10
	// controlQueue is how many control frames may wait for the writer;
	// a client that floods pings while not reading is not read further
	// until they drain.
	controlQueue = 16
	// maxControlSize bounds a text frame examined as a control message;
	// a longer one starting with '{' is typed, as any input.
	maxControlSize = 4 << 10
	// closeWait is how long a close handshake may take.
	closeWait = time.Second
	// floodGap, floodMin and gatherWait batch a flood of output into
	// large frames: output that comes less than floodGap after an output
	// frame of floodMin bytes or more waits up to gatherWait for a frame's
	// worth (MaxFrame) before it is sent. A PTY read is at most 4 KiB, and a frame per read costs
	// the browser more than rendering the bytes (each message crosses
	// the gateway and the browser's processes: measured, a page that only
	// counted bytes used a CPU-second per 5 MB with 4.7 KB frames).
	// Output after a pause or after a small frame (a keystroke's echo,
	// even typed fast) goes out at once.
	floodGap   = 10 * time.Millisecond
	floodMin   = 2 << 10
	gatherWait = 4 * time.Millisecond
)

// Close codes sent by the server.
const (
	CloseShellExited = websocket.CloseNormalClosure // after the exit frame
	CloseGoingAway   = websocket.CloseGoingAway     // the host shuts down
	CloseInternal    = websocket.CloseInternalServerErr
)

// Config sets a hub's timings.
type Config struct {
	// Heartbeat is the interval of heartbeat frames and WebSocket pings.
	Heartbeat time.Duration
	// ReadTimeout drops a client that sends nothing, not even a pong, for
	// that long.
	ReadTimeout time.Duration
	// WriteTimeout drops a client that does not take a frame for that long.
	WriteTimeout time.Duration
	// Home and Host fill the connected frame.
	Home string
	Host string
	Log  *slog.Logger
}

// Hub serves and tracks terminal connections.
type Hub struct {
	cfg    Config
	ctx    context.Context // ends at Shutdown: attaches in progress give up
	cancel context.CancelFunc

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	wg     sync.WaitGroup

	chunks sync.Pool // *[]byte of MaxFrame
}

// NewHub returns a hub.
func NewHub(cfg Config) *Hub {
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{cfg: cfg, ctx: ctx, cancel: cancel, conns: map[*conn]struct{}{}}
	h.chunks.New = func() any { b := make([]byte, MaxFrame); return &b }
	return h
}

// Options are what one connection brings besides its socket.
type Options struct {
	// Attach subscribes to the session's terminal (starting it if need be).
	Attach func(ctx context.Context) (*terminals.Attachment, error)
	// LostHost names the dead host the session's terminal was on, when the
	// gateway sent the session here because of it.
	LostHost string
	// Flow: the client dialled with flow=1 (it acknowledges; Attach made
	// a flow subscriber).
	Flow bool
	Log  *slog.Logger
}

// ClientStats describes one connection, for tests and diagnostics.
type ClientStats struct {
	Session string
	// Remote is the client's address (the gateway's, through it).
	Remote string
	// Pending is how much output waits for this client in the ring (at
	// most the ring's size), Missed how much it lost by falling further
	// behind.
	Pending, Missed int64
	// Held is what the server holds for this client outside the ring now
	// (the frame being written and the queued control frames), and
	// MaxHeld the most it ever held.
	Held, MaxHeld int64
	// Flow tells a flow connection; Offset is the stream offset sent to
	// it, Acked its last acknowledgement.
	Flow          bool
	Offset, Acked int64
	// Skips and Skipped count the plain output left out for a client
	// that asked for skip_lines (times, bytes).
	Skips, Skipped int64
}

// Clients describes the open connections.
func (h *Hub) Clients() []ClientStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ClientStats, 0, len(h.conns))
	for c := range h.conns {
		s := ClientStats{Remote: c.raw.RemoteAddr().String(), Held: c.held.Load(), MaxHeld: c.maxHeld.Load()}
		if sub := c.sub.Load(); sub != nil {
			s.Session = sub.Terminal().Session()
			s.Pending, s.Missed = sub.Pending()
			s.Flow, s.Offset, s.Acked = sub.Flow(), sub.Offset(), sub.Acked()
			s.Skips, s.Skipped = sub.Skipped()
		}
		out = append(out, s)
	}
	return out
}

// Len is the number of open connections.
func (h *Hub) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// conn is one client connection.
type conn struct {
	hub *Hub
	ws  *websocket.Conn
	raw net.Conn // the TCP connection under fasthttp's hijack wrapper
	log *slog.Logger

	sub      atomic.Pointer[terminals.Sub]
	ctrl     chan []byte
	closeReq chan int // a close code the writer should send, then stop
	stopped  chan struct{}
	stopOnce sync.Once

	held, maxHeld atomic.Int64
	// closing is set once the server has sent its close frame: the reader
	// then no longer extends its deadline, so the close handshake is
	// bounded by closeWait whatever the client does.
	closing atomic.Bool

	// The writer's: when the last output frame went out, and its size.
	lastOutput time.Time
	lastSize   int
}

// rawConn digs the TCP connection out of fasthttp's hijacked connection,
// whose own Close does nothing.
func rawConn(c net.Conn) net.Conn {
	if u, ok := c.(interface{ UnsafeConn() net.Conn }); ok {
		return u.UnsafeConn()
	}
	return c
}

// Serve runs the protocol on ws until the client leaves, the terminal
// ends or the hub shuts down. It is the body of the upgrade handler and
// returns only when no goroutine of the connection is left.
func (h *Hub) Serve(ws *websocket.Conn, o Options) {
	c := &conn{
		hub: h, ws: ws, raw: rawConn(ws.NetConn()), log: o.Log,
		ctrl: make(chan []byte, controlQueue), closeReq: make(chan int, 1), stopped: make(chan struct{}),
	}
	defer func() { _ = c.raw.Close() }()
	if !h.add(c) {
		c.fail(CloseGoingAway, CodeUnavailable, "the terminal host is shutting down")
		return
	}
	defer h.remove(c)

	a, err := o.Attach(h.ctx)
	if err != nil {
		switch {
		case errors.Is(err, terminals.ErrClosed), errors.Is(err, context.Canceled):
			c.fail(CloseGoingAway, CodeUnavailable, "the terminal host is shutting down")
		default:
			c.log.Error("start terminal", "err", err)
			c.fail(CloseInternal, CodeInternal, "the terminal could not be started")
		}
		return
	}
	defer a.Sub.Close()
	c.sub.Store(a.Sub)

	first := [][]byte{encode(Connected{
		Type: TypeConnected, Session: a.Info.Session, Cwd: a.Info.Cwd, Home: h.cfg.Home, PID: a.Info.PID,
		HasScrollback: a.HasScrollback, ScrollbackTruncated: a.Truncated,
		Stream: a.Info.Stream, Offset: a.Offset, Created: a.Created,
		Rows: a.Info.Rows, Cols: a.Info.Cols, Host: h.cfg.Host, Flow: a.Sub.Flow(),
	})}
	if msg := lostMessage(a, o.LostHost, h.cfg.Host); msg != "" {
		first = append(first, errorFrame(CodeTerminalLost, msg))
	}

	var wg sync.WaitGroup
	// The writer stops the connection itself when a write fails; after a
	// close frame it leaves the reader to take the client's answer (or
	// time out), so the client reads all that was sent before the close.
	wg.Go(func() { c.writeLoop(a.Sub, first, a.Screen) })
	c.readLoop(a.Sub)
	c.stop()
	wg.Wait()
}

// lostMessage explains, for a connection that got a new shell, why the
// session's previous terminal is gone: its host died (the gateway says
// which), or this very host restarted since it started it. "" when no
// terminal was lost.
func lostMessage(a *terminals.Attachment, lostHost, self string) string {
	switch {
	case !a.Created:
		return ""
	case lostHost != "":
		return "the terminal of this session was on host " + lostHost + ", which stopped answering; its shell and output are gone, and this is a new shell"
	case a.PreviousHost != "" && a.PreviousHost == self:
		return "the terminal of this session was on host " + self + ", which restarted since; its shell and output are gone, and this is a new shell"
	}
	return ""
}

// stop ends the connection's I/O: closing the raw connection fails every
// pending and future read and write at once.
func (c *conn) stop() {
	c.stopOnce.Do(func() {
		close(c.stopped)
		_ = c.raw.Close()
	})
}

// fail tells the client why it cannot be served, closes, and waits up to
// closeWait for the client's answer to the close.
func (c *conn) fail(code int, errCode, message string) {
	deadline := time.Now().Add(closeWait)
	_ = c.ws.SetWriteDeadline(deadline)
	if c.ws.WriteMessage(websocket.TextMessage, errorFrame(errCode, message)) != nil {
		return
	}
	if c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, message), deadline) != nil {
		return
	}
	_ = c.raw.SetReadDeadline(deadline)
	for {
		if _, _, err := c.ws.NextReader(); err != nil {
			return
		}
	}
}

func (h *Hub) add(c *conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.conns[c] = struct{}{}
	h.wg.Add(1)
	return true
}

func (h *Hub) remove(c *conn) {
	h.mu.Lock()
	delete(h.conns, c)
	h.mu.Unlock()
	h.wg.Done()
}

// Shutdown refuses new connections, asks every open one to close with
// 1001 and waits for them until ctx ends, then cuts those left.
func (h *Hub) Shutdown(ctx context.Context) {
	h.mu.Lock()
	h.closed = true
	conns := make([]*conn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	h.cancel()
	for _, c := range conns {
		select {
		case c.closeReq <- CloseGoingAway:
		default:
		}
	}
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	for _, c := range conns {
		c.stop()
	}
	<-done
}

// send queues a control frame for the writer; it waits while the queue is
// full, and gives up when the connection stops.
func (c *conn) send(frame []byte) {
	c.addHeld(int64(len(frame)))
	select {
	case c.ctrl <- frame:
	case <-c.stopped:
		c.addHeld(-int64(len(frame)))
	}
}

func (c *conn) addHeld(n int64) {
	if v := c.held.Add(n); v > c.maxHeld.Load() {
		c.maxHeld.Store(v) // only an indicator: a lost race under-reports by one frame
	}
}

// writeLoop is the connection's only writer.
func (c *conn) writeLoop(sub *terminals.Sub, first [][]byte, screen *terminals.Screen) {
	for _, f := range first {
		if c.write(websocket.TextMessage, f) != nil {
			return
		}
	}
	if screen != nil && c.writeScreen(screen) != nil {
		return
	}
	bp := c.hub.chunks.Get().(*[]byte)
	defer c.hub.chunks.Put(bp)
	buf := *bp
	term := sub.Terminal()
	tick := time.NewTicker(c.hub.cfg.Heartbeat)
	defer tick.Stop()
	gather := time.NewTimer(time.Hour)
	gather.Stop()
	for {
		select {
		case <-c.stopped:
			return
		case code := <-c.closeReq:
			c.close(code, "the terminal host is shutting down")
			return
		case f := <-c.ctrl:
			c.addHeld(-int64(len(f)))
			if c.write(websocket.TextMessage, f) != nil {
				return
			}
		case <-sub.Wake():
			if c.flooding() && !c.gatherOutput(sub, gather, term) {
				return
			}
			if _, err := c.output(sub, buf, false); err != nil {
				return
			}
		case <-tick.C:
			if c.write(websocket.TextMessage, frameHeartbeat) != nil {
				return
			}
			if c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.hub.cfg.WriteTimeout)) != nil {
				c.stop()
				return
			}
		case <-term.Done():
			// The reader has finished: the ring holds all output. Send the
			// rest, then the exit.
			for {
				more, err := c.output(sub, buf, true)
				if err != nil {
					return
				}
				if !more {
					break
				}
			}
			if c.write(websocket.TextMessage, encode(Exit{Type: TypeExit, Code: term.ExitCode()})) != nil {
				return
			}
			c.close(CloseShellExited, "shell exited")
			return
		}
	}
}

// flooding tells that output is pouring out: the previous output frame
// was large and went out less than floodGap ago. A keystroke's echo
// follows a small frame, or a pause.
func (c *conn) flooding() bool {
	return c.lastSize >= floodMin && time.Since(c.lastOutput) < floodGap
}

// gatherOutput waits, during a flood, until a frame's worth of output is
// ready, for at most gatherWait, and not when no more can come (the
// client's window is full, or flow control paused the shell); control
// frames and a close asked for wait meanwhile, as they do behind any
// frame being written. False when the connection stopped.
func (c *conn) gatherOutput(sub *terminals.Sub, t *time.Timer, term *terminals.Terminal) bool {
	t.Reset(gatherWait)
	defer t.Stop()
	for {
		if n, growing := sub.Ready(); n >= MaxFrame || !growing {
			return true
		}
		select {
		case <-c.stopped:
			return false
		case <-term.Done():
			return true
		case <-t.C:
			return true
		case <-sub.Wake():
		}
	}
}

// output sends the next chunk of output after the cursor, preceded by a
// resync frame when a client without flow control had fallen behind the
// ring; a flow client that fell behind gets the screen instead. drain
// (the shell has ended) sends a flow client all that is held, whatever it
// acknowledged. more tells that something was sent.
func (c *conn) output(sub *terminals.Sub, buf []byte, drain bool) (more bool, err error) {
	if sub.Flow() {
		n, screen, skip := sub.NextFlow(buf, drain)
		if screen != nil {
			return true, c.writeScreen(screen)
		}
		if skip != nil {
			return true, c.write(websocket.TextMessage, encode(Skip{Type: TypeSkip, From: skip.From, Offset: skip.To, SGR: string(skip.Pen)}))
		}
		return n > 0, c.writeOutput(buf[:n])
	}
	n, skipped := sub.Next(buf)
	if skipped > 0 {
		f := encode(Resync{Type: TypeResync, Skipped: skipped, Offset: sub.Offset() - int64(n)})
		if err := c.write(websocket.TextMessage, f); err != nil {
			return false, err
		}
	}
	return n > 0, c.writeOutput(buf[:n])
}

func (c *conn) writeOutput(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	c.lastOutput, c.lastSize = time.Now(), len(p)
	c.addHeld(int64(len(p)))
	err := c.write(websocket.BinaryMessage, p)
	c.addHeld(-int64(len(p)))
	return err
}

// writeScreen sends a screen frame and the serialized screen after it.
func (c *conn) writeScreen(s *terminals.Screen) error {
	f := encode(Screen{Type: TypeScreen, Offset: s.Offset, Rows: s.Rows, Cols: s.Cols, Bytes: len(s.Data)})
	if err := c.write(websocket.TextMessage, f); err != nil {
		return err
	}
	c.addHeld(int64(len(s.Data)))
	err := c.write(websocket.BinaryMessage, s.Data)
	c.addHeld(-int64(len(s.Data)))
	return err
}

// write sends one frame within the write timeout; a failure stops the
// connection (a timed-out WebSocket cannot be written again).
func (c *conn) write(kind int, data []byte) error {
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.hub.cfg.WriteTimeout))
	err := c.ws.WriteMessage(kind, data)
	if err != nil {
		c.stop()
	}
	return err
}

// close sends a close frame and gives the client closeWait to answer it
// before the reader gives up.
func (c *conn) close(code int, reason string) {
	c.closing.Store(true)
	deadline := time.Now().Add(closeWait)
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), deadline)
	_ = c.raw.SetReadDeadline(deadline)
}

// readLoop reads the client's messages until the connection fails or
// closes: input goes to the terminal, control messages are answered.
func (c *conn) readLoop(sub *terminals.Sub) {
	timeout := c.hub.cfg.ReadTimeout
	c.ws.SetReadLimit(MaxMessage)
	extend := func() error {
		if c.closing.Load() {
			return nil
		}
		return c.ws.SetReadDeadline(time.Now().Add(timeout))
	}
	c.ws.SetPongHandler(func(string) error { return extend() })
	var buf []byte
	for {
		if extend() != nil {
			return
		}
		kind, r, err := c.ws.NextReader()
		if err != nil {
			return
		}
		if buf == nil {
			buf = make([]byte, maxControlSize)
		}
		if err := c.message(sub, kind, r, buf); err != nil {
			return
		}
	}
}

// message handles one client message read from r.
func (c *conn) message(sub *terminals.Sub, kind int, r io.Reader, buf []byte) error {
	term := sub.Terminal()
	n, err := io.ReadFull(r, buf)
	complete := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	if err != nil && !complete {
		return err
	}
	if kind == websocket.TextMessage && complete {
		if ctl, ok := parseControl(buf[:n]); ok {
			c.control(sub, ctl)
			return nil
		}
	}
	if !c.input(term, buf[:n]) {
		_, err = io.Copy(io.Discard, r)
		return err
	}
	if complete {
		return nil
	}
	// A long message (a paste) streams through in pieces.
	for {
		n, err := r.Read(buf)
		if n > 0 && !c.input(term, buf[:n]) {
			_, err = io.Copy(io.Discard, r)
			return err
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// input types p into the terminal; false when it did not take it all.
func (c *conn) input(term *terminals.Terminal, p []byte) bool {
	if len(p) == 0 {
		return true
	}
	n, err := term.Write(p)
	if err == nil {
		return true
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.send(errorFrame(CodeInputTimeout, "the terminal did not take the input in time (nothing is reading it); "+
			strconv.Itoa(len(p)-n)+" bytes were dropped"))
	}
	// Otherwise the terminal has ended: its exit frame is on the way.
	return false
}

func (c *conn) control(sub *terminals.Sub, ctl control) {
	term := sub.Terminal()
	switch {
	case ctl.err != "":
		c.send(errorFrame(CodeBadRequest, ctl.err))
	case ctl.kind == TypePing:
		c.send(framePong)
	case ctl.kind == TypeAck:
		if err := sub.Ack(ctl.offset); err != nil {
			c.send(errorFrame(CodeBadRequest, ackMessage(err, ctl.offset, sub)))
		}
	case ctl.kind == TypeResize:
		sub.SetRows(int(ctl.rows))
		if err := term.Resize(ctl.rows, ctl.cols); err != nil && !errors.Is(err, terminals.ErrEnded) {
			c.log.Warn("resize terminal", "err", err)
			c.send(errorFrame(CodeInternal, "the terminal could not be resized"))
		}
	}
}

func ackMessage(err error, off int64, sub *terminals.Sub) string {
	switch {
	case errors.Is(err, terminals.ErrNotFlow):
		return "ack is only for connections opened with flow=1; nothing changed"
	case errors.Is(err, terminals.ErrAckAhead):
		return "ack offset " + strconv.FormatInt(off, 10) + " is beyond the output sent (" +
			strconv.FormatInt(sub.Offset(), 10) + "); nothing changed"
	default:
		return "ack offset " + strconv.FormatInt(off, 10) + " is before the previous ack (" +
			strconv.FormatInt(sub.Acked(), 10) + "); nothing changed"
	}
}
