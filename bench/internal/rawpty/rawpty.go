// Package rawpty runs a program on a pseudo-terminal (creack/pty) and
// reads its output straight from the master side, with no socket in
// between: the ceiling on what any terminal service on this machine can
// deliver. The master is read as the terminal service reads it, through a
// non-blocking descriptor registered with Go's poller, so deadlines work.
package rawpty

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	creackpty "github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Terminal is a program running on a pseudo-terminal.
type Terminal struct {
	master *os.File
	cmd    *exec.Cmd
	waited chan struct{}
}

// Start runs cmd on a new rows×cols pseudo-terminal, as the leader of a
// session of its own with the terminal as its controlling terminal (so
// that Ctrl-C reaches its foreground job, as in a real terminal).
func Start(cmd *exec.Cmd, rows, cols uint16) (*Terminal, error) {
	m, tty, err := creackpty.Open()
	if err != nil {
		return nil, fmt.Errorf("open pty: %w", err)
	}
	master, err := nonblocking(m)
	_ = m.Close()
	if err != nil {
		_ = tty.Close()
		return nil, err
	}
	t := &Terminal{master: master, waited: make(chan struct{})}
	if err := t.control(func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	}); err != nil {
		_ = master.Close()
		_ = tty.Close()
		return nil, fmt.Errorf("set pty size: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	// Only the child keeps the slave side open: reads fail with EIO once
	// every process holding it has gone.
	_ = tty.Close()
	if err != nil {
		_ = master.Close()
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	t.cmd = cmd
	go func() {
		_ = cmd.Wait()
		close(t.waited)
	}()
	return t, nil
}

// nonblocking returns a non-blocking duplicate of f, which os.NewFile
// registers with the poller (creack/pty leaves its master blocking).
func nonblocking(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("open pty: %w", err)
	}
	dup := -1
	cerr := rc.Control(func(fd uintptr) { dup, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) })
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
		return nil, fmt.Errorf("open pty: %w", err)
	}
	return os.NewFile(uintptr(dup), "/dev/ptmx"), nil
}

func (t *Terminal) control(f func(fd int) error) error {
	rc, err := t.master.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// Read reads the program's output. Once every process holding the
// terminal has gone it returns io.EOF (Linux reports EIO).
func (t *Terminal) Read(p []byte) (int, error) {
	n, err := t.master.Read(p)
	if err != nil && n == 0 && errors.Is(err, syscall.EIO) {
		return 0, io.EOF
	}
	return n, err
}

// Send types keys into the terminal.
func (t *Terminal) Send(keys []byte) error {
	_, err := t.master.Write(keys)
	return err
}

// SetReadDeadline bounds pending and future Reads.
func (t *Terminal) SetReadDeadline(d time.Time) error { return t.master.SetReadDeadline(d) }

// Pid is the program's process id (and its session's).
func (t *Terminal) Pid() int { return t.cmd.Process.Pid }

// Close kills the program's whole session and waits for the program.
func (t *Terminal) Close() error {
	_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL) // the session leader also leads its process group
	_ = t.cmd.Process.Kill()
	select {
	case <-t.waited:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s did not exit after SIGKILL", t.cmd.Path)
	}
	return t.master.Close()
}

// Transfer is how much a program wrote and how long reading it took.
type Transfer struct {
	Bytes   int64
	Elapsed time.Duration
}

// Drain starts cmd on a pseudo-terminal and reads everything it writes as
// fast as possible, until it exits and its output is read; the clock runs
// from just before the start to the last byte. buf is the read buffer.
func Drain(cmd *exec.Cmd, buf []byte, timeout time.Duration) (Transfer, error) {
	start := time.Now()
	t, err := Start(cmd, 24, 80)
	if err != nil {
		return Transfer{}, err
	}
	defer func() { _ = t.Close() }()
	if err := t.SetReadDeadline(start.Add(timeout)); err != nil {
		return Transfer{}, err
	}
	var total int64
	for {
		n, err := t.Read(buf)
		total += int64(n)
		if errors.Is(err, io.EOF) {
			return Transfer{Bytes: total, Elapsed: time.Since(start)}, nil
		}
		if err != nil {
			return Transfer{}, fmt.Errorf("read pty after %d bytes: %w", total, err)
		}
	}
}
