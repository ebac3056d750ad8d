package codex_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex"
)

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// sendAsync runs Send in a goroutine; the channel gets its error.
func sendAsync(p agent.Provider, text string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- p.Send(context.Background(), agent.Turn{Text: text}) }()
	return done
}

// waitErr waits up to within for Send's error.
func waitErr(t *testing.T, done <-chan error, within time.Duration, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		t.Fatalf("%s: Send still blocked after %s", what, within)
		return nil
	}
}

// A process that never answers initialize must not hold Close (the
// session's end, the server's shutdown) for the whole request timeout.
func TestCloseDuringAHungHandshake(t *testing.T) {
	p := newProvider(t, func(c *codex.Config) {
		c.Executable = script(t, "exec cat >/dev/null")
		c.RequestTimeout = time.Minute
	})
	done := sendAsync(p, "hi")
	collect(t, p, "process start", is[agent.ProcessStarted])
	closed := make(chan struct{})
	go func() {
		_ = p.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close still blocked by the handshake after 10 s (request timeout 1 min)")
	}
	if err := waitErr(t, done, 5*time.Second, "after Close"); err == nil {
		t.Error("Send succeeded on a process that never answered")
	}
}

// A process that closes its stdout cannot be talked to any more: it is
// ended at once instead of leaving the session waiting on it.
func TestStdoutClosedEndsTheProcess(t *testing.T) {
	p := newProvider(t, func(c *codex.Config) {
		c.Executable = script(t, "exec >&-\necho 'closing stdout' >&2\nexec sleep 60")
		c.RequestTimeout = time.Minute
	})
	done := sendAsync(p, "hi")
	err := waitErr(t, done, 15*time.Second, "stdout closed")
	if !errors.Is(err, agent.ErrProcessExited) {
		t.Errorf("Send = %v, want ErrProcessExited", err)
	}
	evs := collect(t, p, "exit", is[agent.ProcessExited])
	exit, _ := find[agent.ProcessExited](evs)
	if exit.Cause != agent.ExitCrashed {
		t.Errorf("exit %+v, want crashed", exit)
	}
}

// Stop on a process that ignores SIGINT: SIGKILL after KillDelay, and the
// cut turn still ends with an interrupted result.
func TestInterruptKillsAProcessIgnoringSIGINT(t *testing.T) {
	p := newProvider(t, func(c *codex.Config) {
		c.Executable = script(t, "trap '' INT\nexec "+fakeBin+` "$@"`)
		c.KillDelay = 300 * time.Millisecond
	})
	send(t, p, "SLOW 200")
	collect(t, p, "first delta", func(e agent.Event) bool {
		c, ok := e.(agent.Control)
		return ok && c.Subtype == "item/agentMessage/delta"
	})
	if out, err := p.Interrupt(context.Background()); err != nil || out != agent.InterruptForced {
		t.Fatalf("Interrupt = %v, %v", out, err)
	}
	evs := collect(t, p, "exit", is[agent.ProcessExited])
	exit, _ := find[agent.ProcessExited](evs)
	if exit.Cause != agent.ExitInterrupted || exit.Signal != "killed" || exit.TurnRunning {
		t.Errorf("exit %+v, want interrupted by SIGKILL", exit)
	}
	if end, ok := find[agent.TurnEnded](evs); !ok || !end.Interrupted {
		t.Errorf("TurnEnded %+v, want interrupted", end)
	}
}

// Stop while an approval waits: the request is retired (nobody can answer
// it any more) and the turn ends interrupted.
func TestInterruptWithAPendingApproval(t *testing.T) {
	p := newProvider(t, nil)
	send(t, p, "RUN_SHELL")
	evs := collect(t, p, "approval", is[agent.PermissionRequest])
	req, _ := find[agent.PermissionRequest](evs)
	if _, err := p.Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs = collect(t, p, "exit", is[agent.ProcessExited])
	ret, ok := find[agent.PermissionRetired](evs)
	if !ok || ret.RequestID != req.RequestID {
		t.Errorf("retired %+v, want %s", ret, req.RequestID)
	}
	if end, ok := find[agent.TurnEnded](evs); !ok || !end.Interrupted {
		t.Errorf("TurnEnded %+v, want interrupted", end)
	}
	if err := p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Allow}); !errors.Is(err, agent.ErrPermissionExpired) {
		t.Errorf("answer after the stop: %v, want ErrPermissionExpired", err)
	}
}

// Codex's backpressure answer (-32001 "Server overloaded") to thread/resume
// is no reason to give up the thread: the launch fails, the session keeps
// its thread id, and nothing starts a new thread in its place.
func TestResumeOverloadedKeepsTheThread(t *testing.T) {
	const thread = "01a200f0-0000-7000-8000-00000000abcd"
	p := newProvider(t, func(c *codex.Config) {
		c.Resume = thread
		c.RequestTimeout = 2 * time.Second
		c.Executable = script(t, `read -r l; echo '{"id":"c1","result":{}}'
read -r l
read -r l; echo '{"id":"c2","error":{"code":-32001,"message":"Server overloaded; retry later."}}'
read -r l; echo '{"id":"c3","result":{"thread":{"id":"01a200f0-0000-7000-8000-0000000000ff"}}}'
exec cat >/dev/null`)
	})
	err := p.Send(context.Background(), agent.Turn{Text: "hi"})
	var rpcErr *codex.RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32001 {
		t.Errorf("Send = %v, want the overloaded error", err)
	}
	if got := p.SessionID(); got != thread {
		t.Errorf("thread %q after an overloaded resume, want %q kept", got, thread)
	}
}

// Lines far longer than any scanner default (pitfalls: Codex and Claude
// print lines of 19 KB and more) are read whole.
func TestLongLine(t *testing.T) {
	const size = 4 << 20
	p := newProvider(t, func(c *codex.Config) {
		c.Executable = script(t, `read -r l; echo '{"id":"c1","result":{}}'
read -r l
read -r l; echo '{"id":"c2","result":{"thread":{"id":"t1"},"model":"mock-model"}}'
read -r l; echo '{"id":"c3","result":{"turn":{"id":"u1","status":"inProgress"}}}'
printf '{"method":"item/completed","params":{"threadId":"t1","turnId":"u1","item":{"type":"agentMessage","id":"m1","text":"%s"}}}\n' "$(head -c `+strconv.Itoa(size)+` /dev/zero | tr '\0' a)"
echo '{"method":"turn/completed","params":{"threadId":"t1","turn":{"id":"u1","status":"completed"}}}'
exec cat >/dev/null`)
	})
	send(t, p, "hi")
	evs := collect(t, p, "turn end", isTurnEnded)
	end, _ := find[agent.TurnEnded](evs)
	if len(end.Result) != size || end.IsError {
		t.Errorf("result of %d bytes (error %v), want the %d-byte line's text", len(end.Result), end.IsError, size)
	}
}

// A working directory that is gone is not a missing executable: the error
// names the directory, not the provider-path route.
func TestMissingWorkingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	p := newProvider(t, func(c *codex.Config) { c.Cwd = dir })
	err := p.Send(context.Background(), agent.Turn{Text: "hi"})
	var missing *agent.MissingExecutableError
	if err == nil || errors.As(err, &missing) || !strings.Contains(err.Error(), dir) {
		t.Errorf("Send = %v, want an error naming %s and no missing executable", err, dir)
	}
}
