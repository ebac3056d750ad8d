package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/svc-code/svc-code/libs/cpustat"
)

// cpuSplit is how the CPUs were used during a run, in CPUs (1 is one CPU
// busy throughout). Each figure covers a process and everything it
// started: the client is this program with its children (the raw `cat`,
// the shell of the raw PTY, the WeTTY client), the terminal service
// includes its shells and what they ran. Kernel threads are apart: they
// move a PTY's buffers, and so work for every path. Steal is CPU time the
// hypervisor gave other virtual machines while this one wanted it.
type cpuSplit struct {
	known                                                 bool
	client, terminal, gateway, wetty, kernel, rest, steal float64
}

// disturbance is the CPU that others took during the run: other
// processes, and other virtual machines.
func (c cpuSplit) disturbance() float64 { return c.rest + c.steal }

// measurement is one measured operation.
type measurement struct {
	outcome
	cpu cpuSplit
	// repeats is how many earlier attempts were discarded because other
	// processes were busy.
	repeats int
}

// procs are the processes whose CPU is reported; 0 for one not running.
type procs struct{ terminal, gateway, wetty, kernel int }

// roots lists the processes to sample, and where each one's figure goes.
func (p procs) roots() ([]int, []func(*cpuSplit) *float64) {
	pids := []int{os.Getpid(), p.terminal, p.gateway}
	slots := []func(*cpuSplit) *float64{
		func(c *cpuSplit) *float64 { return &c.client },
		func(c *cpuSplit) *float64 { return &c.terminal },
		func(c *cpuSplit) *float64 { return &c.gateway },
	}
	if p.wetty != 0 {
		pids = append(pids, p.wetty)
		slots = append(slots, func(c *cpuSplit) *float64 { return &c.wetty })
	}
	if p.kernel != 0 {
		pids = append(pids, p.kernel)
		slots = append(slots, func(c *cpuSplit) *float64 { return &c.kernel })
	}
	return pids, slots
}

// results holds every run, by operation and path: cat and echo have one
// run per round, interrupt o.interrupts per round.
type results map[string]map[string][]measurement

func (r results) add(kind, path string, x measurement) {
	if r[kind] == nil {
		r[kind] = map[string][]measurement{}
	}
	r[kind][path] = append(r[kind][path], x)
}

// measure runs every operation on every path, o.rounds times, rotating
// the order of the paths from round to round.
func measure(ctx context.Context, o options, paths []path, ps procs, file string, stdout io.Writer) (results, error) {
	res := results{}
	ops := []op{
		{kind: opCat, file: file, timeout: o.timeout},
		{kind: opEcho, count: o.echoes, timeout: o.timeout},
		{kind: opInterrupt, flood: o.flood, timeout: o.timeout},
	}
	for r := range o.rounds {
		fmt.Fprintf(stdout, "\nround %d/%d\n", r+1, o.rounds)
		order := append(paths[r%len(paths):len(paths):len(paths)], paths[:r%len(paths)]...)
		for _, x := range ops {
			n := 1
			if x.kind == opInterrupt {
				n = o.interrupts
			}
			for _, p := range order {
				for range n {
					got, err := measureOne(ctx, o, p, x, ps)
					if err != nil {
						return nil, fmt.Errorf("%s, %s, round %d: %w", x.kind, p.name, r+1, err)
					}
					res.add(x.kind, p.name, got)
					fmt.Fprintln(stdout, progressLine(x.kind, p.name, got))
				}
			}
		}
	}
	return res, nil
}

// othersPause is how long to wait before repeating a disturbed run.
const othersPause = 3 * time.Second

// maxRepeats bounds how often a disturbed run is repeated.
const maxRepeats = 2

// measureOne is one run, with the CPU use around its measured part. It
// starts once other processes (and other virtual machines, through steal)
// have used at most o.maxOthers CPUs for a second (waiting o.quietWait at
// most). A run during which they used more
// is repeated, up to maxRepeats times after a pause; the last attempt is
// kept either way.
func measureOne(ctx context.Context, o options, p path, x op, ps procs) (measurement, error) {
	for attempt := 0; ; attempt++ {
		if err := waitQuiet(ctx, o, ps); err != nil {
			return measurement{}, err
		}
		got, err := attemptOne(ctx, p, x, ps)
		if err != nil {
			return measurement{}, err
		}
		got.repeats = attempt
		if !got.cpu.known || got.cpu.disturbance() <= o.maxOthers || attempt == maxRepeats {
			return got, nil
		}
		select {
		case <-ctx.Done():
			return measurement{}, ctx.Err()
		case <-time.After(othersPause):
		}
	}
}

// waitQuiet waits until other processes have used at most o.maxOthers
// CPUs over a second, for o.quietWait at most (zero: not at all).
func waitQuiet(ctx context.Context, o options, ps procs) error {
	if o.quietWait <= 0 {
		return nil
	}
	deadline := time.Now().Add(o.quietWait)
	pids, _ := ps.roots()
	for {
		a, err := cpustat.TakeTrees(pids...)
		if err != nil {
			return nil // nothing to go by: run
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		b, err := cpustat.TakeTrees(pids...)
		if err != nil {
			return nil
		}
		if u := b.Since(a); u.Others+u.Steal <= o.maxOthers || time.Now().After(deadline) {
			return nil
		}
	}
}

func attemptOne(ctx context.Context, p path, x op, ps procs) (measurement, error) {
	measured, release, err := p.prepare(ctx, x)
	if cerr := ctx.Err(); cerr != nil {
		if err == nil {
			release()
		}
		return measurement{}, cerr
	}
	if err != nil {
		return measurement{}, fmt.Errorf("prepare: %w", err)
	}
	defer release()
	pids, slots := ps.roots()
	before, cpuErr := cpustat.TakeTrees(pids...)
	out, err := measured()
	after, afterErr := cpustat.TakeTrees(pids...)
	if cerr := ctx.Err(); cerr != nil {
		return measurement{}, cerr
	}
	if err != nil {
		return measurement{}, err
	}
	got := measurement{outcome: out}
	if cpuErr == nil && afterErr == nil {
		u := after.Since(before)
		got.cpu = cpuSplit{known: true, rest: u.Others, steal: u.Steal}
		for i, slot := range slots {
			*slot(&got.cpu) = u.Procs[i]
		}
	}
	return got, nil
}
