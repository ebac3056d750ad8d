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
)

// readSize is the PTY read buffer: one read takes whatever the kernel has
// (a Linux pty hands out at most a few KiB at a time).
const readSize = 64 << 10

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

	readDone chan struct{} // the reader has stopped
	done     chan struct{} // the shell has ended: code is set, all output is in the ring
	gone     chan struct{} // the session's claim is released and the slot is free
}

func newTerminal(m *Manager, session, cwd string, p *pty.PTY, rows, cols uint16) *Terminal {
	return &Terminal{
		m: m, session: session, cwd: cwd, started: m.cfg.Now().UTC(), stream: newStreamID(), pty: p,
		ring: scrollback.New(m.cfg.Scrollback), subs: map[*Sub]struct{}{}, rows: rows, cols: cols,
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

// run starts the terminal's two goroutines: the reader, which moves output
// into the ring, and the waiter, which ends the terminal with its shell.
func (t *Terminal) run() {
	t.m.wg.Add(2)
	go func() {
		defer t.m.wg.Done()
		t.readLoop()
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
// or closed. It never waits for a subscriber: the ring takes every byte.
func (t *Terminal) readLoop() {
	defer close(t.readDone)
	buf := make([]byte, readSize)
	for {
		n, err := t.pty.Read(buf)
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
	t.ring.Write(p)
	for s := range t.subs {
		select {
		case s.wake <- struct{}{}:
		default: // already signalled
		}
	}
	t.mu.Unlock()
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
	t.rows, t.cols = rows, cols
	return nil
}

// attach adds a subscriber positioned per resume, or returns nil when the
// terminal is ending.
func (t *Terminal) attach(resume *Resume) *Attachment {
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
	a.HasScrollback = end > a.Offset
	s := &Sub{t: t, wake: make(chan struct{}, 1), cursor: a.Offset}
	if a.HasScrollback {
		s.wake <- struct{}{}
	}
	t.subs[s] = struct{}{}
	t.stopIdleLocked()
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
}

// Sub is one reader of a terminal's output: a cursor into its ring. The
// server holds nothing per reader but the cursor: a reader that falls
// more than the ring behind skips what it missed (Next reports it).
type Sub struct {
	t      *Terminal
	wake   chan struct{}
	cursor int64 // guarded by t.mu
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

// Close detaches the reader; a terminal with no reader left starts its
// idle clock.
func (s *Sub) Close() { s.t.detach(s) }
