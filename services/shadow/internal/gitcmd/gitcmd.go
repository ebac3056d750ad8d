// Package gitcmd runs the real git binary with a controlled environment:
// nothing of the caller's GIT_* variables, no system or global
// configuration, no pager, no prompt, C locale, and bounded output. The
// journal and the read-only /api/git routes both go through it.
package gitcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// DefaultMaxOutput bounds what one git command may print before it is
// stopped (Run answers ErrOutputTooLarge).
const DefaultMaxOutput = 64 << 20

// waitDelay bounds how long Run waits, once git is killed, for the output
// pipes that a leftover child may still hold.
const waitDelay = 2 * time.Second

// ErrOutputTooLarge reports a command whose output passed its bound.
var ErrOutputTooLarge = errors.New("git output too large")

// Runner runs git. The zero value runs "git" from PATH.
type Runner struct {
	// Bin is the git executable; "git" when empty.
	Bin string
}

// Cmd is one git invocation.
type Cmd struct {
	// Dir is the working directory (the work tree for pathspecs).
	Dir string
	// Env is added to the controlled base environment (KEY=value).
	Env []string
	// Args are git's arguments, global options ("-c k=v") first.
	Args []string
	// Stdin, when set, is fed to git.
	Stdin io.Reader
	// MaxOutput bounds stdout; DefaultMaxOutput when 0.
	MaxOutput int
	// Stdout, when set, receives the output unbounded instead (Run then
	// answers no output).
	Stdout io.Writer
}

// ExitError is a git command that exited non-zero.
type ExitError struct {
	Args   []string
	Code   int
	Stderr string
}

func (e *ExitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if len(msg) > 500 {
		msg = msg[:500] + "..."
	}
	return fmt.Sprintf("git %s: exit %d: %s", firstArg(e.Args), e.Code, msg)
}

// BaseEnv is the environment every git command starts from.
func BaseEnv() []string {
	env := []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"LC_ALL=C",
		"LANG=C",
	}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Run runs git and answers its stdout. A non-zero exit is an *ExitError.
func (r Runner) Run(ctx context.Context, c Cmd) ([]byte, error) {
	bin := r.Bin
	if bin == "" {
		bin = "git"
	}
	limit := c.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	cmd := exec.CommandContext(ctx, bin, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = append(BaseEnv(), c.Env...)
	cmd.Stdin = c.Stdin
	out := &limitedBuffer{limit: limit}
	stderr := &limitedBuffer{limit: 64 << 10, truncate: true}
	cmd.Stdout = out
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	}
	cmd.Stderr = stderr
	// git runs in a process group of its own, killed whole when ctx ends:
	// its children (hooks, filters, helpers, gc) would otherwise outlive
	// it and keep Run waiting on the pipes they hold.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	if out.over {
		return nil, fmt.Errorf("git %s: %w", firstArg(c.Args), ErrOutputTooLarge)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git %s: %w", firstArg(c.Args), ctx.Err())
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, &ExitError{Args: c.Args, Code: ee.ExitCode(), Stderr: stderr.buf.String()}
		}
		return nil, fmt.Errorf("run git: %w", err)
	}
	return out.buf.Bytes(), nil
}

func firstArg(args []string) string {
	for i := 0; i < len(args); i++ {
		if args[i] == "-c" {
			i++
			continue
		}
		return args[i]
	}
	return ""
}

// limitedBuffer keeps up to limit bytes. Past it, it fails the writes,
// which stops git with a broken pipe, or with truncate drops the rest.
type limitedBuffer struct {
	buf      bytes.Buffer
	limit    int
	truncate bool
	over     bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.limit {
		b.over = !b.truncate
		if b.truncate {
			b.buf.Write(p[:max(0, b.limit-b.buf.Len())])
			return len(p), nil
		}
		return 0, ErrOutputTooLarge
	}
	return b.buf.Write(p)
}
