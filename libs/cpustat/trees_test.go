package cpustat

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// fakeProc writes a /proc with the machine's line and, for each pid, its
// parent and four tick counts (utime, stime, cutime, cstime).
func fakeProc(t *testing.T, machine string, procs map[int][5]int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(machine), 0o600); err != nil {
		t.Fatal(err)
	}
	for pid, p := range procs {
		d := filepath.Join(dir, fmt.Sprint(pid))
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%d (proc %d) S %d %d %d 0 -1 0 0 0 0 0 %d %d %d %d 20 0 1 0 100 0 0\n",
			pid, pid, p[0], pid, pid, p[1], p[2], p[3], p[4])
		if err := os.WriteFile(filepath.Join(d, "stat"), []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Not processes: ignored.
	if err := os.Mkdir(filepath.Join(dir, "self"), 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestTakeTrees(t *testing.T) {
	// 1 init; 10 the benchmark, whose children are 20 (a service, with
	// shell 21 and its child 22) and 30 (another service); 11 a process of
	// the benchmark's that is no root; 99 unrelated.
	procs := map[int][5]int64{
		1:  {0, 1, 1, 0, 0},
		10: {1, 100, 10, 50, 5},
		11: {10, 7, 0, 0, 0},
		20: {10, 200, 20, 0, 0},
		21: {20, 30, 3, 40, 4},
		22: {21, 1, 1, 0, 0},
		30: {10, 300, 30, 0, 0},
		99: {1, 999, 0, 0, 0},
	}
	proc := fakeProc(t, "cpu  5000 0 1000 9000 0 0 0 0 0 0\n", procs)
	tests := []struct {
		name  string
		roots []int
		want  []int64
	}{
		{"each service apart from the benchmark", []int{10, 20, 30}, []int64{100 + 10 + 50 + 5 + 7, 200 + 20 + 30 + 3 + 40 + 4 + 2, 330}},
		{"the benchmark holds its services", []int{10}, []int64{172 + 299 + 330}},
		{"a shell apart from its service", []int{20, 21}, []int64{220, 79}},
		{"a root outside the others", []int{99, 30}, []int64{999, 330}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := takeTrees(proc, tt.roots)
			if err != nil {
				t.Fatal(err)
			}
			if s.machine != 6000 {
				t.Errorf("machine = %d, want 6000", s.machine)
			}
			for i := range tt.want {
				if s.procs[i] != tt.want[i] {
					t.Errorf("procs = %v, want %v", s.procs, tt.want)
					break
				}
			}
		})
	}
	if _, err := takeTrees(proc, []int{10, 12345}); err == nil {
		t.Error("takeTrees with a root that is not running succeeded, want an error")
	}
}

// TestTakeTreesCountsReapedChildren runs a child that burns CPU and exits:
// once reaped, its time is this process's.
func TestTakeTreesCountsReapedChildren(t *testing.T) {
	a, err := TakeTrees(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	time.Sleep(10 * time.Millisecond)
	b, err := TakeTrees(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := b.procs[0] - a.procs[0]; d < 5 {
		t.Errorf("the tree gained %d ticks, want the child's CPU time (at least 5)", d)
	}
}

func TestKernelThreads(t *testing.T) {
	tests := []struct {
		name, stat string
		want       bool
	}{
		{"kthreadd", "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0\n", true},
		{"a process in a PID namespace", "2 (bash) S 1 2 2 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 3 0 0\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proc := t.TempDir()
			if err := os.Mkdir(filepath.Join(proc, "2"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(proc, "2", "stat"), []byte(tt.stat), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, ok := kernelThreads(proc); ok != tt.want {
				t.Errorf("kernelThreads = %v, want %v", ok, tt.want)
			}
		})
	}
	if _, ok := kernelThreads(t.TempDir()); ok {
		t.Error("kernelThreads without a pid 2 = true, want false")
	}
}
