package main

import (
	"fmt"
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
	missing   int64
	results   int64
	timedOut  bool
	parseErrs int64

	rssBefore, rssAfter int64
	perSock             float64 // bytes

	cpuKnown      bool
	cpu           []float64 // bench, chat A (+ its agents), chat B (+ its agents)
	others, steal float64

	machine  report.Machine
	revision string
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// goals is the table of goals, figures and verdicts.
func (r result) goals() string {
	var b strings.Builder
	b.WriteString("| Measure | Goal | Measured | Verdict |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| Sockets open at once (2 instances) | 10,000 | %d | %s |\n", r.opened, report.Met(r.opened >= goalSockets))
	fmt.Fprintf(&b, "| Frames delivered per second | ≥ 25,000 | %.0f | %s |\n", r.fps, report.Met(r.fps >= goalFrames && r.opened >= goalSockets))
	fmt.Fprintf(&b, "| p99 agent-write-to-receipt latency | ≤ 50 ms | %s (p50 %s) | %s |\n", ms(r.lat.P99), ms(r.lat.P50), report.Met(r.lat.P99 <= goalP99 && r.lat.Count > 0 && r.missing == 0))
	fmt.Fprintf(&b, "| Chat memory per idle socket | ≤ 20 KB | %.1f KiB | %s |\n", r.perSock/1024, report.Met(r.perSock <= goalIdlePerSock))
	return b.String()
}

func (r result) details() []string {
	d := []string{
		fmt.Sprintf("%d sockets on %d sessions (%d per session, half on each instance); each session's agent wrote %d assistant messages %s apart; half the sessions are run by each instance, the other instance relays them through Redis.",
			r.opened, r.o.sessions, r.opened/r.o.sessions, r.o.chunks, r.delay),
		fmt.Sprintf("%d frames received in %s (first prompt sent to last frame received); %d timed assistant frames, %d missing, %d of %d sockets saw the turn's result%s.",
			r.frames, r.window.Round(time.Millisecond), r.lat.Count, r.missing, r.results, r.opened, map[bool]string{true: " (timed out waiting)", false: ""}[r.timedOut]),
		fmt.Sprintf("Chat RSS (both instances) %.1f MiB before the sockets, %.1f MiB with them idle.", mib(r.rssBefore), mib(r.rssAfter)),
	}
	if r.parseErrs > 0 {
		d = append(d, fmt.Sprintf("%d frames could not be parsed.", r.parseErrs))
	}
	if r.openErr != nil {
		d = append(d, fmt.Sprintf("Opening stopped at the first failure: %v.", r.openErr))
	}
	if r.cpuKnown && len(r.cpu) == 3 {
		d = append(d, fmt.Sprintf("CPUs used during the load: benchmark client %.2f, chat A + its agents %.2f, chat B + its agents %.2f, everything else %.2f (steal %.2f).",
			r.cpu[0], r.cpu[1], r.cpu[2], r.others, r.steal))
	}
	return d
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
	fmt.Fprintf(&b, "Run %s on %s, chat built from %s. Reproduce with `make bench-chat` (flags via `BENCH_ARGS`, e.g. `BENCH_ARGS=\"-n 2000\"`); this run: `chatbench -n %d -sessions %d -chunks %d -rate %.0f`.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), r.machine, r.revision, r.o.n, r.o.sessions, r.o.chunks, r.o.rate)
	b.WriteString(r.goals() + "\n")
	for _, d := range r.details() {
		b.WriteString("- " + d + "\n")
	}
	b.WriteString(`
How it is measured:

- Two chat processes (built from the workspace) share a throwaway PostgreSQL schema and Redis prefix; the agent is the fake Claude CLI (` + "`SLOW n`" + ` script). Everything runs on this one machine, benchmark client included, so the client's CPU is taken from the services'.
- Latency is from the ` + "`timestamp`" + ` the fake CLI puts in each assistant message when it writes it (millisecond resolution, truncated, so up to 1 ms too high) to the moment the benchmark's socket read the frame: it covers the agent's pipe, chat's parsing and storing of the line, the Redis relay to the other instance, and the WebSocket write. Chat itself sends no publish time, so this is the closest measurable "publish" point. p99 is over every assistant frame on every socket; a missing frame fails the goal.
- Frames per second counts every frame the sockets received (assistant messages plus the turn's system, prompt and result frames) over the window from the first prompt to the last frame; the offered rate is set by the fake's delay (sockets / rate).
- Memory per idle socket is the growth of both chat processes' resident set (VmRSS) from before the sockets were opened to 3 s after the last one joined, divided by the sockets; kernel socket buffers are not in it.
`)
	b.WriteString(endMarker + "\n")
	return b.String()
}
