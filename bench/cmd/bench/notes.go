package main

import (
	_ "embed"
	"fmt"

	"github.com/svc-code/svc-code/bench/internal/report"
)

// intro opens BENCHMARKS.md when the program creates it.
//
//go:embed intro.md
var intro string

// command is how to reproduce this run.
func command(o options) string {
	args := fmt.Sprintf("-c %d -d %s -r %d", o.workers, o.duration, o.rounds)
	if o.warmup != defaultWarmup {
		args += fmt.Sprintf(" -warmup %s", o.warmup)
	}
	gorun := "`go run ./bench/cmd/bench " + args + "`"
	if o.workers == defaultWorkers && o.duration == defaultDuration && o.rounds == defaultRounds && o.warmup == defaultWarmup {
		return "`make bench`, that is " + gorun + " from the repository root"
	}
	return "`make bench BENCH_ARGS=\"" + args + "\"`, that is " + gorun + " from the repository root"
}

func notes(o options, m report.Machine, s report.Section) []string {
	queueing := fmt.Sprintf("With %d closed-loop workers the CPUs are saturated, so latency is mostly waiting for a CPU: "+
		"the added figures include the queueing that the gateway's own CPU use causes, not only its processing time, "+
		"and through the gateway throughput is bounded by what CPU the client and backend leave it.", o.workers)
	if o.workers == 1 {
		queueing = "With one round trip at a time nothing queues for the CPUs: the figures are the cost of one round trip, " +
			"and throughput is its inverse."
	}
	n := []string{
		fmt.Sprintf("The load generator and the stand-in backend (one process) and the gateway (another) share this machine's %d CPUs. "+
			"%s These are the honest figures for this machine; on a host where the gateway had its own cores they would differ.",
			m.CPUs, queueing),
		"The stand-in backend answers at almost no cost, so the throughput ratio compares the gateway's work with the bare minimum " +
			"a client and a server do per round trip; a backend doing real work per request would make the same gateway cost a smaller fraction.",
		"Through the gateway every round trip crosses two TCP connections (client → gateway → backend) and two process boundaries each way; " +
			"directly it crosses one connection, and none between processes, since the client and the stand-in backend share this program's Go runtime. " +
			"The gateway checks the Bearer token (HMAC), routes, rewrites headers and adds the internal credential.",
		"Each run opens its own connections; connection setup falls in the warm-up and is not measured. " +
			"Any failed or wrong answer fails the whole benchmark, so every figure comes from a path that answered correctly.",
	}
	if o.workers > 1 {
		n = append(n, "At this concurrency the p99s measure scheduling more than the gateway: on the direct path the client and "+
			"the backend saturate one Go runtime, where a goroutine whose answer has arrived can wait milliseconds for its turn, "+
			"so the direct p99 sits far above its p50 and sometimes above the gateway's. A p99 goal met here does not show "+
			"that the gateway adds at most 1 ms at the tail; `-c 1` measures one request's cost without that queueing.")
	}
	if median, maximum, ok := s.OthersCPU(); ok {
		line := fmt.Sprintf("Other processes on the machine used a median of %.2f CPUs (at most %.2f) during the runs", median, maximum)
		repeated, disturbed := s.Repeated(o.maxOthers)
		if repeated > 0 {
			line += fmt.Sprintf("; %s repeated because others used more than %.2f CPUs", runsWere(repeated), o.maxOthers)
		}
		if disturbed > 0 {
			line += fmt.Sprintf("; of the runs kept, %s still disturbed (see Every round)", runsWere(disturbed))
		}
		n = append(n, line+".")
	}
	return n
}

// runsWere is "1 run was" or "n runs were".
func runsWere(n int) string {
	if n == 1 {
		return "1 run was"
	}
	return fmt.Sprintf("%d runs were", n)
}
