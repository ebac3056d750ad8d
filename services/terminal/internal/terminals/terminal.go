package terminals

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/svc-code/svc-code/services/terminal/internal/pty"
	"github.com/svc-code/svc-code/services/terminal/internal/scrollback"
	"github.com/svc-code/svc-code/services/terminal/internal/vtscreen"
)

// readSize is the PTY read buffer: one read takes whatever the kernel has
// (a Linux pty hands out at most a few KiB at a time).
const readSize = 64 << 10

// emuChunk is the most output the emulator takes at a time (and at most
// half the ring): the larger the chunk, the more plain text its shortcut
// skips (vtscreen.Screen.Write), as it emulates the last lines of each
// run whatever its length.
const emuChunk = 1 << 20

// drainTimeout bounds the wait for the last output after the shell's
// session has ended (the reader normally sees EIO at once).
const drainTimeout = time.Second

// Info describes a terminal.
type Info struct {
	Session string
	PID     int
	Cwd     string
	Started time.Time
	// Stream identifies this PTY's output stream: offsets are meaningful
	// only within one stream (a new shell for the session starts a new one).
	Stream  string
	Clients int
	Rows    uint16
	Cols    uint16
}

// Terminal is one session's PTY: the shell, its scrollback ring and the
// subscribers reading from the ring.
type Terminal struct {
	m       *Manager
	session string
	cwd     string
	started time.Time
	stream  string
	pty     *pty.PTY
	// previousHost is the host that held the session before this terminal
	// started, as the registry said.
	previousHost string

	mu      sync.Mutex
	ring    *scrollback.Ring
	subs    map[*Sub]struct{}
	rows    uint16
	cols    uint16
	closing bool // the shell exited or was told to end: no new subscribers
	killed  bool
	ended   bool
	code    int
	idle    *time.Timer
	idleGen int

	inMu sync.Mutex // serialises input: one message is typed whole

	// sigMu orders signals against the reaping of the shell: a session is
	// signalled by its leader's pid, which is only safe until it is reaped.
	sigMu  sync.RWMutex
	reaped bool

	// Flow control (guarded by mu): the reader stops reading the PTY
	// while paused; unpause is closed when it may go on.
	paused  bool
	unpause chan struct{}
	// resizes are the resizes the emulator has not applied yet, each at
	// the stream offset where it happened.
	resizes []resizeAt
	// For skipping clients (skip.go), guarded by mu: tr is the parser's
	// state at the ring's end, marks the state at offsets along the ring
	// (one every markEvery bytes), and skipBuf a scratch buffer.
	tr      vtscreen.Tracker
	marks   []parserMark
	skipBuf []byte

	// The server's screen: scr, fed by emuLoop from the ring, is the
	// screen after the first emuOff bytes of the stream. emuMu is taken
	// before mu when both are held.
	emuMu      sync.Mutex
	scr        *vtscreen.Screen
	emuBuf     []byte // the emulator's chunk of output
	emuOff     int64
	emuSkipped int64 // bytes the emulator could not keep up with (guarded by emuMu)
	emuWake    chan struct{}
	// Guarded by mu: the offset the emulator has taken from the ring
	// (emuOff once it has fed it), and whether it waits for output.
	emuAt   int64
	emuIdle bool

	readDone chan struct{} // the reader has stopped
	done     chan struct{} // the shell has ended: code is set, all output is in the ring
	gone     chan struct{} // the session's claim is released and the slot is free
}

type parserMark struct {
	at int64
	tr vtscreen.Tracker
}

type resizeAt struct {
	at         int64
	rows, cols uint16
}

func newTerminal(m *Manager, session, cwd string, p *pty.PTY, rows, cols uint16) *Terminal {
	return &Terminal{
		m: m, session: session, cwd: cwd, started: m.cfg.Now().UTC(), stream: newStreamID(), pty: p,
		ring: scrollback.New(m.cfg.Scrollback), subs: map[*Sub]struct{}{}, rows: rows, cols: cols,
		unpause: make(chan struct{}), scr: vtscreen.New(int(rows), int(cols)), emuWake: make(chan struct{}, 1),
		emuBuf: make([]byte, min(emuChunk, max(m.cfg.Scrollback/2, 4096))), emuIdle: true,
		readDone: make(chan struct{}), done: make(chan struct{}), gone: make(chan struct{}),
	}
}

func newStreamID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Session is the session the terminal belongs to.
func (t *Terminal) Session() string { return t.session }

// Done is closed when the shell has ended and all its output is in the
// ring; ExitCode is then valid.
func (t *Terminal) Done() <-chan struct{} { return t.done }

// ExitCode is the shell's exit code (128+n for a signal n), valid once
// Done is closed.
func (t *Terminal) ExitCode() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.code
}

// Produced is how many bytes the shell has written since the terminal
// started (the stream offset of its live end).
func (t *Terminal) Produced() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ring.End()
}

// Info returns the terminal's description now.
func (t *Terminal) Info() Info {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.infoLocked()
}

func (t *Terminal) infoLocked() Info {
	return Info{
		Session: t.session, PID: t.pty.Pid(), Cwd: t.cwd, Started: t.started, Stream: t.stream,
		Clients: len(t.subs), Rows: t.rows, Cols: t.cols,
	}
}

// run starts the terminal's goroutines: the reader, which moves output
// into the ring, the emulator, which follows the ring, and the waiter,
// which ends the terminal with its shell.
func (t *Terminal) run() {
	t.m.wg.Add(3)
	go func() {
		defer t.m.wg.Done()
		t.readLoop()
	}()
	go func() {
		defer t.m.wg.Done()
		t.emuLoop()
	}()
	go func() {
		defer t.m.wg.Done()
		t.waitLoop()
	}()
	t.mu.Lock()
	t.armIdleLocked() // in case no one attaches
	t.mu.Unlock()
}

// readLoop moves the PTY's output into the ring until the PTY is hung up
// or closed. It never waits for a subscriber, nor for the emulator: the
// ring takes every byte. It only stops reading while flow control says
// the most advanced flow client is too far ahead of its acknowledgement.
func (t *Terminal) readLoop() {
	defer close(t.readDone)
	buf := make([]byte, readSize)
	for {
		room := t.waitFlow()
		n, err := t.pty.Read(buf[:min(room, len(buf))])
		if n > 0 {
			t.publish(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (t *Terminal) publish(p []byte) {
	t.mu.Lock()
	t.markLocked()
	t.tr.Scan(p)
	t.ring.Write(p)
	for s := range t.subs {
		signal(s.wake)
	}
	t.checkFlowLocked()
	wake := t.emuIdle || t.ring.End()-t.emuAt >= t.emuBatchLocked()
	t.mu.Unlock()
	if wake {
		signal(t.emuWake)
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default: // already signalled
	}
}

// waitFlow returns when the reader may read, at once unless flow control
// paused it, with how much it may read: up to the high watermark beyond
// the pacing client's acknowledgement, so that this client never falls
// behind the ring (the watermark is at most the ring's size).
func (t *Terminal) waitFlow() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.paused {
		ch := t.unpause
		t.mu.Unlock()
		<-ch
		t.mu.Lock()
	}
	if lead := t.leadLocked(); lead >= 0 && !t.closing {
		return int(max(t.m.cfg.FlowHigh-(t.ring.End()-lead), 1))
	}
	return readSize
}

// leadLocked is the largest acknowledgement of the attached flow
// clients that want every byte, or when there is none of those, of the
// skipping ones (skip.go); -1 when there is no flow client. A client that
// lets plain floods be left out never sets the pace for one that wants
// every byte: it would always be ahead of it.
func (t *Terminal) leadLocked() int64 {
	every, skipping := int64(-1), int64(-1)
	for s := range t.subs {
		switch {
		case !s.flow:
		case s.keep == 0:
			every = max(every, s.acked)
		default:
			skipping = max(skipping, s.acked)
		}
	}
	if every >= 0 {
		return every
	}
	return skipping
}

// checkFlowLocked pauses or resumes the reader. The pace is set by the
// attached flow client furthest ahead in acknowledging: the reader
// stops while more than the high watermark of output is unacknowledged
// by it, and goes on once less than the low watermark is. Without a flow
// client, or once the terminal is closing, it never stops.
func (t *Terminal) checkFlowLocked() {
	lead := t.leadLocked()
	switch ahead := t.ring.End() - lead; {
	case lead < 0 || t.closing:
		t.setPausedLocked(false)
	case !t.paused && ahead >= t.m.cfg.FlowHigh:
		t.setPausedLocked(true)
	case t.paused && ahead < t.m.cfg.FlowLow:
		t.setPausedLocked(false)
	}
}

func (t *Terminal) setPausedLocked(p bool) {
	if p == t.paused {
		return
	}
	t.paused = p
	if p {
		t.unpause = make(chan struct{})
	} else {
		close(t.unpause)
	}
}

// Paused tells whether flow control holds the reader now.
func (t *Terminal) Paused() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.paused
}

// emuLoop feeds the ring's output to the server's screen, off the
// reader's path. When it falls more than emuMaxLag behind (output faster
// than the emulator for a while), it skips to the most recent output,
// from a line start: the screen then shows the latest output, but modes
// set in what it skipped are missed. EmulatorSkipped counts such bytes.
func (t *Terminal) emuLoop() {
	maxLag := t.emuMaxLag()
	for {
		select {
		case <-t.emuWake:
		case <-t.done:
			return
		}
		// Let output gather, so that the emulator takes it in large
		// pieces (in which its plain-text shortcut skips most of a
		// flood), unless it is only a little: then after emuDelay. A
		// screen snapshot catches up first, so this costs no freshness.
		if !t.emuGather() {
			return
		}
		t.emuMu.Lock()
		for t.emuStepLocked(maxLag) {
		}
		t.emuMu.Unlock()
		t.mu.Lock()
		if t.emuAt == t.ring.End() {
			t.emuIdle = true // publish wakes it at the next output
		} else {
			signal(t.emuWake)
		}
		t.mu.Unlock()
	}
}

// emuDelay: the emulator runs once half its allowed lag waits for it, or
// emuDelay after the first byte.
const emuDelay = 30 * time.Millisecond

// emuGather waits until half the emulator's allowed lag waits for it or
// emuDelay has passed; false when the terminal has ended. publish wakes
// it only when the first output arrives and when enough has.
func (t *Terminal) emuGather() bool {
	timer := time.NewTimer(emuDelay)
	defer timer.Stop()
	for {
		t.mu.Lock()
		t.emuIdle = false
		ready := t.ring.End()-t.emuAt >= t.emuBatchLocked()
		t.mu.Unlock()
		if ready {
			return true
		}
		select {
		case <-t.emuWake:
		case <-timer.C:
			return true
		case <-t.done:
			return false
		}
	}
}

// emuBatchLocked is how much output makes the emulator run at once.
func (t *Terminal) emuBatchLocked() int64 { return t.emuMaxLag() / 2 }

// catchUpLocked feeds the emulator all the output there is; emuMu is held.
func (t *Terminal) catchUpLocked() {
	maxLag := t.emuMaxLag()
	for t.emuStepLocked(maxLag) {
	}
}

// emuMaxLag is how far the emulator may fall behind before it skips: the
// ring less two reads (so that the bytes it needs are still there when it
// reads them, and a screen's offset is still held when a client reads on
// from it), at least half the ring.
func (t *Terminal) emuMaxLag() int64 {
	size := int64(t.ring.Size())
	return max(size/2, size-2*readSize)
}

// emuStepLocked feeds the emulator one chunk (and the resizes due);
// false when it has caught up. emuMu is held.
func (t *Terminal) emuStepLocked(maxLag int64) bool {
	buf := t.emuBuf
	off := t.emuOff
	var skipTo int64 = -1
	var due []resizeAt
	t.mu.Lock()
	start, end := t.ring.Start(), t.ring.End()
	if off < start || end-off > maxLag {
		skipTo = max(start, end-maxLag/4)
		skipTo = t.lineStartLocked(skipTo, end)
		for len(t.resizes) > 0 && t.resizes[0].at <= skipTo {
			due = append(due, t.resizes[0])
			t.resizes = t.resizes[1:]
		}
		off = skipTo
	}
	limit := end
	if len(t.resizes) > 0 && t.resizes[0].at < limit {
		limit = t.resizes[0].at
	}
	n := t.ring.ReadAt(buf[:min(int64(len(buf)), limit-off)], off)
	if len(t.resizes) > 0 && t.resizes[0].at == off+int64(n) {
		due = append(due, t.resizes[0])
		t.resizes = t.resizes[1:]
	}
	t.emuAt = off + int64(n)
	t.mu.Unlock()
	if n == 0 && len(due) == 0 && skipTo < 0 {
		return false
	}
	if skipTo >= 0 {
		t.emuSkipped += skipTo - t.emuOff
		// Cancel any sequence cut in the middle, back to the line start.
		t.scr.Write([]byte("\x18\r"))
		for _, r := range due {
			t.scr.Resize(int(r.rows), int(r.cols))
		}
		due = nil
	}
	t.scr.Write(buf[:n])
	for _, r := range due {
		t.scr.Resize(int(r.rows), int(r.cols))
	}
	t.emuOff = off + int64(n)
	return true
}

// lineStartLocked moves off forward past the next newline held in the
// ring before end (within 4 KiB), so that skipping lands at a line start.
func (t *Terminal) lineStartLocked(off, end int64) int64 {
	var b [4096]byte
	n := t.ring.ReadAt(b[:min(int64(len(b)), end-off)], off)
	for i := range n {
		if b[i] == '\n' {
			return off + int64(i) + 1
		}
	}
	return off
}

// EmulatorSkipped is how many bytes of output the server's screen skipped
// because it could not keep up.
func (t *Terminal) EmulatorSkipped() int64 {
	t.emuMu.Lock()
	defer t.emuMu.Unlock()
	return t.emuSkipped
}

// Screen is a terminal's screen, serialized at a stream offset.
type Screen struct {
	// Offset is the stream offset the screen corresponds to: the output
	// that follows it starts there.
	Offset     int64
	Rows, Cols int
	// Data are escape sequences that, written to a freshly reset
	// terminal of Rows×Cols, reproduce the screen and its modes.
	Data []byte
}

// snapshotLocked serializes the screen; emuMu is held.
func (t *Terminal) snapshotLocked() *Screen {
	rows, cols := t.scr.Size()
	return &Screen{Offset: t.emuOff, Rows: rows, Cols: cols, Data: t.scr.Serialize()}
}

// waitLoop waits for the shell, ends what it left in its session, lets the
// reader drain, reaps the shell and finishes the terminal.
func (t *Terminal) waitLoop() {
	log := t.m.cfg.Log.With("session_id", t.session, "pid", t.pty.Pid())
	if err := t.pty.WaitExited(); err != nil {
		log.Error("wait for shell", "err", err)
	}
	t.mu.Lock()
	t.closing = true
	t.stopIdleLocked()
	t.checkFlowLocked() // the reader drains what is left, whoever reads it
	t.mu.Unlock()
	// The shell is gone; hang up the rest of its session as a closing
	// terminal would, so no job outlives it holding the terminal.
	if err := t.pty.Hangup(t.m.cfg.KillGrace); err != nil {
		log.Warn("end shell session", "err", err)
	}
	// With every holder of the terminal gone the reader sees EIO after the
	// last byte; a process that escaped the session must not hold us up.
	_ = t.pty.SetReadDeadline(time.Now().Add(drainTimeout))
	<-t.readDone
	t.sigMu.Lock()
	t.reaped = true
	t.sigMu.Unlock()
	code := t.pty.Reap()
	if err := t.pty.Close(); err != nil {
		log.Warn("close pty", "err", err)
	}
	t.finish(code)
	log.Info("terminal ended", "exit_code", code)
}

// Kill ends the terminal: SIGHUP to every process of the shell's session
// (a hang-up, as when a terminal window closes), SIGKILL to those left
// after the manager's kill grace. It returns at once; Done tells when the
// terminal has ended.
func (t *Terminal) Kill() {
	t.mu.Lock()
	if t.killed || t.ended {
		t.mu.Unlock()
		return
	}
	t.killed, t.closing = true, true
	t.stopIdleLocked()
	t.checkFlowLocked()
	t.mu.Unlock()
	t.m.wg.Add(1) // the terminal's goroutines still run: the count is not zero
	go func() {
		defer t.m.wg.Done()
		// Holding sigMu keeps the shell unreaped, so its pid names its
		// session until the hang-up is over.
		t.sigMu.RLock()
		defer t.sigMu.RUnlock()
		if !t.reaped {
			if err := t.pty.Hangup(t.m.cfg.KillGrace); err != nil {
				t.m.cfg.Log.Warn("end terminal session", "session_id", t.session, "err", err)
			}
		}
	}()
}

func (t *Terminal) finish(code int) {
	t.mu.Lock()
	t.ended, t.closing, t.code = true, true, code
	t.stopIdleLocked()
	info := t.infoLocked()
	t.mu.Unlock()
	close(t.done)
	// Release the claim before the slot is free, so that a new terminal
	// of the same session claims after this one has released.
	t.m.hooks.Ended(info)
	t.m.remove(t)
	close(t.gone)
	t.m.hooks.Changed()
}

// Write types p into the terminal, whole, before any other input. It gives
// up after the manager's input timeout when the terminal does not take
// input (its buffer is full and nothing reads it).
func (t *Terminal) Write(p []byte) (int, error) {
	t.inMu.Lock()
	defer t.inMu.Unlock()
	return t.pty.Write(p, time.Now().Add(t.m.cfg.InputTimeout))
}

// Resize sets the terminal's size (every subscriber shares it: the last
// resize wins).
func (t *Terminal) Resize(rows, cols uint16) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return ErrEnded
	}
	if err := t.pty.Resize(rows, cols); err != nil {
		if errors.Is(err, os.ErrClosed) {
			return ErrEnded // the shell is gone; the terminal is finishing
		}
		return err
	}
	if rows != t.rows || cols != t.cols {
		t.resizes = append(t.resizes, resizeAt{at: t.ring.End(), rows: rows, cols: cols})
		signal(t.emuWake)
	}
	t.rows, t.cols = rows, cols
	return nil
}

// attach adds a subscriber positioned per resume, or returns nil when the
// terminal is ending. A flow subscriber whose replay would not start at
// the stream's beginning (its offset left the ring, or it asks for all
// and the ring has wrapped) gets the screen instead, and starts reading at
// the screen's offset.
func (t *Terminal) attach(resume *Resume, flow bool, keep int) *Attachment {
	if flow {
		t.emuMu.Lock()
		defer t.emuMu.Unlock()
		t.catchUpLocked() // in case a screen is needed
	}
	t.mu.Lock()
	if t.closing {
		t.mu.Unlock()
		return nil
	}
	start, end := t.ring.Start(), t.ring.End()
	a := &Attachment{Offset: start, Truncated: start > 0}
	if resume != nil && resume.Stream == t.stream && resume.Offset <= end {
		a.Resumed = true
		if resume.Offset >= start {
			a.Offset, a.Truncated = resume.Offset, false
		}
	}
	if flow && a.Truncated {
		a.Screen = t.snapshotLocked()
		a.Offset = a.Screen.Offset
	}
	a.HasScrollback = end > a.Offset || a.Screen != nil
	s := &Sub{t: t, wake: make(chan struct{}, 1), cursor: a.Offset, flow: flow, acked: a.Offset, clientAcked: a.Offset, sent: a.Offset}
	if flow && keep > 0 {
		s.keep = keep
		s.tr, s.trKnown = t.parserAtLocked(s.cursor)
	}
	if end > a.Offset {
		s.wake <- struct{}{}
	}
	t.subs[s] = struct{}{}
	t.stopIdleLocked()
	t.checkFlowLocked()
	a.Sub, a.Info = s, t.infoLocked()
	t.mu.Unlock()
	t.m.hooks.Changed()
	return a
}

func (t *Terminal) detach(s *Sub) {
	t.mu.Lock()
	if _, ok := t.subs[s]; !ok {
		t.mu.Unlock()
		return
	}
	delete(t.subs, s)
	if len(t.subs) == 0 {
		t.armIdleLocked()
	}
	t.checkFlowLocked() // a flow client that leaves stops counting at once
	t.mu.Unlock()
	t.m.hooks.Changed()
}

// armIdleLocked starts the idle clock of a terminal nobody watches.
func (t *Terminal) armIdleLocked() {
	if t.m.cfg.IdleTimeout <= 0 || t.closing || len(t.subs) > 0 {
		return
	}
	t.stopIdleLocked()
	gen := t.idleGen
	t.idle = time.AfterFunc(t.m.cfg.IdleTimeout, func() {
		t.mu.Lock()
		expired := t.idleGen == gen && len(t.subs) == 0
		t.mu.Unlock()
		if expired {
			t.m.cfg.Log.Info("terminal idle, ending it", "session_id", t.session, "idle_timeout", t.m.cfg.IdleTimeout.String())
			t.Kill()
		}
	})
}

func (t *Terminal) stopIdleLocked() {
	t.idleGen++
	if t.idle != nil {
		t.idle.Stop()
		t.idle = nil
	}
}

// Resume asks to continue a stream where a client left it.
type Resume struct {
	Stream string // the stream id the client was reading
	Offset int64  // the stream offset after the last byte it received
}

// Attachment is a subscriber's view of the terminal it joined.
type Attachment struct {
	Sub  *Sub
	Info Info
	// Offset is the stream offset the subscriber starts reading at: the
	// start of the replay, or the live end when there is nothing to replay.
	Offset int64
	// HasScrollback tells that output is waiting between Offset and the
	// live end (a replay).
	HasScrollback bool
	// Truncated tells that output the client asked for (everything, or
	// everything after its Resume offset) has already left the ring.
	Truncated bool
	// Resumed tells that the client's Resume named this stream.
	Resumed bool
	// Created tells that this attach started the terminal.
	Created bool
	// PreviousHost, for a created terminal, is the host the registry had
	// for the session before ("" when none).
	PreviousHost string
	// Screen, for a flow subscriber whose replay would have been
	// truncated, is the screen to send before the output from Offset
	// (which is Screen.Offset).
	Screen *Screen
}

// Sub is one reader of a terminal's output: a cursor into its ring. The
// server holds nothing per reader but the cursor: a reader that falls
// more than the ring behind skips what it missed (Next reports it).
//
// A flow subscriber (flow=1) acknowledges what its client has rendered:
// it is handed at most the high watermark beyond its acknowledgement, the
// most advanced one paces the shell, and one that falls behind the ring
// is given the screen (NextFlow) instead of a gap.
type Sub struct {
	t      *Terminal
	wake   chan struct{}
	flow   bool
	cursor int64 // guarded by t.mu
	// Guarded by t.mu, for a flow subscriber: acked is what flow control
	// counts as acknowledged (the client's last ack, or the offset of the
	// last screen sent if greater); clientAcked is the client's own last
	// ack, and sent the furthest offset ever handed to it. An ack is
	// checked against these two: one sent before the client saw a
	// screen is still valid, and just counts for nothing.
	acked, clientAcked, sent int64
	// A skipping subscriber (skip_lines, skip.go), guarded by t.mu: keep
	// is the client's scrollback in lines, tr its parser's state at the
	// cursor (trKnown: that state could be worked out), plainTo how far
	// the output after the cursor is known to be plain, skipTried the
	// ring's end at the last look for a skip point, skipBlock an offset
	// the cursor must pass before the next look (something not plain
	// lies before it); skips and skipped count what was left out.
	keep                          int
	tr                            vtscreen.Tracker
	trKnown                       bool
	plainTo, skipTried, skipBlock int64
	skips, skipped                int64
	// spans are the skips the client has not acknowledged past yet.
	spans []span
	// rows is the height the client last asked for (its screen may be
	// taller than the terminal's, which the last resize of any client set).
	rows int
}

// span is a range of stream offsets.
type span struct{ from, to int64 }

// Errors of Ack; nothing changed.
var (
	ErrNotFlow     = errors.New("not a flow connection")
	ErrAckAhead    = errors.New("acknowledges output that was not sent")
	ErrAckBackward = errors.New("acknowledges less than before")
)

// Flow tells whether the subscriber acknowledges its output.
func (s *Sub) Flow() bool { return s.flow }

// Ack records that the client has rendered the output before off. It
// must be at most what was sent (Offset) and at least the previous ack.
func (s *Sub) Ack(off int64) error {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case !s.flow:
		return ErrNotFlow
	case off > s.sent:
		return ErrAckAhead
	case off < s.clientAcked:
		return ErrAckBackward
	}
	s.clientAcked = off
	s.acked = max(s.acked, off)
	for len(s.spans) > 0 && s.spans[0].to <= off {
		s.spans = s.spans[1:]
	}
	t.checkFlowLocked()
	signal(s.wake) // its window may have opened
	return nil
}

// Acked is the flow subscriber's last acknowledgement.
func (s *Sub) Acked() int64 {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	return s.clientAcked
}

// NextFlow is Next for a flow subscriber: it copies at most the high
// watermark beyond the last acknowledgement (all that is held when
// drain is set: the shell has ended), and when the subscriber has fallen
// behind the ring it returns the screen instead, moving the cursor (and
// the acknowledgement) to the screen's offset.
func (s *Sub) NextFlow(p []byte, drain bool) (n int, screen *Screen, skip *Skip) {
	t := s.t
	t.mu.Lock()
	behind := s.cursor < t.ring.Start()
	t.mu.Unlock()
	if behind {
		t.emuMu.Lock()
		defer t.emuMu.Unlock()
		t.catchUpLocked()
		screen = t.snapshotLocked()
		t.mu.Lock()
		s.cursor, s.acked = screen.Offset, screen.Offset
		s.sent = max(s.sent, s.cursor)
		if s.keep > 0 {
			s.tr, s.trKnown = t.parserAtLocked(s.cursor)
		}
		t.checkFlowLocked()
		if s.cursor < t.ring.End() {
			signal(s.wake)
		}
		t.mu.Unlock()
		return 0, screen, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.cursor < t.ring.Start() {
		signal(s.wake) // overtaken meanwhile: the screen next time
		return 0, nil, nil
	}
	if skip = s.skipLocked(); skip != nil {
		signal(s.wake)
		return 0, nil, skip
	}
	if !drain {
		room := s.roomLocked()
		if room <= 0 {
			return 0, nil, nil // Ack wakes the subscriber
		}
		p = p[:min(int64(len(p)), room)]
	}
	n = t.ring.ReadAt(p, s.cursor)
	if s.keep > 0 {
		s.tr.Scan(p[:n])
	}
	s.cursor += int64(n)
	s.sent = max(s.sent, s.cursor)
	if s.cursor < t.ring.End() && (drain || s.roomLocked() > 0) {
		signal(s.wake)
	}
	return n, nil, nil
}

// Terminal is the terminal the subscriber reads.
func (s *Sub) Terminal() *Terminal { return s.t }

// Wake receives a value when output may be waiting for Next.
func (s *Sub) Wake() <-chan struct{} { return s.wake }

// Next copies the output after the cursor into p and advances the cursor.
// skipped > 0 means the cursor had fallen behind the ring: that many bytes
// were lost to this reader, and what follows is the oldest output held.
func (s *Sub) Next(p []byte) (n int, skipped int64) {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if start := t.ring.Start(); s.cursor < start {
		skipped = start - s.cursor
		s.cursor = start
	}
	n = t.ring.ReadAt(p, s.cursor)
	s.cursor += int64(n)
	if s.cursor < t.ring.End() {
		// More than p could take: come back without waiting.
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return n, skipped
}

// Offset is the stream offset after the last byte Next returned.
func (s *Sub) Offset() int64 {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	return s.cursor
}

// Pending is how many bytes of output wait in the ring for this reader
// (at most the ring's size), and missed how many it has lost already
// because it fell further behind than the ring holds.
func (s *Sub) Pending() (pending, missed int64) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	start, end := s.t.ring.Start(), s.t.ring.End()
	if s.cursor < start {
		return end - start, start - s.cursor
	}
	return end - s.cursor, 0
}

// Ready is how much output Next or NextFlow would return now: what the
// ring holds after the cursor, for a flow subscriber at most what its
// window allows. A subscriber that fell behind the ring (a resync or a
// screen is due) counts the whole ring as ready. growing tells whether
// more may come without the client doing anything: the shell's output is
// being read (not paused by flow control) and the window is not what
// limits n.
func (s *Sub) Ready() (n int64, growing bool) {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	start, end := t.ring.Start(), t.ring.End()
	if s.cursor < start {
		return end - start, false
	}
	n = end - s.cursor
	if s.flow {
		if room := max(s.roomLocked(), 0); room <= n {
			return room, false
		}
	}
	return n, !t.paused
}

// Close detaches the reader; a terminal with no reader left starts its
// idle clock.
func (s *Sub) Close() { s.t.detach(s) }

// Emulated is the stream offset the server's screen has reached.
func (t *Terminal) Emulated() int64 {
	t.emuMu.Lock()
	defer t.emuMu.Unlock()
	return t.emuOff
}
