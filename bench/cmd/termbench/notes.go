package main

import (
	"fmt"
	"strings"

	"github.com/svc-code/svc-code/bench/internal/stats"
)

// command is how to reproduce this run.
func command(o options) string {
	var args []string
	add := func(changed bool, f string, v any) {
		if changed {
			args = append(args, fmt.Sprintf(f, v))
		}
	}
	add(o.sizeMiB != defaultSizeMiB, "-size %d", o.sizeMiB)
	add(o.rounds != defaultRounds, "-r %d", o.rounds)
	add(o.echoes != defaultEchoes, "-echoes %d", o.echoes)
	add(o.interrupts != defaultInterrupts, "-interrupts %d", o.interrupts)
	add(o.flood != defaultFlood, "-flood %s", o.flood)
	add(!o.wetty, "-wetty=%v", o.wetty)
	add(o.maxOthers != defaultMaxOthers, "-max-others %v", o.maxOthers)
	add(o.quietWait != defaultQuietWait, "-quiet-wait %s", o.quietWait)
	add(o.slowMBps != defaultSlowMBps, "-slow-mbps %v", o.slowMBps)
	add(o.flowOnly, "-flow-only%s", "")
	if len(args) == 0 {
		return "`make bench-terminal`, that is `go run ./bench/cmd/termbench` from the repository root"
	}
	a := strings.Join(args, " ")
	return "`make bench-terminal BENCH_ARGS=\"" + a + "\"`, that is `go run ./bench/cmd/termbench " + a + "` from the repository root"
}

// notes explain the figures; some depend on what this run measured.
func notes(o options, s section) []string {
	n := []string{
		fmt.Sprintf("Everything shares this machine's %d CPUs: the client (this program, or the Node client for wetty), "+
			"the services, the shells and `cat` itself. Through the gateway the output crosses two WebSocket hops and three "+
			"processes before the client; on the raw path it crosses none. CPU figures count each process with everything "+
			"it started and reaped (the terminal service with its shells and their `cat`, the client with the raw PTY's "+
			"`cat` and the Node client); kernel threads, which move every PTY's output to its reader, are counted apart "+
			"and not as other processes.", s.Machine.CPUs),
		"Throughput counts every byte the client received between the keystrokes and the marker, so it includes the " +
			"CR the terminal adds to every newline and a few hundred bytes of echoed command and marker. The clients do " +
			"not render anything: a browser's terminal would add its own cost on every path alike.",
		"WeTTY coalesces output for 2 ms before sending it (its `tinybuffer`), which sets a floor under its echo latency, " +
			"and pauses the shell when more than 2 MiB are unacknowledged; its Node client acknowledges at once, as " +
			"an infinitely fast browser would. The wetty client uses the WebSocket transport straight away (a browser " +
			"starts with HTTP long-polling and upgrades).",
		"The terminal service never holds up a shell for a slow client: a client that falls more than the scrollback " +
			"(1 MiB by default) behind is told how much it missed (a resync frame) and skips ahead. The `cat` figures count " +
			"delivered bytes only, and whether any output was dropped is a goal of its own: a user who runs `cat` expects " +
			"to see all of it. WeTTY pauses the shell instead (see above) and drops nothing.",
		"Ctrl-C is measured to the end of the flood as the user sees it: from the keystroke until a marker typed after it " +
			"arrives, so everything already buffered between `yes` and the client (the PTY, the service, the sockets) " +
			"is drained first.",
	}
	var repeated, disturbed, all int
	var others []float64
	for _, byPath := range s.Results {
		for _, runs := range byPath {
			for _, r := range runs {
				all++
				if r.repeats > 0 {
					repeated++
				}
				if r.cpu.known {
					others = append(others, r.cpu.disturbance())
					if r.cpu.disturbance() > o.maxOthers {
						disturbed++
					}
				}
			}
		}
	}
	if len(others) > 0 {
		line := fmt.Sprintf("Each run waited (%s at most) for other processes on the machine, and other virtual machines "+
			"through the hypervisor's steal time, to take no more than %.2f CPUs over a second before it started. They took "+
			"a median of %.2f CPUs (at most %.2f) during the %d runs kept",
			o.quietWait, o.maxOthers, stats.Median(others), maxFloat(others), all)
		if repeated > 0 {
			line += fmt.Sprintf("; %d were repeated because they took more than %.2f CPUs", repeated, o.maxOthers)
		}
		if disturbed > 0 {
			line += fmt.Sprintf("; of the runs kept, %d were still disturbed (see Every run)", disturbed)
		}
		n = append(n, line+".")
	}
	return n
}

func maxFloat(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
