// Package shellexec runs one shell command to completion for POST
// /api/exec (the UI's bang commands): `<shell> -c <command>` in a session
// of its own with an empty stdin, its stdout and stderr captured up to a
// cap each, within a timeout past which every process of its session is
// killed.
package shellexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/svc-code/svc-code/libs/childenv"
	"github.com/svc-code/svc-code/services/terminal/internal/procs"
)

// waitDelay is how long output is still collected after the shell exits,
// from background processes it left holding its stdout or stderr; they
// keep running, but what they write later is not captured.
const waitDelay = 500 * time.Millisecond

// Runner runs commands.
type Runner struct {
	// Shell runs the command as Shell -c command.
	Shell string
	// Env is the command's environment, filtered by childenv (nil: the
	// service's own, filtered).
	Env []string
	// OutputLimit caps each of stdout and stderr, in bytes.
	OutputLimit int
}

// Request is one command.
type Request struct {
	Command string
	Dir     string
	Timeout time.Duration
}

// Result is what the command did.
type Result struct {
	Stdout   string
	Stderr   string
	ExitCode int // 128+n when signal n ended the shell
	Duration time.Duration
	// Truncated: stdout or stderr went past OutputLimit and was cut.
	Truncated bool
	// TimedOut: the timeout killed the command's session.
	TimedOut bool
}

// ErrCancelled means ctx ended before the command did; the command was
// killed.
var ErrCancelled = errors.New("command cancelled")

// Run runs req and waits for it.
func (r *Runner) Run(ctx context.Context, req Request) (Result, error) {
	stdout, stderr := &capped{limit: r.OutputLimit}, &capped{limit: r.OutputLimit}
	cmd := exec.Command(r.Shell, "-c", req.Command) //nolint:gosec,noctx // running the user's command in the user's shell is what /api/exec is for; Run ends its whole session on ctx or timeout (CommandContext would kill the shell alone)
	cmd.Dir = req.Dir
	env := r.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = childenv.Filter(env)
	cmd.Stdout, cmd.Stderr = stdout, stderr // stdin stays nil: /dev/null
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.WaitDelay = waitDelay
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("start %s: %w", r.Shell, err)
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- procs.WaitExited(pid) }()

	timer := time.NewTimer(req.Timeout)
	defer timer.Stop()
	var res Result
	var cancelled bool
	var werr error
	select {
	case werr = <-exited:
	case <-timer.C:
		res.TimedOut = true
	case <-ctx.Done():
		cancelled = true
	}
	if res.TimedOut || cancelled {
		// The shell is not reaped yet, so its pid still names its session.
		_ = procs.KillSession(pid)
		werr = <-exited
	}
	if werr != nil {
		_ = procs.KillSession(pid)
		_ = cmd.Wait()
		return Result{}, fmt.Errorf("wait for %s: %w", r.Shell, werr)
	}
	res.Duration = time.Since(start)
	err := cmd.Wait()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // output pipes held open by a background process
	}
	res.ExitCode = procs.ExitCode(cmd.ProcessState, err)
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	res.Truncated = stdout.Truncated() || stderr.Truncated()
	if cancelled {
		return res, ErrCancelled
	}
	return res, nil
}

// capped keeps the first limit bytes written to it.
type capped struct {
	mu        sync.Mutex
	buf       []byte
	limit     int
	truncated bool
}

// Write takes all of p, keeping what fits: the command must never block
// on a full pipe or see it break because of the cap.
func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	room := c.limit - len(c.buf)
	if len(p) > room {
		c.truncated = true
		p = p[:max(room, 0)]
	}
	c.buf = append(c.buf, p...)
	return n, nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf)
}

func (c *capped) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.truncated
}
