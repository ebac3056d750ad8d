// Package pty runs a shell on a pseudo-terminal (creack/pty) and gives a
// teardown that leaves nothing behind: the shell leads a session of its
// own (Setsid, controlling terminal set), so ending the terminal ends every
// process started from it (procs.EndSession); the master side is a
// non-blocking, poller-registered *os.File, so Close unblocks a pending
// Read or Write and deadlines work; the window size is changed through the
// file's SyscallConn, which never switches the descriptor back to blocking
// mode (creack/pty's Setsize does, through Fd(): creack/pty #162, #174).
package pty

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	creackpty "github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/svc-code/svc-code/libs/childenv"
	"github.com/svc-code/svc-code/services/terminal/internal/procs"
)

// Options describe the process to start.
type Options struct {
	Path string   // the shell's executable
	Args []string // arguments after argv[0]
	Dir  string   // working directory
	// Env is the environment, filtered by childenv (nil: the service's
	// own, filtered).
	Env  []string
	Rows uint16
	Cols uint16
}

// PTY is a running shell and the master side of its terminal.
type PTY struct {
	master *os.File // non-blocking; never call Fd() on it
	cmd    *exec.Cmd
}

// Start runs the shell on a new pseudo-terminal of the given size.
func Start(o Options) (*PTY, error) {
	master, tty, err := open()
	if err != nil {
		return nil, err
	}
	p := &PTY{master: master}
	if err := p.Resize(o.Rows, o.Cols); err != nil {
		_ = master.Close()
		_ = tty.Close()
		return nil, err
	}
	cmd := exec.Command(o.Path, o.Args...) //nolint:gosec,noctx // running the configured shell is what a terminal is for; its life ends with its session (Hangup), not a context
	cmd.Dir = o.Dir
	cmd.Env = childEnv(o.Env)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	// A session of its own, with the terminal as its controlling terminal
	// (child fd 0): job control works, and ending the session ends all.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err = cmd.Start()
	// The child has its copies; the parent keeps only the master, so that
	// reads see EIO once every process holding the terminal is gone.
	_ = tty.Close()
	if err != nil {
		_ = master.Close()
		return nil, fmt.Errorf("start %s: %w", o.Path, err)
	}
	p.cmd = cmd
	return p, nil
}

// childEnv is env, or the service's environment when env is nil, without
// the variables a user's program never gets (libs/childenv).
func childEnv(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	return childenv.Filter(env)
}

// open opens a new pseudo-terminal pair and returns the master as a fresh
// non-blocking *os.File. creack/pty's Open leaves its master file in
// blocking mode (its ioctls go through Fd()), in which Close does not
// unblock a Read; a non-blocking duplicate registered with the runtime
// poller replaces it.
func open() (master, tty *os.File, err error) {
	m, tty, err := creackpty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	rc, err := m.SyscallConn()
	if err != nil {
		_ = m.Close()
		_ = tty.Close()
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	dup := -1
	cerr := rc.Control(func(fd uintptr) {
		dup, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	})
	_ = m.Close()
	if err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.SetNonblock(dup, true)
	}
	if err != nil {
		if dup >= 0 {
			_ = unix.Close(dup)
		}
		_ = tty.Close()
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	// NewFile sees the non-blocking flag and registers the descriptor with
	// the poller.
	return os.NewFile(uintptr(dup), "/dev/ptmx"), tty, nil
}

// Pid is the shell's process id, which is also its session's id.
func (p *PTY) Pid() int { return p.cmd.Process.Pid }

// Read reads the terminal's output. It returns an error (EIO, or
// os.ErrClosed after Close, or os.ErrDeadlineExceeded) once there is no
// more to read.
func (p *PTY) Read(b []byte) (int, error) { return p.master.Read(b) }

// Write types b into the terminal, giving up at the deadline (zero: none).
// Concurrent writers must be serialised by the caller, as deadlines are
// per file.
func (p *PTY) Write(b []byte, deadline time.Time) (int, error) {
	if err := p.master.SetWriteDeadline(deadline); err != nil {
		return 0, err
	}
	return p.master.Write(b)
}

// SetReadDeadline bounds the pending and future Reads.
func (p *PTY) SetReadDeadline(t time.Time) error { return p.master.SetReadDeadline(t) }

// Resize sets the terminal's window size; the kernel sends SIGWINCH to the
// foreground process group.
func (p *PTY) Resize(rows, cols uint16) error {
	ws := &unix.Winsize{Row: rows, Col: cols}
	return p.control(func(fd int) error { return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, ws) })
}

// Size returns the terminal's window size.
func (p *PTY) Size() (rows, cols uint16, err error) {
	err = p.control(func(fd int) error {
		ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		if err == nil {
			rows, cols = ws.Row, ws.Col
		}
		return err
	})
	return rows, cols, err
}

// control runs f on the master's descriptor, which stays open (and
// non-blocking) meanwhile.
func (p *PTY) control(f func(fd int) error) error {
	rc, err := p.master.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// WaitExited blocks until the shell has exited, leaving it unreaped, so
// that its session can still be ended safely (see package procs).
func (p *PTY) WaitExited() error { return procs.WaitExited(p.Pid()) }

// Hangup ends the shell's session: SIGHUP to every process of it, SIGKILL
// after grace to those left. Call it only before Reap.
func (p *PTY) Hangup(grace time.Duration) error { return procs.EndSession(p.Pid(), grace) }

// Reap waits for the shell and returns its exit code: its status when it
// exited, 128+n when signal n killed it (the shell convention).
func (p *PTY) Reap() int {
	err := p.cmd.Wait()
	return procs.ExitCode(p.cmd.ProcessState, err)
}

// Close closes the master side; a pending Read or Write returns at once.
func (p *PTY) Close() error { return p.master.Close() }
