package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svc-code/svc-code/bench/internal/report"
	"github.com/svc-code/svc-code/bench/internal/stats"
)

// result is one run's figures.
type result struct {
	o       options
	opened  int
	openErr error
	nofile  uint64
	delay   time.Duration

	chat  load
	floor *load // the bare fan-out server's run, with -floor
	// owners is how many sessions each chat instance ran, largest first.
	owners    []int
	ownersErr error

	rssBefore, rssAfter int64
	perSock             float64 // bytes

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
// four, the rest (up to the 30th, and past it the rest again: a long turn
// shows the steady state once the turns' start has drained); the first
// messages pay for the turn's start.
func phasesOf(byIndex [][]time.Duration) []phase {
	var out []phase
	ranges := [][2]int{{1, 1}, {2, 5}, {6, min(30, len(byIndex))}}
	if len(byIndex) > 30 {
		ranges = append(ranges, [2]int{31, len(byIndex)})
	}
	for _, r := range ranges {
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
	l := r.chat
	var b strings.Builder
	b.WriteString("| Measure | Goal | Measured | Verdict |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| Sockets open at once (2 instances) | 10,000 | %d | %s |\n", r.opened, report.Met(r.opened >= goalSockets))
	fmt.Fprintf(&b, "| Frames delivered per second | ≥ 25,000 | %.0f | %s |\n", l.fps, report.Met(l.fps >= goalFrames && r.opened >= goalSockets))
	fmt.Fprintf(&b, "| p99 agent-write-to-receipt latency | ≤ 50 ms | %s (p50 %s) | %s |\n", ms(l.lat.P99), ms(l.lat.P50), report.Met(l.lat.P99 <= goalP99 && l.ok()))
	fmt.Fprintf(&b, "| Chat memory per idle socket | ≤ 20 KB | %.1f KiB | %s |\n", r.perSock/1024, report.Met(r.perSock <= goalIdlePerSock))
	return b.String()
}

// floorTable compares the chat run with the floor's.
func (r result) floorTable() string {
	if r.floor == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("| Server | Frames/s | p50 | p99 | max of message 1 | CPUs: client, server(s) | Machine busy |\n|---|--:|--:|--:|--:|--:|--:|\n")
	row := func(name string, l load) {
		first := time.Duration(0)
		if len(l.phases) > 0 && l.phases[0].from == 1 {
			first = l.phases[0].max
		}
		cpus, busy := "?", "?"
		if l.cpuKnown {
			parts := make([]string, len(l.cpu))
			for i, c := range l.cpu {
				parts[i] = fmt.Sprintf("%.2f", c)
			}
			cpus, busy = strings.Join(parts, ", "), fmt.Sprintf("%.2f of %d", l.busy, r.machine.CPUs)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %s | %s | %s |\n", name, l.fps, ms(l.lat.P50), ms(l.lat.P99), ms(first), cpus, busy)
	}
	row("chat (2 instances, log in PostgreSQL, Redis relay, fake CLI agents)", r.chat)
	row("floor (bare fan-out, 1 process)", *r.floor)
	if r.floor.lat.P99 > 0 {
		fmt.Fprintf(&b, "\nchat's p99 is %.1f× the floor's, its p50 %.1f× (same sockets, frames, schedule and client, one after the other in this run).\n",
			float64(r.chat.lat.P99)/float64(r.floor.lat.P99), float64(r.chat.lat.P50)/float64(max(r.floor.lat.P50, time.Microsecond)))
	}
	if !r.floor.ok() {
		fmt.Fprintf(&b, "\nThe floor run lost frames or order (missing %d, repeated %d, after a gap %d, timed out %t): its figures are not comparable.\n",
			r.floor.missing, r.floor.repeated, r.floor.skipped, r.floor.timedOut)
	}
	return b.String()
}

func (r result) details() []string {
	l := r.chat
	run := "which instance ran each session is not known"
	if r.ownersErr == nil && len(r.owners) > 0 {
		parts := make([]string, len(r.owners))
		for i, n := range r.owners {
			parts[i] = strconv.Itoa(n)
		}
		run = "the instances ran " + strings.Join(parts, " and ") + " of the sessions (the first to claim a session runs it; its frames reach the other instance's sockets through Redis)"
	}
	d := []string{
		fmt.Sprintf("%d sockets on %d sessions (%d per session, half on each instance); each session's agent wrote %d assistant messages %s apart; %s. %s",
			r.opened, r.o.sessions, r.opened/r.o.sessions, r.o.chunks, r.delay, run, r.schedule()),
		fmt.Sprintf("%d frames received in %s (first prompt sent to last frame received); %d timed assistant frames, %d missing, %d of %d sockets saw the turn's result%s; logged frames repeated or out of order on a socket: %d, after a gap in the lines: %d.",
			l.frames, l.window.Round(time.Millisecond), l.lat.Count, l.missing, l.results, r.opened, map[bool]string{true: " (timed out waiting)", false: ""}[l.timedOut], l.repeated, l.skipped),
		"Latency by each session's message index: " + joinPhases(l.phases) + ".",
		fmt.Sprintf("Chat RSS (both instances) %.1f MiB before the sockets, %.1f MiB with them idle.", mib(r.rssBefore), mib(r.rssAfter)),
	}
	if l.parseErrs > 0 {
		d = append(d, fmt.Sprintf("%d frames could not be parsed.", l.parseErrs))
	}
	if r.openErr != nil {
		d = append(d, fmt.Sprintf("Opening stopped at the first failure: %v.", r.openErr))
	}
	if l.cpuKnown && len(l.cpu) == 3 {
		d = append(d, fmt.Sprintf("CPUs used during the load: benchmark client %.2f, chat A + its agents %.2f, chat B + its agents %.2f, everything else %.2f (steal %.2f); the machine was busy %.2f of its %d CPUs (interrupts and softirqs, where loopback TCP's receive work runs, included); 1-minute load average %s before, %s after.",
			l.cpu[0], l.cpu[1], l.cpu[2], l.others, l.steal, l.busy, r.machine.CPUs, l.loadBefore, l.loadAfter))
	}
	if f := r.floor; f != nil {
		d = append(d, "Floor latency by message index: "+joinPhases(f.phases)+".")
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
	if t := r.floorTable(); t != "" {
		b.WriteString(t + "\n")
	}
	for _, d := range r.details() {
		b.WriteString("- " + d + "\n")
	}
	return b.String()
}

func (r result) markdown() string {
	var b strings.Builder
	b.WriteString(startMarker + "\n")
	b.WriteString("## Chat fan-out (two instances)\n\n")
	fmt.Fprintf(&b, "Run %s on %s, chat built from %s. Reproduce with `make bench-chat` (flags via `BENCH_ARGS`, e.g. `BENCH_ARGS=\"-n 2000\"`); this run: `chatbench -n %d -sessions %d -chunks %d -rate %.0f -warmup=%t -stagger=%t -floor=%t -sync-agent-log=%t`.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), r.machine, r.revision, r.o.n, r.o.sessions, r.o.chunks, r.o.rate, r.o.warmup, r.o.stagger, r.o.floor, r.o.syncAgentLog)
	b.WriteString(r.goals() + "\n")
	if t := r.floorTable(); t != "" {
		b.WriteString(t + "\n")
	}
	for _, d := range r.details() {
		b.WriteString("- " + d + "\n")
	}
	b.WriteString(`
How it is measured:

- Two chat processes (built from the workspace) share a throwaway PostgreSQL schema and Redis prefix; the agent is the fake Claude CLI (` + "`SLOW n`" + ` script). Chat commits the agent messages without waiting for the disk (its default), unless the run's command above says ` + "`-sync-agent-log=true`" + ` (` + "`CHAT_SYNC_AGENT_LOG=on`" + `); the users' prompts always wait for it. Everything runs on this one machine, benchmark client included, so the client's CPU is taken from the services'. The client reads its sockets with two goroutines, each waiting on an epoll set of half of them and reading a ready socket straight from its descriptor, and recognises the load's agent frames by their ends without decoding them: read with a goroutine and a JSON decode per frame, it fell behind at each turn's start and its own lag was counted as latency (the floor below measured p99 125–154 ms that way, 11–14 ms now).
- Latency is from the ` + "`timestamp`" + ` the fake CLI puts in each assistant message when it writes it (millisecond resolution, truncated, so up to 1 ms too high) to the moment the benchmark's socket read the frame: it covers the agent's pipe, chat's parsing and storing of the line, the Redis relay to the other instance, and the WebSocket write. Chat itself sends no publish time, so this is the closest measurable "publish" point. p99 is over every assistant frame on every socket; a missing frame fails the goal.
- With ` + "`-warmup`" + ` (the default) each session first runs an unmeasured one-message turn, so the measured turn finds its agent process running, as it does between a session's turns; the measured turns start 2 s after the warm-up's last result, when its own tail (turn records and events) is over; with ` + "`-stagger`" + ` (the default) they start spread over one message interval, so the offered load is steady instead of synchronised bursts. ` + "`-warmup=false -stagger=false`" + ` measures the worst case: 100 agent processes started in the same instant and all agents writing in the same millisecond.
- Frames per second counts every frame the sockets received (assistant messages plus the turn's system, prompt and result frames) over the window from the first prompt to the last frame; the offered rate is set by the fake's delay (sockets / rate).
- The floor (` + "`-floor`" + `, the default) is the same load (sockets, frames of the same size and layout, schedule, warm-up, client) served after the chat run, alone on the machine, by the least a server could do: one process that writes each frame, encoded once, to each socket of its session with one ` + "`write`" + ` straight from the session's goroutine, with no log, PostgreSQL, Redis relay, agent process or queue. Its latency runs from that write's timestamp. What the floor cannot do on this machine no server can; what chat adds to it is chat's.
- Memory per idle socket is the growth of both chat processes' resident set (VmRSS) from before the sockets were opened to 3 s after the last one joined, divided by the sockets; kernel socket buffers are not in it.
`)
	b.WriteString(endMarker + "\n")
	return b.String()
}
