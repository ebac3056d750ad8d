package agent

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"testing"
)

func interruptedForTest(state string) string { return "interrupted (" + state + ")" }

// run runs script under sh and returns its state once it has ended.
func run(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "sh", "-c", script)
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("run %q: %v", script, err)
	}
	return cmd
}

func TestExitReport(t *testing.T) {
	tests := []struct {
		name, script, cause, stderr string
		want                        ProcessExited
	}{
		{
			name: "clean exit", script: "exit 0",
			want: ProcessExited{PID: 7, ExitCode: 0, Cause: ExitExited, Reason: "agent exited (exit status 0)", TurnRunning: true},
		},
		{
			name: "failure names stderr", script: "exit 3", stderr: "boom",
			want: ProcessExited{PID: 7, ExitCode: 3, Cause: ExitCrashed, Reason: "agent exited unexpectedly (exit status 3): boom", TurnRunning: true},
		},
		{
			name: "failure without stderr", script: "exit 3",
			want: ProcessExited{PID: 7, ExitCode: 3, Cause: ExitCrashed, Reason: "agent exited unexpectedly (exit status 3)", TurnRunning: true},
		},
		{
			name: "killed", script: "kill -KILL $$",
			want: ProcessExited{PID: 7, ExitCode: -1, Signal: "killed", Cause: ExitCrashed, Reason: "agent exited unexpectedly (signal: killed)", TurnRunning: true},
		},
		{
			name: "recorded cause kept", script: "kill -TERM $$", cause: ExitClosed, stderr: "ignored",
			want: ProcessExited{PID: 7, ExitCode: -1, Signal: "terminated", Cause: ExitClosed, Reason: "session closed (signal: terminated)", TurnRunning: true},
		},
		{
			name: "interrupted worded by the provider", script: "kill -INT $$", cause: ExitInterrupted,
			want: ProcessExited{PID: 7, ExitCode: -1, Signal: "interrupt", Cause: ExitInterrupted, Reason: "interrupted (signal: interrupt)", TurnRunning: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := run(t, tt.script)
			got := ExitReport(ProcessExited{PID: 7, Cause: tt.cause, TurnRunning: true}, cmd.ProcessState, nil, tt.stderr, interruptedForTest)
			if got != tt.want {
				t.Errorf("ExitReport = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestExitReportWithoutState(t *testing.T) {
	got := ExitReport(ProcessExited{PID: 7}, nil, errors.New("wait: no child"), "last", interruptedForTest)
	want := ProcessExited{PID: 7, ExitCode: -1, Cause: ExitCrashed, Reason: "agent exited unexpectedly (wait: no child): last"}
	if got != want {
		t.Errorf("ExitReport = %+v, want %+v", got, want)
	}
	got = ExitReport(ProcessExited{PID: 7, Cause: ExitRespawn}, nil, nil, "", interruptedForTest)
	want = ProcessExited{PID: 7, ExitCode: -1, Cause: ExitRespawn, Reason: "restarted to apply new settings (exited)"}
	if got != want {
		t.Errorf("ExitReport = %+v, want %+v", got, want)
	}
}

func TestSignalName(t *testing.T) {
	for s, want := range map[syscall.Signal]string{
		syscall.SIGINT: "interrupt", syscall.SIGKILL: "killed", syscall.SIGTERM: "terminated", syscall.SIGHUP: "hangup",
	} {
		if got := SignalName(s); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", s, got, want)
		}
	}
}
