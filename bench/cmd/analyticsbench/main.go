// Command analyticsbench measures the analytics service built from the
// workspace and writes its section of BENCHMARKS.md: small-query
// throughput on POST /api/shadow-db/sql, aggregates over a million turns
// (generated with generate_series), and the turn-ingest latency (XADD of a
// turn event to its row committed) alone and with 10 hostile queries
// running on /sql at the same time. It needs PostgreSQL (TEST_DATABASE_URL,
// as a superuser: it creates a throwaway schema and read-only role) and
// Redis (REDIS_URL).
//
//	go run ./bench/cmd/analyticsbench   (make bench-analytics)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/svc-code/svc-code/bench/internal/proc"
	"github.com/svc-code/svc-code/bench/internal/report"
)

// Markers delimit the analytics section in BENCHMARKS.md.
const (
	startMarker = "<!-- bench:analytics:start -->"
	endMarker   = "<!-- bench:analytics:end -->"
)

// AnalyticsPackage is the service, relative to the workspace root.
const AnalyticsPackage = "./services/analytics/cmd/analytics"

// goalIngestRatio: ingest p99 under hostile queries at most this times the
// baseline.
const goalIngestRatio = 2.0

type options struct {
	turns    int
	conns    int
	duration time.Duration
	aggRuns  int
	ingest   int
	rounds   int
	hostile  int
	out      string
	write    bool
	command  string
}

func main() {
	var o options
	flag.IntVar(&o.turns, "turns", 1000000, "turns to generate for the aggregates")
	flag.IntVar(&o.conns, "c", 8, "concurrent clients of the small-query load")
	flag.DurationVar(&o.duration, "d", 5*time.Second, "length of the small-query load")
	flag.IntVar(&o.aggRuns, "runs", 5, "timed runs of each aggregate")
	flag.IntVar(&o.ingest, "ingest", 300, "turn events timed in each ingest run")
	flag.IntVar(&o.rounds, "rounds", 3, "ingest rounds, each a baseline run then a run under hostile queries")
	flag.IntVar(&o.hostile, "hostile", 10, "hostile /sql clients during the second ingest run")
	flag.StringVar(&o.out, "o", "", "file to write (default BENCHMARKS.md at the workspace root)")
	flag.BoolVar(&o.write, "write", true, "write the section to the file")
	flag.Parse()
	o.command = strings.Join(append([]string{"go run ./bench/cmd/analyticsbench"}, os.Args[1:]...), " ")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "analyticsbench:", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) (err error) {
	if o.turns < 1000 || o.conns < 1 || o.duration <= 0 || o.aggRuns < 1 || o.ingest < 10 || o.rounds < 1 || o.hostile < 0 {
		return errors.New("want -turns ≥ 1000, -c ≥ 1, -d > 0, -runs ≥ 1, -ingest ≥ 10, -rounds ≥ 1, -hostile ≥ 0")
	}
	root, scratch, remove, err := proc.Scratch(ctx, "analyticsbench-*")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, remove()) }()
	out := o.out
	if out == "" {
		out = filepath.Join(root, "BENCHMARKS.md")
	}
	s := section{
		Date: time.Now(), Machine: report.ThisMachine(), Command: o.command, Turns: o.turns,
		Conns: o.conns, Hostile: o.hostile, HostileCodes: map[string]int{},
	}
	s.Revision = proc.Revision(ctx, root, "services/analytics")

	binary := filepath.Join(scratch, "analytics")
	fmt.Fprintln(os.Stderr, "building analytics")
	if err := proc.Build(ctx, root, AnalyticsPackage, binary); err != nil {
		return err
	}
	e, err := newEnv(ctx, binary, filepath.Join(scratch, "home"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.close()) }()

	if err := measure(ctx, e, o, &s); err != nil {
		return err
	}
	md := s.Markdown()
	fmt.Println(md)
	if o.write {
		if err := report.WriteBetween(out, "# Benchmarks\n\n", startMarker, endMarker, md); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote", out)
	}
	return nil
}

// measure runs every part in order.
func measure(ctx context.Context, e *env, o options, s *section) error {
	fmt.Fprintf(os.Stderr, "generating %d turns\n", o.turns)
	start := time.Now()
	if err := e.generate(ctx, o.turns); err != nil {
		return err
	}
	s.Generate = time.Since(start)

	fmt.Fprintln(os.Stderr, "small queries")
	var err error
	if s.Small, err = e.smallQueries(ctx, o.conns, o.duration, e.postSQL); err != nil {
		return err
	}
	if s.SmallDirect, err = e.smallQueries(ctx, o.conns, o.duration, e.directSQL); err != nil {
		return err
	}

	fmt.Fprintln(os.Stderr, "aggregates")
	for _, a := range aggregates {
		row, err := e.aggregate(ctx, a, o.aggRuns)
		if err != nil {
			return err
		}
		s.Aggregates = append(s.Aggregates, row)
	}

	for i := range o.rounds {
		fmt.Fprintf(os.Stderr, "ingest round %d: baseline\n", i+1)
		base, err := e.ingest(ctx, fmt.Sprintf("base%d", i), o.ingest)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "ingest round %d: with %d hostile queries\n", i+1, o.hostile)
		under, done, codes, active, err := e.ingestUnderLoad(ctx, fmt.Sprintf("hostile%d", i), o.ingest, o.hostile)
		if err != nil {
			return err
		}
		drained, err := e.drain(ctx)
		if err != nil {
			return err
		}
		s.Rounds = append(s.Rounds, round{Baseline: base, UnderLoad: under, Active: active, Drained: drained})
		s.HostileDone += done
		for c, n := range codes {
			s.HostileCodes[c] += n
		}
	}
	if s.Dead, err = e.deadLetters(ctx); err != nil {
		return err
	}
	return nil
}
