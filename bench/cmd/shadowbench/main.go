// Command shadowbench measures the shadow service and writes its section of
// BENCHMARKS.md: the content search of a 10 000-file project
// (GET /api/search with the ripgrep engine and the Go walk), and the shadow
// journal's commit time in such a project with 10 files changed per turn
// (turn events through the Redis Stream), on the real service built from
// the workspace, with PostgreSQL (TEST_DATABASE_URL) and Redis (REDIS_URL)
// as the tests use them. Each part (-part) writes its own markers.
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

	"github.com/svc-code/svc-code/bench/internal/proc"
	"github.com/svc-code/svc-code/bench/internal/report"
)

type options struct {
	files, runs int
	out         string
	write       bool
	command     string
	part        string // "" for all
}

func main() {
	var o options
	flag.IntVar(&o.files, "files", 10000, "searchable files in the generated project (a multiple of 100)")
	flag.IntVar(&o.runs, "runs", 20, "timed runs of each search")
	flag.StringVar(&o.out, "o", "", "file to write (default BENCHMARKS.md at the workspace root)")
	flag.BoolVar(&o.write, "write", true, "write the section to the file")
	flag.StringVar(&o.part, "part", "", "measure only this part: search or journal (default: all)")
	flag.Parse()
	o.command = strings.Join(append([]string{"go run ./bench/cmd/shadowbench"}, os.Args[1:]...), " ")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "shadowbench:", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) (err error) {
	if o.files < 100 || o.files%100 != 0 || o.runs < 1 {
		return errors.New("want -files a multiple of 100 (at least 100) and -runs ≥ 1")
	}
	root, scratch, remove, err := proc.Scratch(ctx, "shadowbench-*")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, remove()) }()
	out := o.out
	if out == "" {
		out = filepath.Join(root, "BENCHMARKS.md")
	}
	// Each part measures on its own and rewrites its own markers.
	parts := []struct {
		name, start, end string
		measure          func() (string, error)
	}{
		{"search", searchStartMarker, searchEndMarker, func() (string, error) {
			s, err := runSearch(ctx, root, scratch, o)
			return s.Markdown(), err
		}},
		{"journal", journalStartMarker, journalEndMarker, func() (string, error) {
			s, err := runJournal(ctx, root, scratch, o)
			return s.Markdown(), err
		}},
	}
	for _, p := range parts {
		if o.part != "" && o.part != p.name {
			continue
		}
		md, err := p.measure()
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		fmt.Print(md)
		if !o.write {
			continue
		}
		if err := report.WriteBetween(out, intro, p.start, p.end, md); err != nil {
			return err
		}
	}
	return nil
}

// intro opens BENCHMARKS.md when this program creates it.
const intro = "# Benchmarks\n\nEach section below is rewritten by the program that measures it, between its markers.\n\n"
