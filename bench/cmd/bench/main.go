// Command bench measures what the gateway costs. It builds the real gateway
// and runs it in front of an in-process stand-in backend, then drives the
// same closed-loop HTTP and WebSocket load at the backend directly and
// through the gateway, several rounds in alternating order, prints the
// median figures against the gateway's goals and records them in
// BENCHMARKS.md. Run it from the workspace: `make bench`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/svc-code/svc-code/bench/internal/backend"
	"github.com/svc-code/svc-code/bench/internal/gatewayproc"
	"github.com/svc-code/svc-code/bench/internal/proc"
	"github.com/svc-code/svc-code/bench/internal/report"
	"github.com/svc-code/svc-code/libs/internalauth"
)

// The gateway's goals.
var goals = report.Goals{MaxP99Added: time.Millisecond, MinRatio: 0.8}

// Flag defaults, also what `make bench` runs.
const (
	defaultWorkers  = 16
	defaultDuration = 5 * time.Second
	defaultRounds   = 3
	defaultWarmup   = time.Second
)

// echoMessage is the WebSocket payload: small, like a chat keystroke event.
var echoMessage = []byte(`{"type":"ping","seq":123456789}`)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	workers   int
	duration  time.Duration
	warmup    time.Duration
	rounds    int
	write     bool
	out       string
	redisURL  string
	maxOthers float64
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&o.workers, "c", defaultWorkers, "concurrent workers (HTTP) and connections (WebSocket) per path")
	fs.DurationVar(&o.duration, "d", defaultDuration, "measured time of each run")
	fs.DurationVar(&o.warmup, "warmup", defaultWarmup, "unmeasured time before each run")
	fs.IntVar(&o.rounds, "r", defaultRounds, "rounds of (direct, gateway), alternating which goes first")
	fs.Float64Var(&o.maxOthers, "max-others", 0.25, "repeat a run (twice at most) while other processes use more CPUs than this")
	fs.BoolVar(&o.write, "write", true, "write the results into BENCHMARKS.md")
	fs.StringVar(&o.out, "o", "", "file to write (default BENCHMARKS.md at the workspace root)")
	fs.StringVar(&o.redisURL, "redis", proc.RedisURL(), "Redis for the gateway (default $REDIS_URL)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var errs []error
	if o.workers < 1 {
		errs = append(errs, errors.New("-c must be at least 1"))
	}
	if o.duration <= 0 || o.warmup < 0 {
		errs = append(errs, errors.New("-d must be positive and -warmup not negative"))
	}
	if o.maxOthers < 0 {
		errs = append(errs, errors.New("-max-others must not be negative"))
	}
	if o.rounds < 1 {
		errs = append(errs, errors.New("-r must be at least 1"))
	}
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	return o, errors.Join(errs...)
}

func run(ctx context.Context, args []string, stdout io.Writer) (err error) {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	root, dir, remove, err := proc.Scratch(ctx, "svc-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = remove() }()
	if o.out == "" {
		o.out = filepath.Join(root, "BENCHMARKS.md")
	}

	secretValue, err := proc.RandomHex(16)
	if err != nil {
		return err
	}
	be, err := backend.Start(ctx, internalauth.FromString(secretValue))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, be.Close()) }()

	fmt.Fprintln(stdout, "building the gateway")
	bin := filepath.Join(dir, "gateway")
	if err := gatewayproc.Build(ctx, root, bin); err != nil {
		return err
	}
	gw, err := gatewayproc.Start(ctx, gatewayproc.Options{
		Binary: bin, Dir: dir, Backend: be.Addr(), Secret: secretValue, RedisURL: o.redisURL,
	})
	if err != nil {
		return err
	}
	defer func() {
		if serr := gw.Stop(); serr != nil {
			err = errors.Join(err, serr)
		}
		if logs := gw.Logs(); logs != "" {
			fmt.Fprintf(stdout, "\ngateway log (warnings and errors):\n%s\n", logs)
		}
	}()
	fmt.Fprintf(stdout, "gateway on %s, backend on %s\n", gw.Addr, be.Addr())

	if err := checkGates(ctx, be, gw); err != nil {
		return err
	}

	results, err := measure(ctx, o, benchmarks(o, be, gw, secretValue), gw.Pid(), stdout)
	if err != nil {
		return err
	}

	machine := report.ThisMachine()
	section := report.Section{
		Date:     time.Now(),
		Machine:  machine,
		Revision: proc.Revision(ctx, root, "services/gateway", "libs", "web"),
		Command:  command(o),
		Workers:  o.workers,
		Warmup:   o.warmup,
		Duration: o.duration,
		Goals:    goals,
		Results:  results,
	}
	section.Notes = notes(o, machine, section)
	fmt.Fprintf(stdout, "\n%s\n%s\n", section.Figures(), section.Ratios())
	for _, n := range section.Notes {
		fmt.Fprintf(stdout, "- %s\n", n)
	}
	if !o.write {
		return nil
	}
	if err := report.Write(o.out, intro, section.Markdown()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s\n", o.out)
	return nil
}
