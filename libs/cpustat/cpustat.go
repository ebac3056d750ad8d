// Package cpustat reads how much CPU time processes and the whole machine
// used, from Linux's /proc, so that a benchmark can show how its processes
// shared the CPUs and whether anything else was running.
package cpustat

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ticksPerSecond is USER_HZ, the unit of /proc's CPU times: 100 on every
// architecture Linux exposes to user space through /proc.
const ticksPerSecond = 100

// Sample is the CPU time used so far by the machine and by some processes.
type Sample struct {
	at      time.Time
	machine int64   // user + nice + system ticks, all CPUs
	steal   int64   // ticks the hypervisor ran other guests instead
	busy    int64   // machine, plus interrupts and softirqs: every tick not idle
	procs   []int64 // utime + stime ticks of each process
}

// Usage is CPU use between two samples, in CPUs: 1 is one CPU busy for
// the whole interval.
type Usage struct {
	Procs []float64 // each process's, in the order they were sampled
	// ProcTime is each process's CPU time (user and system) between the
	// samples, in the same order.
	ProcTime []time.Duration
	// Others is what every other process on the machine used (user and
	// system time; interrupt time, which includes the loopback network
	// traffic of the processes sampled, is left out).
	Others float64
	// Steal is CPU time the hypervisor gave to other virtual machines
	// while this one wanted to run (0 on bare metal).
	Steal float64
	// Busy is the whole machine's use: every process, interrupts and
	// softirqs (where the loopback network's receive work runs) included.
	Busy float64
}

// Take samples the machine and the processes pids.
func Take(pids ...int) (Sample, error) {
	s := Sample{at: time.Now(), procs: make([]int64, len(pids))}
	var err error
	if s.machine, s.steal, s.busy, err = machineAndSteal("/proc/stat"); err != nil {
		return Sample{}, err
	}
	for i, pid := range pids {
		if s.procs[i], err = procTicks(fmt.Sprintf("/proc/%d/stat", pid)); err != nil {
			return Sample{}, err
		}
	}
	return s, nil
}

// Since is the CPU use from an earlier sample of the same processes to s.
func (s Sample) Since(earlier Sample) Usage {
	secs := s.at.Sub(earlier.at).Seconds()
	if secs <= 0 || len(s.procs) != len(earlier.procs) {
		return Usage{}
	}
	u := Usage{Procs: make([]float64, len(s.procs)), ProcTime: make([]time.Duration, len(s.procs))}
	others := s.machine - earlier.machine
	for i := range s.procs {
		d := s.procs[i] - earlier.procs[i]
		u.Procs[i] = float64(d) / ticksPerSecond / secs
		u.ProcTime[i] = time.Duration(d) * time.Second / ticksPerSecond
		others -= d
	}
	u.Others = max(float64(others)/ticksPerSecond/secs, 0)
	u.Steal = max(float64(s.steal-earlier.steal)/ticksPerSecond/secs, 0)
	u.Busy = max(float64(s.busy-earlier.busy)/ticksPerSecond/secs, 0)
	return u
}

// machineTicks sums user, nice and system of the "cpu" line of /proc/stat.
func machineTicks(path string) (int64, error) {
	machine, _, _, err := machineAndSteal(path)
	return machine, err
}

// machineAndSteal reads the "cpu" line of /proc/stat once: the machine's
// ticks (user, nice and system), the steal field (the eighth; 0 where the
// kernel does not report it) and the busy ticks (the machine's, plus irq
// and softirq, fields 6 and 7).
func machineAndSteal(path string) (machine, steal, busy int64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != "cpu" {
		return 0, 0, 0, fmt.Errorf("%s: unexpected first line %q", path, line)
	}
	if machine, err = sumFields(path, f[1:4]); err != nil {
		return 0, 0, 0, err
	}
	if len(f) > 8 {
		steal, _ = strconv.ParseInt(f[8], 10, 64)
	}
	busy = machine
	if len(f) > 7 {
		irq, err := sumFields(path, f[6:8])
		if err != nil {
			return 0, 0, 0, err
		}
		busy += irq
	}
	return machine, steal, busy, nil
}

// procTicks sums utime and stime (fields 14 and 15) of /proc/<pid>/stat.
func procTicks(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// count fields after its closing parenthesis, where field 3 starts.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New(path + ": no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: %d fields after the command name, want at least 13", path, len(f))
	}
	return sumFields(path, f[11:13])
}

func sumFields(path string, fields []string) (int64, error) {
	var sum int64
	for _, s := range fields {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		sum += n
	}
	return sum, nil
}
