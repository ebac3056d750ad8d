package cpustat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// TakeTrees samples the machine and, for each root, the CPU time of the
// root and every process descended from it, each counted with the time of
// the children it has reaped (cutime and cstime): a short-lived program
// that a shell ran, and waited for, counts for the shell's tree. A
// descendant that is itself one of roots, or below one, counts for that
// root only. A root that is not running is an error.
func TakeTrees(roots ...int) (Sample, error) { return takeTrees("/proc", roots) }

func takeTrees(proc string, roots []int) (Sample, error) {
	s := Sample{at: time.Now(), procs: make([]int64, len(roots))}
	var err error
	if s.machine, s.steal, s.busy, err = machineAndSteal(filepath.Join(proc, "stat")); err != nil {
		return Sample{}, err
	}
	entries, err := os.ReadDir(proc)
	if err != nil {
		return Sample{}, err
	}
	parent := make(map[int]int, len(entries))
	ticks := make(map[int]int64, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, t, err := treeTicks(filepath.Join(proc, e.Name(), "stat"))
		if err != nil {
			continue // gone since the listing
		}
		parent[pid], ticks[pid] = ppid, t
	}
	index := make(map[int]int, len(roots))
	for i, r := range roots {
		if _, ok := ticks[r]; !ok {
			return Sample{}, fmt.Errorf("process %d is not running", r)
		}
		index[r] = i
	}
	owner := make(map[int]int, len(ticks)) // pid → root index, or -1
	var find func(pid, depth int) int
	find = func(pid, depth int) int {
		if i, ok := index[pid]; ok {
			return i
		}
		if o, ok := owner[pid]; ok {
			return o
		}
		o := -1
		if pp, ok := parent[pid]; ok && pp > 1 && depth < 1000 {
			o = find(pp, depth+1)
		}
		owner[pid] = o
		return o
	}
	for pid, t := range ticks {
		if i := find(pid, 0); i >= 0 {
			s.procs[i] += t
		}
	}
	return s, nil
}

// treeTicks reads the parent (field 4) and utime + stime + cutime +
// cstime (fields 14 to 17) of /proc/<pid>/stat.
func treeTicks(path string) (ppid int, ticks int64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, errors.New(path + ": no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, 0, fmt.Errorf("%s: %d fields after the command name, want at least 15", path, len(f))
	}
	if ppid, err = strconv.Atoi(f[1]); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	ticks, err = sumFields(path, f[11:15])
	return ppid, ticks, err
}

// KernelThreads is the process that all of Linux's kernel threads descend
// from (kthreadd, pid 2), as a root for TakeTrees: kernel workers do part
// of the work of a PTY (moving its buffers to the line discipline), which
// would otherwise look like other processes' load. ok is false where pid
// 2 is not kthreadd (in a PID namespace, say).
func KernelThreads() (pid int, ok bool) { return kernelThreads("/proc") }

func kernelThreads(proc string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(proc, "2", "stat"))
	if err != nil {
		return 0, false
	}
	return 2, strings.HasPrefix(string(b), "2 (kthreadd) ")
}
