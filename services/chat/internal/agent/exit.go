package agent

import (
	"os"
	"syscall"
)

// ExitReport completes ev, a ProcessExited that holds the PID, the Cause
// recorded before the process ended (empty when it ended by itself) and
// TurnRunning, from how the process ended: ps is its state (nil when Wait
// did not get one), waitErr the error Wait returned, lastStderr its last
// stderr line. It fills in ExitCode (-1 without a state), Signal, a Cause
// of ExitExited or ExitCrashed when none was recorded, and Reason (see
// ExitReason; interrupted words the ExitInterrupted case).
func ExitReport(ev ProcessExited, ps *os.ProcessState, waitErr error, lastStderr string, interrupted func(state string) string) ProcessExited {
	ev.ExitCode = -1
	state := "exited"
	if ps != nil {
		state = ps.String()
		ev.ExitCode = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			ev.Signal = SignalName(ws.Signal())
		}
	} else if waitErr != nil {
		state = waitErr.Error()
	}
	if ev.Cause == "" {
		ev.Cause = ExitCrashed
		if ev.ExitCode == 0 {
			ev.Cause = ExitExited
		}
	}
	ev.Reason = ExitReason(ev.Cause, state, lastStderr, interrupted)
	return ev
}

// SignalName is the name ProcessExited.Signal gives s: "interrupt",
// "killed" and "terminated" for SIGINT, SIGKILL and SIGTERM, otherwise the
// signal's own description.
func SignalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "interrupt"
	case syscall.SIGKILL:
		return "killed"
	case syscall.SIGTERM:
		return "terminated"
	}
	return s.String()
}

// ExitReason is the human sentence of ProcessExited.Reason for a process
// that ended with cause; state is its exit status (e.g. "exit status 1"),
// lastStderr its last stderr line, named only when it failed. The
// ExitInterrupted sentence differs between providers (what the user may do
// next), so interrupted writes it from state.
func ExitReason(cause, state, lastStderr string, interrupted func(state string) string) string {
	switch cause {
	case ExitClosed:
		return "session closed (" + state + ")"
	case ExitRespawn:
		return "restarted to apply new settings (" + state + ")"
	case ExitInterrupted:
		return interrupted(state)
	case ExitExited:
		return "agent exited (" + state + ")"
	}
	if lastStderr != "" {
		return "agent exited unexpectedly (" + state + "): " + lastStderr
	}
	return "agent exited unexpectedly (" + state + ")"
}
