// Package report renders the gateway benchmark as Markdown and keeps it in
// BENCHMARKS.md, between the section's markers, leaving the rest of the
// file alone. Other benchmarks keep their own sections the same way
// (ReplaceBetween, WriteBetween) and share its machine description.
package report

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/svc-code/svc-code/bench/internal/stats"
)

// Markers delimit the gateway section in BENCHMARKS.md.
const (
	StartMarker = "<!-- bench:gateway:start -->"
	EndMarker   = "<!-- bench:gateway:end -->"
)

// Comparison is one benchmark's figures, direct and through the gateway.
type Comparison struct {
	Name    string // "HTTP GET /api/sessions"
	Unit    string // of throughput: "req/s"
	Direct  stats.Summary
	Gateway stats.Summary
	// Rounds holds every run, for the per-round table: Rounds[i] is
	// {direct, gateway} of round i.
	Rounds [][2]Run
}

// Run is one measured run.
type Run struct {
	stats.Summary
	// CPU used during the run (warm-up included), in CPUs (1 is one CPU
	// busy throughout): by the benchmark program (load generator and
	// stand-in backend), by the gateway, and by every other process.
	// CPUKnown is false where /proc could not be read.
	CPUKnown             bool
	BenchCPU, GatewayCPU float64
	OthersCPU            float64
	// Repeats is how many earlier attempts at this run were discarded
	// because other processes were busy.
	Repeats int
}

// Ratio is the gateway's throughput as a fraction of direct.
func (c Comparison) Ratio() float64 {
	if c.Direct.Throughput == 0 {
		return 0
	}
	return c.Gateway.Throughput / c.Direct.Throughput
}

// P50Added is the median latency the gateway adds.
func (c Comparison) P50Added() time.Duration { return c.Gateway.P50 - c.Direct.P50 }

// P99Added is the tail latency the gateway adds.
func (c Comparison) P99Added() time.Duration { return c.Gateway.P99 - c.Direct.P99 }

// Goals are the targets the gateway is held to.
type Goals struct {
	MaxP99Added time.Duration
	MinRatio    float64
}

// Met says "met" or "not met".
func Met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

// Machine describes where the figures were measured.
type Machine struct {
	CPUs       int
	CPUModel   string
	GoVersion  string
	OSArch     string
	GOMAXPROCS int
}

// ThisMachine describes the running machine (the CPU model from
// /proc/cpuinfo, "unknown" elsewhere).
func ThisMachine() Machine {
	return Machine{
		CPUs:       runtime.NumCPU(),
		CPUModel:   cpuModel("/proc/cpuinfo"),
		GoVersion:  runtime.Version(),
		OSArch:     runtime.GOOS + "/" + runtime.GOARCH,
		GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
}

func cpuModel(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func (m Machine) String() string {
	return fmt.Sprintf("%s, nproc %d (GOMAXPROCS %d), %s, %s", m.CPUModel, m.CPUs, m.GOMAXPROCS, m.OSArch, m.GoVersion)
}

// Section is everything the BENCHMARKS.md section reports.
type Section struct {
	Date     time.Time
	Machine  Machine
	Revision string // what the gateway was built from
	Command  string // how to reproduce
	Workers  int
	Warmup   time.Duration
	Duration time.Duration
	Goals    Goals
	Results  []Comparison
	Notes    []string
}

// Figures is the table of medians.
func (s Section) Figures() string {
	var b strings.Builder
	b.WriteString("| Benchmark | Path | Throughput | p50 | p99 |\n")
	b.WriteString("|---|---|--:|--:|--:|\n")
	for _, c := range s.Results {
		fmt.Fprintf(&b, "| %s | direct | %s | %s | %s |\n", c.Name, rate(c.Direct.Throughput, c.Unit), millis(c.Direct.P50), millis(c.Direct.P99))
		fmt.Fprintf(&b, "| | gateway | %s | %s | %s |\n", rate(c.Gateway.Throughput, c.Unit), millis(c.Gateway.P50), millis(c.Gateway.P99))
	}
	return b.String()
}

// Ratios is the table of what the gateway costs, against the goals.
func (s Section) Ratios() string {
	g := s.Goals
	var b strings.Builder
	fmt.Fprintf(&b, "| Benchmark | Throughput gateway/direct | p50 added | p99 added | Goal: p99 added ≤ %s | Goal: throughput ≥ %.1f× direct |\n",
		trimMillis(g.MaxP99Added), g.MinRatio)
	b.WriteString("|---|--:|--:|--:|:-:|:-:|\n")
	for _, c := range s.Results {
		p99 := Met(c.P99Added() <= g.MaxP99Added)
		if c.P99Added() < 0 {
			p99 += " (direct p99 is the higher: see the notes)"
		}
		fmt.Fprintf(&b, "| %s | %.3f× | %s | %s | %s | %s |\n", c.Name, c.Ratio(),
			addedMillis(c.P50Added()), addedMillis(c.P99Added()), p99, Met(c.Ratio() >= g.MinRatio))
	}
	return b.String()
}

// PerRound is the table of every run, to show the spread behind the
// medians and how the CPUs were shared.
func (s Section) PerRound() string {
	var b strings.Builder
	b.WriteString("| Benchmark | Round | Path | Throughput | p50 | p99 | CPU: bench | CPU: gateway | CPU: other processes |\n")
	b.WriteString("|---|--:|---|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range s.Results {
		for i, r := range c.Rounds {
			for p, run := range r {
				fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", c.Name, i+1, Paths[p],
					rate(run.Throughput, c.Unit), millis(run.P50), millis(run.P99),
					cpus(run.CPUKnown, run.BenchCPU), cpus(run.CPUKnown, run.GatewayCPU), cpus(run.CPUKnown, run.OthersCPU))
			}
		}
	}
	return b.String()
}

// Paths names the two sides of a Comparison, in the order of Rounds.
var Paths = [2]string{"direct", "gateway"}

// Repeated is how many runs were repeated because other processes were
// busy, and how many of the runs kept were still disturbed (other
// processes above limit CPUs).
func (s Section) Repeated(limit float64) (repeated, disturbed int) {
	for _, c := range s.Results {
		for _, r := range c.Rounds {
			for _, run := range r {
				if run.Repeats > 0 {
					repeated++
				}
				if run.CPUKnown && run.OthersCPU > limit {
					disturbed++
				}
			}
		}
	}
	return repeated, disturbed
}

// OthersCPU is the median and the maximum CPU that other processes used
// during the runs; ok is false when it is not known.
func (s Section) OthersCPU() (median, maximum float64, ok bool) {
	var all []float64
	for _, c := range s.Results {
		for _, r := range c.Rounds {
			for _, run := range r {
				if run.CPUKnown {
					all = append(all, run.OthersCPU)
					maximum = max(maximum, run.OthersCPU)
				}
			}
		}
	}
	return stats.Median(all), maximum, len(all) > 0
}

func cpus(known bool, v float64) string {
	if !known {
		return "?"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// Markdown is the whole section, markers included.
func (s Section) Markdown() string {
	var b strings.Builder
	b.WriteString(StartMarker + "\n")
	b.WriteString("## Gateway overhead\n\n")
	fmt.Fprintf(&b, "- Date: %s\n", s.Date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Machine: %s\n", s.Machine)
	if s.Revision != "" {
		fmt.Fprintf(&b, "- Gateway built from: %s\n", s.Revision)
	}
	fmt.Fprintf(&b, "- Command: %s\n", s.Command)
	rounds := 0
	if len(s.Results) > 0 {
		rounds = len(s.Results[0].Rounds)
	}
	fmt.Fprintf(&b, "- Load: %d concurrent workers per path, each doing one round trip after another; "+
		"%s warm-up, then %s measured; %d rounds, alternating which path goes first. "+
		"Every figure below is the median over the rounds, taken figure by figure.\n\n",
		s.Workers, s.Warmup, s.Duration, rounds)
	b.WriteString(s.Figures())
	b.WriteString("\n")
	b.WriteString(s.Ratios())
	b.WriteString("\n<details><summary>Every round</summary>\n\n")
	b.WriteString(s.PerRound())
	b.WriteString("\n</details>\n")
	if len(s.Notes) > 0 {
		b.WriteString("\nNotes:\n\n")
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	b.WriteString(EndMarker + "\n")
	return b.String()
}

// Replace puts section in doc: in place of the text between the gateway
// section's markers (markers included), or appended when doc has no
// markers. A doc with only one marker, or with them out of order, is
// refused rather than guessed at.
func Replace(doc, section string) (string, error) {
	return ReplaceBetween(doc, StartMarker, EndMarker, section)
}

// ReplaceBetween is Replace for the section delimited by start and end.
func ReplaceBetween(doc, startMarker, endMarker, section string) (string, error) {
	start := strings.Index(doc, startMarker)
	end := strings.Index(doc, endMarker)
	switch {
	case start < 0 && end < 0:
		if doc != "" && !strings.HasSuffix(doc, "\n\n") {
			doc = strings.TrimRight(doc, "\n") + "\n\n"
		}
		return doc + section, nil
	case start < 0 || end < 0 || end < start:
		return "", fmt.Errorf("the markers %s and %s are incomplete or out of order", startMarker, endMarker)
	}
	rest := doc[end+len(endMarker):]
	rest = strings.TrimPrefix(rest, "\n")
	return doc[:start] + section + rest, nil
}

// Write replaces the gateway section in the file at path, creating the
// file with intro first when it does not exist.
func Write(path, intro, section string) error {
	return WriteBetween(path, intro, StartMarker, EndMarker, section)
}

// WriteBetween is Write for the section delimited by start and end.
func WriteBetween(path, intro, startMarker, endMarker, section string) error {
	doc, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		doc, err = []byte(intro), nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	out, err := ReplaceBetween(string(doc), startMarker, endMarker, section)
	if err != nil {
		return fmt.Errorf("update %s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil { //nolint:gosec // G306: a document of the repository, readable by all
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// RunLine is one run's figures on a line, for progress output.
func RunLine(name, path, unit string, r Run) string {
	line := fmt.Sprintf("%-24s %-8s %16s   p50 %10s   p99 %10s   (%d round trips)",
		name, path, rate(r.Throughput, unit), millis(r.P50), millis(r.P99), r.Count)
	if r.CPUKnown {
		line += fmt.Sprintf("   CPUs: bench %.2f, gateway %.2f, others %.2f", r.BenchCPU, r.GatewayCPU, r.OthersCPU)
	}
	return line
}

func millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64) + " ms"
}

func addedMillis(d time.Duration) string {
	s := millis(d)
	if d >= 0 {
		s = "+" + s
	}
	return s
}

// trimMillis is a goal's duration without trailing zeros ("1 ms").
func trimMillis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + " ms"
}

// rate formats a throughput with thousands separators: "12,345 req/s".
func rate(v float64, unit string) string {
	digits := strconv.FormatInt(int64(v+0.5), 10)
	var b strings.Builder
	for i, r := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String() + " " + unit
}
