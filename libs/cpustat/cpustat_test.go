package cpustat

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func writeFile(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stat")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestProcTicks(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    int64
		wantErr bool
	}{
		{"plain", "42 (gateway) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0 100 0 0\n", 325, false},
		{"command with spaces and parentheses", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0\n", 7, false},
		{"truncated", "7 (x) R 1 7\n", 0, true},
		{"no command", "7 x R\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := procTicks(writeFile(t, tt.data))
			if (err != nil) != tt.wantErr {
				t.Fatalf("procTicks error = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("procTicks = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestMachineTicks(t *testing.T) {
	got, err := machineTicks(writeFile(t, "cpu  100 5 50 9000 3 0 7 2 0 0\ncpu0 50 2 25 4500 1 0 3 1 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(155); got != want {
		t.Errorf("machineTicks = %d, want %d", got, want)
	}
}

func TestMachineAndSteal(t *testing.T) {
	tests := []struct {
		name                     string
		data                     string
		wantMachine, steal, busy int64
	}{
		{"with steal", "cpu  100 5 50 9000 3 2 7 42 0 0\n", 155, 42, 164},
		{"old kernel without steal", "cpu  100 5 50 9000 3 2 7\n", 155, 0, 164},
		{"no interrupt fields", "cpu  100 5 50 9000\n", 155, 0, 155},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, s, b, err := machineAndSteal(writeFile(t, tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if m != tt.wantMachine || s != tt.steal || b != tt.busy {
				t.Errorf("machineAndSteal = %d, %d, %d, want %d, %d, %d", m, s, b, tt.wantMachine, tt.steal, tt.busy)
			}
		})
	}
}

func TestSince(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := Sample{at: t0, machine: 1000, steal: 10, busy: 1100, procs: []int64{100, 200}}
	b := Sample{at: t0.Add(2 * time.Second), machine: 1000 + 300, steal: 10 + 40, busy: 1100 + 360, procs: []int64{100 + 150, 200 + 50}}
	u := b.Since(a)
	if got, want := u.Procs, []float64{0.75, 0.25}; got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Procs = %v, want %v", got, want)
	}
	if got, want := u.ProcTime, []time.Duration{1500 * time.Millisecond, 500 * time.Millisecond}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ProcTime = %v, want %v", got, want)
	}
	if got, want := u.Others, 0.5; got != want {
		t.Errorf("Others = %v, want %v", got, want)
	}
	if got, want := u.Steal, 0.2; got != want {
		t.Errorf("Steal = %v, want %v", got, want)
	}
	if got, want := u.Busy, 1.8; got != want {
		t.Errorf("Busy = %v, want %v", got, want)
	}
}

func TestTakeSelf(t *testing.T) {
	a, err := Take(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) { // burn a little CPU
	}
	b, err := Take(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u := b.Since(a); len(u.Procs) != 1 || u.Procs[0] < 0 || u.Others < 0 {
		t.Errorf("Since = %+v, want one non-negative figure and non-negative others", u)
	}
}
