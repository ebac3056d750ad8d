package tasks

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// openFiles maps every file that a process holds open, among the task
// files (names ending in Suffix), to the ids of those processes. It reads
// /proc/<pid>/fd of every process it may inspect (the agents run as this
// user). It returns nil when the proc file system cannot be read, so that
// the caller falls back to the files' last change.
func (f *Finder) openFiles() map[string][]int {
	proc := f.Proc
	if proc == "" {
		proc = "/proc"
	}
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(proc, "self", "fd")); err != nil {
		return nil // not a Linux-style proc
	}
	holders := map[string][]int{}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || pid == self {
			continue // chat's own reads of a task file do not make it run
		}
		fdDir := filepath.Join(proc, e.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or another user's
		}
		seen := map[string]bool{}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !strings.HasSuffix(target, Suffix) || seen[target] {
				continue
			}
			seen[target] = true
			holders[target] = append(holders[target], pid)
		}
	}
	for _, pids := range holders {
		sort.Ints(pids)
	}
	return holders
}
