package procs

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		line        string
		wantState   byte
		wantSession int
		wantOK      bool
	}{
		{"42 (bash) S 1 42 42 34816 42 4194560 ...", 'S', 42, true},
		{"43 (a b) c) (d) Z 42 43 42 0", 'Z', 42, true},
		{"44 (x) R 1 2", 0, 0, false},
		{"45 (x) R 1 2 nan 0", 0, 0, false},
		{"garbage", 0, 0, false},
		{"", 0, 0, false},
		{"46 (x)", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			state, session, ok := parseStat([]byte(tt.line))
			if state != tt.wantState || session != tt.wantSession || ok != tt.wantOK {
				t.Errorf("got %q %d %v, want %q %d %v", state, session, ok, tt.wantState, tt.wantSession, tt.wantOK)
			}
		})
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (bash) S 1 42 42 34816"))
	f.Add([]byte("1 ()) ) Z 0 0 0"))
	f.Fuzz(func(_ *testing.T, line []byte) { parseStat(line) })
}

// TestKillSession: every process of the session goes, in whatever group,
// and the leader stays a zombie (WaitExited does not reap) until reaped.
func TestKillSession(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "(trap '' HUP TERM; sleep 300) & sleep 300 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sid := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, _ := Alive(sid); n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session's processes did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := KillSession(sid); err != nil {
		t.Fatal(err)
	}
	if err := WaitExited(sid); err != nil {
		t.Fatal(err)
	}
	if n, _ := Alive(sid); n != 0 {
		t.Errorf("%d processes of the session still run", n)
	}
	leader := false
	ms, _ := members(sid)
	for _, m := range ms {
		leader = leader || m.pid == sid && m.zombie
	}
	if !leader {
		t.Errorf("the leader is not a zombie before reaping: %+v", ms)
	}
	err := cmd.Wait()
	if code := ExitCode(cmd.ProcessState, err); code != 137 {
		t.Errorf("exit code %d, want 137", code)
	}
	if _, err := SignalSession(1, syscall.SIGTERM); err == nil {
		t.Error("SignalSession(1) was not refused")
	}
}
