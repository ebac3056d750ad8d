package pty

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	// The shells must get SIGHUP's default action however the tests were
	// started: under nohup an ignored SIGHUP would be inherited by them
	// (as the service avoids it: svchttp.Binary.Main).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	goleak.VerifyTestMain(m)
}

func start(t *testing.T, args ...string) *PTY {
	t.Helper()
	p, err := Start(Options{Path: "/bin/sh", Args: args, Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}, Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// readUntil reads p until its output contains want.
func readUntil(t *testing.T, p *PTY, want string) {
	t.Helper()
	_ = p.SetReadDeadline(time.Now().Add(10 * time.Second))
	var out []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(out, []byte(want)) {
		n, err := p.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			t.Fatalf("read: %v; output %q, want %q", err, out, want)
		}
	}
	_ = p.SetReadDeadline(time.Time{})
}

func nonblocking(t *testing.T, p *PTY) bool {
	t.Helper()
	var flags int
	if err := p.control(func(fd int) (err error) { flags, err = unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); return err }); err != nil {
		t.Fatal(err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// TestCloseUnblocksRead is the creack/pty trap: a Read blocked on a
// silent terminal must return when the master is closed, also after a
// resize (creack's Setsize would have made the descriptor blocking).
func TestCloseUnblocksRead(t *testing.T) {
	p := start(t, "-c", "echo ready; exec sleep 300")
	readUntil(t, p, "ready")
	if err := p.Resize(50, 132); err != nil {
		t.Fatal(err)
	}
	if rows, cols, err := p.Size(); err != nil || rows != 50 || cols != 132 {
		t.Errorf("Size = %d, %d, %v; want 50, 132", rows, cols, err)
	}
	if !nonblocking(t, p) {
		t.Fatal("the master is in blocking mode after a resize")
	}
	readErr := make(chan error, 1)
	go func() {
		_, err := p.Read(make([]byte, 10))
		readErr <- err
	}()
	// The Read is blocked (nothing is written); Close must end it.
	select {
	case err := <-readErr:
		t.Fatalf("Read returned early: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-readErr:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("Read after Close: %v, want os.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Read")
	}
	if err := p.WaitExited(); err != nil {
		t.Fatal(err)
	}
	p.Reap()
}

func TestHangupEndsTheWholeSession(t *testing.T) {
	// Job control puts the background job in a process group of its own;
	// the hang-up reaches it anyway, and a job that ignores SIGHUP gets
	// SIGKILL after the grace.
	p := start(t, "-ic", "trap '' HUP; (trap '' HUP; sleep 300) & sleep 300 & echo jobs-started; wait")
	readUntil(t, p, "jobs-started")
	go func() { _, _ = io.Copy(io.Discard, p.master) }()
	start := time.Now()
	if err := p.Hangup(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("Hangup returned after %v, before the grace (the shell ignores SIGHUP)", d)
	}
	if err := p.WaitExited(); err != nil {
		t.Fatal(err)
	}
	if code := p.Reap(); code != 128+9 {
		t.Errorf("exit code %d, want 137 (SIGKILL)", code)
	}
	_ = p.Close()
}

func TestExitCodeAndEIO(t *testing.T) {
	p := start(t, "-c", "echo bye; exit 5")
	readUntil(t, p, "bye")
	// Once the shell is gone the master reads EIO.
	buf := make([]byte, 100)
	_ = p.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, err := p.Read(buf); err != nil {
			if !errors.Is(err, unix.EIO) {
				t.Errorf("read after exit: %v, want EIO", err)
			}
			break
		}
	}
	if err := p.WaitExited(); err != nil {
		t.Fatal(err)
	}
	if code := p.Reap(); code != 5 {
		t.Errorf("exit code %d, want 5", code)
	}
	_ = p.Close()
}

func TestStartFailure(t *testing.T) {
	before, _ := os.ReadDir("/proc/self/fd")
	if _, err := Start(Options{Path: "/does/not/exist", Dir: "/", Rows: 24, Cols: 80}); err == nil {
		t.Fatal("Start of a missing program succeeded")
	}
	after, _ := os.ReadDir("/proc/self/fd")
	if len(after) != len(before) {
		t.Errorf("descriptors: %d before, %d after a failed start", len(before), len(after))
	}
}
