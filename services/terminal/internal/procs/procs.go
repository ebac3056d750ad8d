// Package procs ends process trees the way a terminal hang-up does: every
// process of a session (setsid), whatever process group a shell's job
// control put it in. Processes are found through /proc (Linux).
//
// A session is named by its leader's pid, which is only unambiguous while
// the leader has not been reaped: callers wait for its exit with
// WaitExited (which leaves it a zombie, so its pid cannot be reused), end
// the session, and only then reap it.
package procs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// member is one process of a session.
type member struct {
	pid    int
	zombie bool
}

// members lists the processes whose session id is sid.
func members(sid int) ([]member, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []member
	var buf [512]byte
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		state, session, ok := stat(pid, buf[:])
		if ok && session == sid {
			out = append(out, member{pid: pid, zombie: state == 'Z' || state == 'X'})
		}
	}
	return out, nil
}

// stat reads the state and session id of pid from /proc/<pid>/stat; ok is
// false when the process went away meanwhile.
func stat(pid int, buf []byte) (state byte, session int, ok bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	n, _ := f.Read(buf)
	_ = f.Close()
	return parseStat(buf[:n])
}

// parseStat reads the state and session of a /proc/<pid>/stat line:
// "pid (comm) state ppid pgrp session ...", where comm may hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStat(line []byte) (state byte, session int, ok bool) {
	i := bytes.LastIndexByte(line, ')')
	if i < 0 || i+2 >= len(line) {
		return 0, 0, false
	}
	fields := bytes.Fields(line[i+2:])
	if len(fields) < 4 {
		return 0, 0, false
	}
	session, err := strconv.Atoi(string(fields[3]))
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], session, true
}

// SignalSession sends sig to every live process of session sid, and to
// the process group sid (its leader's), and returns how many processes it
// found. Processes that exit meanwhile are not an error.
func SignalSession(sid int, sig syscall.Signal) (int, error) {
	if sid <= 1 {
		return 0, fmt.Errorf("signal session %d: not a session a terminal owns", sid)
	}
	ms, err := members(sid)
	if err != nil {
		return 0, err
	}
	_ = syscall.Kill(-sid, sig)
	n := 0
	for _, m := range ms {
		if m.zombie {
			continue
		}
		n++
		_ = syscall.Kill(m.pid, sig)
	}
	return n, nil
}

// Alive reports how many processes of session sid are still running
// (zombies do not count).
func Alive(sid int) (int, error) {
	ms, err := members(sid)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range ms {
		if !m.zombie {
			n++
		}
	}
	return n, nil
}

// hupRetry is how often EndSession repeats its SIGHUP: a shell that is
// still starting up may miss one (bash does, in its first milliseconds).
const hupRetry = 100 * time.Millisecond

// EndSession hangs up session sid as a closing terminal does (SIGHUP,
// then SIGCONT so stopped jobs see it, repeated every hupRetry), waits up
// to grace for its processes to exit, and kills whatever is left with
// SIGKILL. It returns when no process of the session runs any more, or
// after a second more of trying.
func EndSession(sid int, grace time.Duration) error {
	deadline := time.Now().Add(grace)
	for {
		n, err := SignalSession(sid, syscall.SIGHUP)
		if err != nil || n == 0 {
			return err
		}
		_, _ = SignalSession(sid, syscall.SIGCONT)
		left := time.Until(deadline)
		if waitGone(sid, min(hupRetry, max(left, 0))) {
			return nil
		}
		if left <= hupRetry {
			break
		}
	}
	return KillSession(sid)
}

// waitGone polls until no process of session sid runs, for at most d.
func waitGone(sid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for wait := time.Millisecond; ; wait = min(2*wait, 20*time.Millisecond) {
		if n, err := Alive(sid); err != nil || n == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
	}
}

// WaitExited blocks until process pid (a child of this process) has
// exited, without reaping it: it stays a zombie, so its pid, and the
// session it led, keep their identity until the caller reaps it (with
// os.Process.Wait).
func WaitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// KillSession sends SIGKILL to every process of session sid, again until
// none is left (a process may fork while the first round goes out).
func KillSession(sid int) error {
	for range 10 {
		n, err := SignalSession(sid, syscall.SIGKILL)
		if err != nil || n == 0 || waitGone(sid, 100*time.Millisecond) {
			return err
		}
	}
	left, _ := Alive(sid)
	return fmt.Errorf("kill session %d: %d processes survive SIGKILL", sid, left)
}

// ExitCode turns a finished process's state into a shell-style exit code.
func ExitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			ps = ee.ProcessState
		}
	}
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
