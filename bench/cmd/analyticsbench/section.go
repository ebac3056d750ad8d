package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/svc-code/svc-code/bench/internal/report"
	"github.com/svc-code/svc-code/bench/internal/stats"
)

// section is one run's figures.
type section struct {
	Date     time.Time
	Machine  report.Machine
	Revision string
	Command  string
	Turns    int
	Conns    int
	Hostile  int

	Generate           time.Duration
	Small, SmallDirect stats.Summary
	Aggregates         []aggregateRow
	Rounds             []round
	HostileDone        int
	HostileCodes       map[string]int
	Dead               int64
}

// round is one baseline ingest run and the run under hostile queries
// after it.
type round struct {
	Baseline, UnderLoad stats.Summary
	// Active: the hostile statements running in PostgreSQL when the
	// hostile run started and when it ended.
	Active [2]int
	// Drained: how long after the hostile clients left their statements
	// still ran in PostgreSQL.
	Drained time.Duration
}

// medianP99 is the median over the rounds of the p99 of one kind of run.
func medianP99(rounds []round, under bool) time.Duration {
	var xs []time.Duration
	for _, r := range rounds {
		if under {
			xs = append(xs, r.UnderLoad.P99)
		} else {
			xs = append(xs, r.Baseline.P99)
		}
	}
	return stats.Median(xs)
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Markdown is the section between the markers.
func (s section) Markdown() string {
	var b strings.Builder
	b.WriteString(startMarker + "\n## Analytics\n\n")
	fmt.Fprintf(&b, "Run %s on %s, nproc %d (GOMAXPROCS %d), %s, %s, analytics built from %s. Reproduce with `make bench-analytics` (flags via `BENCH_ARGS`); this run: `%s`.\n\n",
		s.Date.UTC().Format("2006-01-02 15:04 UTC"), s.Machine.CPUModel, s.Machine.CPUs, s.Machine.GOMAXPROCS,
		s.Machine.OSArch, s.Machine.GoVersion, s.Revision, s.Command)

	baseP99, underP99 := medianP99(s.Rounds, false), medianP99(s.Rounds, true)
	r := ratio(underP99, baseP99)
	b.WriteString("| Measure | Goal | Measured | Verdict |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| Turn-ingest p99 with %d hostile `/sql` clients, against the baseline of this run (median of %d rounds) | ≤ %.0f× | %.2f× (%s vs %s) | %s |\n\n",
		s.Hostile, len(s.Rounds), goalIngestRatio, r, ms(underP99), ms(baseP99), report.Met(r > 0 && r <= goalIngestRatio))

	b.WriteString("### Small queries on `POST /api/shadow-db/sql`\n\n")
	fmt.Fprintf(&b, "One session's last ten turns (`SELECT id, model, cost, started_at FROM turns WHERE session_id = 'gen<random>' ORDER BY started_at DESC LIMIT 10`) on the %d-turn table, %d clients in a closed loop. The direct row runs the same query on PostgreSQL as the read-only role in a READ ONLY transaction, without the service: the floor.\n\n", s.Turns, s.Conns)
	b.WriteString("| Path | Queries/s | p50 | p99 | Ratio to direct |\n|---|--:|--:|--:|--:|\n")
	fmt.Fprintf(&b, "| `/api/shadow-db/sql` | %.0f | %s | %s | %.2f× throughput |\n", s.Small.Throughput, ms(s.Small.P50), ms(s.Small.P99), s.Small.Throughput/max(s.SmallDirect.Throughput, 1e-9))
	fmt.Fprintf(&b, "| direct (pgx, read-only role) | %.0f | %s | %s | 1 |\n\n", s.SmallDirect.Throughput, ms(s.SmallDirect.P50), ms(s.SmallDirect.P99))

	fmt.Fprintf(&b, "### Aggregates over %d turns\n\n", s.Turns)
	fmt.Fprintf(&b, "The turns were generated in PostgreSQL with `generate_series` (10000 sessions, 100 projects, four models, a year; %s including the indexes and the generated `tsvector`), then analysed. Each row is timed end to end over HTTP, answer read whole.\n\n", ms(s.Generate))
	b.WriteString("| Query | p50 | min | max |\n|---|--:|--:|--:|\n")
	for _, a := range s.Aggregates {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", a.Name, ms(a.P50), ms(a.Min), ms(a.Max))
	}

	b.WriteString("\n### Turn ingest\n\n")
	n := 0
	if len(s.Rounds) > 0 {
		n = s.Rounds[0].Baseline.Count
	}
	fmt.Fprintf(&b, "Each event is a `turn_ended` as chat writes it (with one tool call), added with `XADD` to the turns stream; the time runs until its row is visible in `turns` (polled every 0.2 ms as the owner role), so it holds the consumer group delivery, the parse, the transaction (upsert, tool rows) and its commit. Each run times %d events one after the other, into the %d-turn table. Each round is a baseline run, then a run that starts 2 s after %d clients began sending hostile queries to `/sql` in a loop (a cross join until the deadline, a sorted dump of every turn, a string aggregate of every prompt, a join of each project's turns with each other). The goal compares the medians over the rounds.\n\n",
		n, s.Turns, s.Hostile)
	b.WriteString("| Round | baseline p50 | baseline p99 | hostile p50 | hostile p99 | p99 ratio | hostile statements running (start, end) | still running after the clients left |\n|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for i, rd := range s.Rounds {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %.2f× | %d, %d | %.1f s |\n", i+1, ms(rd.Baseline.P50), ms(rd.Baseline.P99),
			ms(rd.UnderLoad.P50), ms(rd.UnderLoad.P99), ratio(rd.UnderLoad.P99, rd.Baseline.P99), rd.Active[0], rd.Active[1], rd.Drained.Seconds())
	}
	fmt.Fprintf(&b, "| median | | %s | | %s | %.2f× | | |\n\n", ms(baseP99), ms(underP99), r)
	var codes []string
	for c, n := range s.HostileCodes {
		codes = append(codes, fmt.Sprintf("%s × %d", c, n))
	}
	sort.Strings(codes)
	fmt.Fprintf(&b, "- Hostile queries answered during the runs: %d (status: %s); the others were still running (each until it ends or the 30 s deadline). The SQL endpoint admits at most 4 at once, on the read-only role's own pool, while ingest writes through the owner's pool; the running column counts the read-only role's active statements in `pg_stat_activity` (client backends; each may have parallel workers besides), and the next baseline waits until none is left.\n", s.HostileDone, orNone(strings.Join(codes, ", ")))
	fmt.Fprintf(&b, "- Dead letters after both runs: %d.\n", s.Dead)
	b.WriteString("- Everything runs on this one machine (PostgreSQL, Redis, analytics and the benchmark client share the CPUs), so the hostile queries compete with ingest for CPU as well as for the database.\n")
	b.WriteString(endMarker + "\n")
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none finished"
	}
	return s
}
