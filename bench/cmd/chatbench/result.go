package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svc-code/svc-code/bench/internal/report"
	"github.com/svc-code/svc-code/bench/internal/stats"
)

// result is one run's figures.
type result struct {
	o         options
	opened    int
	openErr   error
	nofile    uint64
	delay     time.Duration
	window    time.Duration
	frames    int64
	fps       float64
	lat       stats.Summary
	phases    []phase
	missing   int64
	results   int64
	timedOut  bool
	parseErrs int64
	// Logged frames seen at or below a socket's previous line, and gaps.
	repeated, skipped int64

	loadBefore, loadAfter string // 1-minute load averages

	rssBefore, rssAfter int64
	perSock             float64 // bytes

	cpuKnown      bool
	cpu           []float64 // bench, chat A (+ its agents), chat B (+ its agents)
	others, steal float64

	machine  report.Machine
	revision string
}

// phase is the latency of a range of message indexes (each session's
// k-th assistant message, on every socket).
type phase struct {
	from, to      int // 1-based, inclusive
	p50, p99, max time.Duration
}

// phasesOf splits latencies by message index: the first message, the next
// four, the rest; the first messages pay for the turn's start.
func phasesOf(byIndex [][]time.Duration) []phase {
	var out []phase
	for _, r := range [][2]int{{1, 1}, {2, 5}, {6, len(byIndex)}} {
		r[1] = min(r[1], len(byIndex))
		if r[0] > r[1] {
			continue
		}
		var all []time.Duration
		for _, l := range byIndex[r[0]-1 : r[1]] {
			all = append(all, l...)
		}
		if len(all) == 0 {
			continue
		}
		slices.Sort(all)
		out = append(out, phase{from: r[0], to: r[1], p50: stats.Percentile(all, 50), p99: stats.Percentile(all, 99), max: all[len(all)-1]})
	}
	return out
}

func (p phase) String() string {
	which := fmt.Sprintf("message %d", p.from)
	if p.to > p.from {
		which = fmt.Sprintf("messages %d–%d", p.from, p.to)
	}
	return fmt.Sprintf("%s: p50 %s, p99 %s, max %s", which, ms(p.p50), ms(p.p99), ms(p.max))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// goals is the table of goals, figures and verdicts.
func (r result) goals() string {
	var b strings.Builder
	b.WriteString("| Measure | Goal | Measured | Verdict |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| Sockets open at once (2 instances) | 10,000 | %d | %s |\n", r.opened, report.Met(r.opened >= goalSockets))
	fmt.Fprintf(&b, "| Frames delivered per second | ≥ 25,000 | %.0f | %s |\n", r.fps, report.Met(r.fps >= goalFrames && r.opened >= goalSockets))
	fmt.Fprintf(&b, "| p99 agent-write-to-receipt latency | ≤ 50 ms | %s (p50 %s) | %s |\n", ms(r.lat.P99), ms(r.lat.P50), report.Met(r.lat.P99 <= goalP99 && r.lat.Count > 0 && r.missing == 0 && r.repeated == 0 && r.skipped == 0))
	fmt.Fprintf(&b, "| Chat memory per idle socket | ≤ 20 KB | %.1f KiB | %s |\n", r.perSock/1024, report.Met(r.perSock <= goalIdlePerSock))
	return b.String()
}

func (r result) details() []string {
	d := []string{
		fmt.Sprintf("%d sockets on %d sessions (%d per session, half on each instance); each session's agent wrote %d assistant messages %s apart; half the sessions are run by each instance, the other instance relays them through Redis. %s",
			r.opened, r.o.sessions, r.opened/r.o.sessions, r.o.chunks, r.delay, r.schedule()),
		fmt.Sprintf("%d frames received in %s (first prompt sent to last frame received); %d timed assistant frames, %d missing, %d of %d sockets saw the turn's result%s; logged frames repeated or out of order on a socket: %d, after a gap in the lines: %d.",
			r.frames, r.window.Round(time.Millisecond), r.lat.Count, r.missing, r.results, r.opened, map[bool]string{true: " (timed out waiting)", false: ""}[r.timedOut], r.repeated, r.skipped),
		"Latency by each session's message index: " + joinPhases(r.phases) + ".",
		fmt.Sprintf("Chat RSS (both instances) %.1f MiB before the sockets, %.1f MiB with them idle.", mib(r.rssBefore), mib(r.rssAfter)),
	}
	if r.parseErrs > 0 {
		d = append(d, fmt.Sprintf("%d frames could not be parsed.", r.parseErrs))
	}
	if r.openErr != nil {
		d = append(d, fmt.Sprintf("Opening stopped at the first failure: %v.", r.openErr))
	}
	if r.cpuKnown && len(r.cpu) == 3 {
		d = append(d, fmt.Sprintf("CPUs used during the load: benchmark client %.2f, chat A + its agents %.2f, chat B + its agents %.2f, everything else %.2f (steal %.2f); 1-minute load average %s before, %s after.",
			r.cpu[0], r.cpu[1], r.cpu[2], r.others, r.steal, r.loadBefore, r.loadAfter))
	}
	return d
}

func joinPhases(ps []phase) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, "; ")
}

// schedule says how the measured turns started.
func (r result) schedule() string {
	var b strings.Builder
	if r.o.warmup {
		b.WriteString("The agent processes were started by an unmeasured one-message turn first. ")
	} else {
		b.WriteString("No warm-up: the measured turn starts the agent processes. ")
	}
	if r.o.stagger {
		fmt.Fprintf(&b, "The sessions' turns started %s apart (spread over one interval), so the agents write at a steady rate.",
			(r.delay / time.Duration(r.o.sessions)).Round(10*time.Microsecond))
	} else {
		b.WriteString("All turns started at once, so every agent writes in the same instant: a burst of one frame per socket every interval.")
	}
	return b.String()
}

func (r result) text() string {
	var b strings.Builder
	b.WriteString("\n" + r.goals() + "\n")
	for _, d := range r.details() {
		b.WriteString("- " + d + "\n")
	}
	return b.String()
}

func (r result) markdown() string {
	var b strings.Builder
	b.WriteString(startMarker + "\n")
	b.WriteString("## Chat fan-out (two instances)\n\n")
	fmt.Fprintf(&b, "Run %s on %s, chat built from %s. Reproduce with `make bench-chat` (flags via `BENCH_ARGS`, e.g. `BENCH_ARGS=\"-n 2000\"`); this run: `chatbench -n %d -sessions %d -chunks %d -rate %.0f -warmup=%t -stagger=%t`.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), r.machine, r.revision, r.o.n, r.o.sessions, r.o.chunks, r.o.rate, r.o.warmup, r.o.stagger)
	b.WriteString(r.goals() + "\n")
	for _, d := range r.details() {
		b.WriteString("- " + d + "\n")
	}
	b.WriteString(`
How it is measured:

- Two chat processes (built from the workspace) share a throwaway PostgreSQL schema and Redis prefix; the agent is the fake Claude CLI (` + "`SLOW n`" + ` script). Everything runs on this one machine, benchmark client included, so the client's CPU is taken from the services'.
- Latency is from the ` + "`timestamp`" + ` the fake CLI puts in each assistant message when it writes it (millisecond resolution, truncated, so up to 1 ms too high) to the moment the benchmark's socket read the frame: it covers the agent's pipe, chat's parsing and storing of the line, the Redis relay to the other instance, and the WebSocket write. Chat itself sends no publish time, so this is the closest measurable "publish" point. p99 is over every assistant frame on every socket; a missing frame fails the goal.
- With ` + "`-warmup`" + ` (the default) each session first runs an unmeasured one-message turn, so the measured turn finds its agent process running, as it does between a session's turns; with ` + "`-stagger`" + ` (the default) the measured turns start spread over one message interval, so the offered load is steady instead of synchronised bursts. ` + "`-warmup=false -stagger=false`" + ` measures the worst case: 100 agent processes started in the same instant and all agents writing in the same millisecond.
- Frames per second counts every frame the sockets received (assistant messages plus the turn's system, prompt and result frames) over the window from the first prompt to the last frame; the offered rate is set by the fake's delay (sockets / rate).
- Memory per idle socket is the growth of both chat processes' resident set (VmRSS) from before the sockets were opened to 3 s after the last one joined, divided by the sockets; kernel socket buffers are not in it.
`)
	b.WriteString(endMarker + "\n")
	return b.String()
}
