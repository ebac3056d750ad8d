package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/svc-code/svc-code/bench/internal/report"
	"github.com/svc-code/svc-code/bench/internal/stats"
)

// Markers delimit the terminal section in BENCHMARKS.md.
const (
	startMarker = "<!-- bench:terminal:start -->"
	endMarker   = "<!-- bench:terminal:end -->"
)

// section is everything the BENCHMARKS.md section reports.
type section struct {
	Date       time.Time
	Machine    report.Machine
	Revision   string // what the services were built from
	Command    string // how to reproduce
	File       string // the file `cat` prints
	Shell      string
	Wetty      string // version, or why it was not run
	Rounds     int
	Echoes     int
	Interrupts int
	Flood      time.Duration
	Summary    summary
	Results    results
	Notes      []string
}

// Figures is the table of the figures per path.
func (s section) Figures() string {
	var b strings.Builder
	b.WriteString("| Path | `cat` throughput | × raw PTY | Echo p50 | Echo p99 | Ctrl-C to quiet, median | Ctrl-C to quiet, worst |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|\n")
	raw := s.Summary.Cat[pathRaw].MBps
	for _, p := range s.Summary.Paths {
		c, okC := s.Summary.Cat[p]
		e, okE := s.Summary.Echo[p]
		st, okS := s.Summary.Stop[p]
		tput, frac := "–", "–"
		if okC {
			tput = mbps(c.MBps)
			if c.Dropped > 0 {
				tput += fmt.Sprintf(" (%s dropped)", megabytes(c.Dropped))
			}
			if raw > 0 {
				frac = fmt.Sprintf("%.2f×", c.MBps/raw)
			}
		}
		p50, p99 := "–", "–"
		if okE {
			p50, p99 = ms(e.P50), ms(e.P99)
		}
		med, worst := "–", "–"
		if okS {
			med, worst = ms(st.Median), ms(st.Worst)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", label(p), tput, frac, p50, p99, med, worst)
	}
	return b.String()
}

// Ratios is the table of throughput ratios.
func (s section) Ratios() string {
	var b strings.Builder
	b.WriteString("| Throughput ratio | Value |\n|---|--:|\n")
	for _, r := range s.Summary.ratios() {
		fmt.Fprintf(&b, "| %s / %s | %.2f× |\n", r.Of, r.To, r.Value)
	}
	return b.String()
}

// Goals is the table of verdicts.
func (s section) Goals() string {
	var b strings.Builder
	b.WriteString("| Goal | This run | Verdict |\n|---|---|:-:|\n")
	for _, v := range s.Summary.verdicts() {
		fig := v.Figure
		if fig == "" {
			fig = "–"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", v.Goal, fig, v.Result)
	}
	return b.String()
}

// EveryRun is the table of every run with its CPU split.
func (s section) EveryRun() string {
	var b strings.Builder
	b.WriteString("| Operation | Path | Run | Figure | CPU: client | CPU: terminal | CPU: gateway | CPU: wetty | CPU: kernel threads | CPU: other processes | CPU: stolen |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, kind := range []string{opCat, opEcho, opInterrupt} {
		for _, p := range s.Summary.Paths {
			for i, r := range s.Results[kind][p] {
				c := r.cpu
				fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", kind, p, i+1, runFigure(kind, r),
					cpus(c.known, c.client), cpus(c.known, c.terminal), cpus(c.known, c.gateway),
					cpus(c.known && p == pathWetty, c.wetty), cpus(c.known, c.kernel), cpus(c.known, c.rest), cpus(c.known, c.steal))
			}
		}
	}
	return b.String()
}

// runFigure is one run's result in a few words.
func runFigure(kind string, r measurement) string {
	switch kind {
	case opCat:
		f := fmt.Sprintf("%s (%s in %.2f s)", mbps(r.transfer.MBps()), megabytes(r.transfer.Bytes), r.transfer.Elapsed.Seconds())
		if r.frames > 0 {
			f += fmt.Sprintf(" in %d frames of %.1f KiB on average", r.frames, float64(r.transfer.Bytes)/float64(r.frames)/1024)
		}
		if r.skipped > 0 {
			f += fmt.Sprintf(", %s dropped", megabytes(r.skipped))
		}
		return f
	case opEcho:
		sum := stats.Summarize(r.latencies, 0)
		return fmt.Sprintf("p50 %s, p99 %s of %d", ms(sum.P50), ms(sum.P99), sum.Count)
	case opInterrupt:
		return fmt.Sprintf("%s (after %s of flood)", ms(r.interrupt.Stop), megabytes(r.interrupt.Flood))
	}
	return ""
}

// progressLine is one run, for the output while measuring.
func progressLine(kind, path string, r measurement) string {
	line := fmt.Sprintf("%-10s %-8s %s", kind, path, runFigure(kind, r))
	if r.cpu.known {
		line += fmt.Sprintf("   CPUs: client %.2f, terminal %.2f, gateway %.2f", r.cpu.client, r.cpu.terminal, r.cpu.gateway)
		if path == pathWetty {
			line += fmt.Sprintf(", wetty %.2f", r.cpu.wetty)
		}
		line += fmt.Sprintf(", kernel threads %.2f, others %.2f, stolen %.2f", r.cpu.kernel, r.cpu.rest, r.cpu.steal)
	}
	if r.repeats > 0 {
		line += fmt.Sprintf("   (repeated %d× while other processes were busy)", r.repeats)
	}
	return line
}

// Markdown is the whole section, markers included.
func (s section) Markdown() string {
	var b strings.Builder
	b.WriteString(startMarker + "\n")
	b.WriteString("## Terminal throughput and latency\n\n")
	b.WriteString(about)
	b.WriteString("\n")
	fmt.Fprintf(&b, "- Date: %s\n", s.Date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Machine: %s\n", s.Machine)
	if s.Revision != "" {
		fmt.Fprintf(&b, "- Services built from: %s\n", s.Revision)
	}
	fmt.Fprintf(&b, "- Command: %s\n", s.Command)
	fmt.Fprintf(&b, "- File: %s\n", s.File)
	fmt.Fprintf(&b, "- Shell: %s\n", s.Shell)
	fmt.Fprintf(&b, "- wetty: %s\n", s.Wetty)
	fmt.Fprintf(&b, "- Runs: %d rounds, the order of the paths rotating from round to round; in each round one `cat` and "+
		"%d timed keystrokes per path, and %d Ctrl-C trials per path after %s of `yes`. Throughput and echo figures are "+
		"medians over the rounds; Ctrl-C figures are over every trial. MB is 10^6 bytes.\n\n",
		s.Rounds, s.Echoes, s.Interrupts, s.Flood)
	b.WriteString(s.Figures())
	b.WriteString("\n")
	b.WriteString(s.Ratios())
	b.WriteString("\n")
	b.WriteString(s.Goals())
	b.WriteString("\n<details><summary>Every run, with how the CPUs were shared</summary>\n\n")
	b.WriteString(s.EveryRun())
	b.WriteString("\n</details>\n")
	if len(s.Notes) > 0 {
		b.WriteString("\nNotes:\n\n")
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	b.WriteString(endMarker + "\n")
	return b.String()
}

// about says what is measured; it opens the section.
const about = "Measured by `make bench-terminal` (`go run ./bench/cmd/termbench`), which builds the real terminal service " +
	"and gateway and runs them as child processes with a scratch data home and Redis prefix (REDIS_URL, default " +
	"redis://127.0.0.1:6379/0), and runs WeTTY from npm beside them. Four paths to a shell are compared:\n\n" +
	"- *raw PTY*: the program itself opens a pseudo-terminal (creack/pty) and reads it, with no socket: `cat` of the " +
	"file run straight on the PTY is the most any terminal service on this machine could deliver; echo and Ctrl-C " +
	"use the same shell as the other paths, on a PTY of the program's own.\n" +
	"- *direct*: the terminal service's `/ws/terminal`, with the internal credential.\n" +
	"- *gateway*: the same through the gateway, with `Authorization: Bearer`, as a script or the UI reaches it.\n" +
	"- *wetty*: WeTTY's socket.io endpoint, driven by a Node client that speaks to it as WeTTY's browser client " +
	"does (input, resize, and a flow-control commit every 256 KiB).\n\n" +
	"Every operation types into a fresh interactive shell and waits for a marker that the shell prints " +
	"(`printf '%s-%s\\n' END <random>`, so the echoed command line cannot match it): *`cat`* types " +
	"`cat <file>; <marker command>` and counts every byte of output until the marker (the terminal turns each newline " +
	"into CR LF); *echo* types one key and times until it comes back, then erases it, untimed; *Ctrl-C* runs `yes`, lets " +
	"its output flow, then types Ctrl-C and a marker command and times until the marker arrives, after every `y` " +
	"still buffered anywhere on the way.\n"

// label is a path's name in the tables.
func label(p string) string {
	switch p {
	case pathRaw:
		return "raw PTY (no socket)"
	case pathDirect:
		return "terminal service, direct"
	case pathGateway:
		return "through the gateway"
	case pathWetty:
		return "wetty"
	}
	return p
}

func mbps(v float64) string { return fmt.Sprintf("%.1f MB/s", v) }

// megabytes formats a byte count in MB (10^6 bytes).
func megabytes(n int64) string {
	if n < 1e6 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

func cpus(known bool, v float64) string {
	if !known {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}
