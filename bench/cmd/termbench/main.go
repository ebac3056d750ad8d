// Command termbench measures the terminal: how fast output of a large
// `cat` arrives, how long a keystroke takes to echo, and how soon Ctrl-C
// stops a flood of output, read straight from a PTY (the machine's
// limit), from the terminal service's WebSocket, through the gateway, and
// from WeTTY on the same machine in the same run. It builds the real
// terminal service and gateway and runs them as child processes, installs
// WeTTY with npm into a cache directory when missing, prints the figures
// against the goals and records them in BENCHMARKS.md. Run it
// from the workspace: `make bench-terminal`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/svc-code/svc-code/bench/internal/gatewayproc"
	"github.com/svc-code/svc-code/bench/internal/proc"
	"github.com/svc-code/svc-code/bench/internal/report"
	"github.com/svc-code/svc-code/bench/internal/termclient"
	"github.com/svc-code/svc-code/bench/internal/termproc"
	"github.com/svc-code/svc-code/bench/internal/wetty"
	"github.com/svc-code/svc-code/libs/cpustat"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "termbench:", err)
		stop()
		os.Exit(1)
	}
}

// Flag defaults, also what `make bench-terminal` runs.
const (
	defaultSizeMiB    = 256
	defaultRounds     = 3
	defaultEchoes     = 2000
	defaultInterrupts = 5
	defaultFlood      = 500 * time.Millisecond
	defaultTimeout    = 3 * time.Minute
	defaultMaxOthers  = 0.25
	defaultQuietWait  = 30 * time.Second
	defaultSlowMBps   = 20
)

type options struct {
	sizeMiB    int64
	rounds     int
	echoes     int
	interrupts int
	flood      time.Duration
	timeout    time.Duration
	maxOthers  float64
	quietWait  time.Duration
	wetty      bool
	wettyDir   string
	write      bool
	out        string
	redisURL   string
	slowMBps   float64
	flowOnly   bool
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("termbench", flag.ContinueOnError)
	fs.Int64Var(&o.sizeMiB, "size", defaultSizeMiB, "size of the file `cat` prints, in MiB")
	fs.IntVar(&o.rounds, "r", defaultRounds, "rounds over every path, rotating the order")
	fs.IntVar(&o.echoes, "echoes", defaultEchoes, "keystrokes timed per path and round")
	fs.IntVar(&o.interrupts, "interrupts", defaultInterrupts, "Ctrl-C trials per path and round")
	fs.DurationVar(&o.flood, "flood", defaultFlood, "how long `yes` runs before each Ctrl-C")
	fs.DurationVar(&o.timeout, "timeout", defaultTimeout, "limit on each operation")
	fs.Float64Var(&o.maxOthers, "max-others", defaultMaxOthers, "wait before a run, and repeat it (twice at most), while other processes use more CPUs than this")
	fs.DurationVar(&o.quietWait, "quiet-wait", defaultQuietWait, "how long to wait before a run for other processes to quiet down")
	fs.BoolVar(&o.wetty, "wetty", true, "also measure WeTTY (installed with npm when missing)")
	fs.StringVar(&o.wettyDir, "wetty-dir", "", "where WeTTY is installed (default svc-code-bench/wetty-"+wetty.Version+" in the user cache directory)")
	fs.BoolVar(&o.write, "write", true, "write the results into BENCHMARKS.md")
	fs.StringVar(&o.out, "o", "", "file to write (default BENCHMARKS.md at the workspace root)")
	fs.StringVar(&o.redisURL, "redis", proc.RedisURL(), "Redis for the services (default $REDIS_URL)")
	fs.Float64Var(&o.slowMBps, "slow-mbps", defaultSlowMBps, "rate of the slow reader of the flow-control scenarios, MB/s (0: no flow-control scenarios)")
	fs.BoolVar(&o.flowOnly, "flow-only", false, "run the flow-control scenarios only (and write their section only)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var errs []error
	if o.sizeMiB < 1 || o.sizeMiB > 16<<10 {
		errs = append(errs, errors.New("-size must be from 1 to 16384 MiB"))
	}
	if o.rounds < 1 || o.echoes < 1 || o.interrupts < 1 {
		errs = append(errs, errors.New("-r, -echoes and -interrupts must be at least 1"))
	}
	if o.flood <= 0 || o.timeout <= 0 {
		errs = append(errs, errors.New("-flood and -timeout must be positive"))
	}
	if o.slowMBps < 0 || (o.flowOnly && o.slowMBps == 0) {
		errs = append(errs, errors.New("-slow-mbps must be positive (0 turns the flow-control scenarios off, so not with -flow-only)"))
	}
	if o.maxOthers < 0 || o.quietWait < 0 {
		errs = append(errs, errors.New("-max-others and -quiet-wait must not be negative"))
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
	shellPath, err := exec.LookPath("bash")
	if err != nil {
		return fmt.Errorf("the benchmark runs bash on every path: %w", err)
	}
	root, dir, remove, err := proc.Scratch(ctx, "svc-termbench-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, remove()) }()
	if o.out == "" {
		o.out = filepath.Join(root, "BENCHMARKS.md")
	}
	sh := shellSetup{shell: shellPath, workdir: filepath.Join(dir, "work")}
	home := filepath.Join(dir, "home")
	for _, d := range []string{sh.workdir, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	// Every shell gets the same small environment and an empty home, so
	// that no rc file of the caller's changes what is measured.
	sh.env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "SHELL=" + shellPath, "LANG=C.UTF-8", "USER=" + userName()}

	file := filepath.Join(dir, "corpus.txt")
	fmt.Fprintf(stdout, "writing %d MiB of text to %s\n", o.sizeMiB, file)
	lines, err := writeCorpus(file, o.sizeMiB<<20, 1)
	if err != nil {
		return err
	}

	fmt.Fprintln(stdout, "building the terminal service and the gateway")
	termBin, gwBin := filepath.Join(dir, "terminal"), filepath.Join(dir, "gateway")
	if err := termproc.Build(ctx, root, termBin); err != nil {
		return err
	}
	if err := gatewayproc.Build(ctx, root, gwBin); err != nil {
		return err
	}
	secret, err := proc.RandomHex(16)
	if err != nil {
		return err
	}
	prefix := "bench:term:" + secret[:12] + ":"
	svc, err := termproc.Start(ctx, termproc.Options{
		Binary: termBin, Home: filepath.Join(dir, "data"), Secret: secret, RedisURL: o.redisURL, Prefix: prefix,
		Env: append([]string{"TERMINAL_SHELL=" + shellPath}, sh.env...),
	})
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, svc.Stop())
		if p := svc.Problems(); p != "" {
			fmt.Fprintf(stdout, "\nterminal log (warnings and errors):\n%s\n", p)
		}
	}()
	gwDir := filepath.Join(dir, "gateway.d")
	if err := os.Mkdir(gwDir, 0o700); err != nil {
		return err
	}
	gw, err := gatewayproc.Start(ctx, gatewayproc.Options{
		Binary: gwBin, Dir: gwDir, Backend: svc.Addr, Secret: secret, RedisURL: o.redisURL, RedisPrefix: prefix,
	})
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, gw.Stop())
		if logs := gw.Logs(); logs != "" {
			fmt.Fprintf(stdout, "\ngateway log (warnings and errors):\n%s\n", logs)
		}
	}()
	fmt.Fprintf(stdout, "terminal service on %s, gateway on %s, Redis keys under %s\n", svc.Addr, gw.Addr, prefix)
	if err := checkGates(ctx, svc, gw); err != nil {
		return err
	}

	fileLine := fmt.Sprintf("%d MiB of generated text (printable ASCII, %d lines of 0 to 160 characters), in the page cache", o.sizeMiB, lines)
	revision := proc.Revision(ctx, root, "services/terminal", "services/gateway", "libs")
	var flowRuns []flowRun
	if o.slowMBps > 0 {
		fmt.Fprintf(stdout, "\nflow control: a reader at %.0f MB/s\n", o.slowMBps)
		eps := []endpoint{
			{name: pathDirect, base: "ws://" + svc.Addr, header: svc.Header()},
			{name: pathGateway, base: gw.URL("ws"), header: http.Header{"Authorization": []string{"Bearer " + gw.Token}}},
		}
		if flowRuns, err = measureFlow(ctx, o, eps, svc, sh, file); err != nil {
			return err
		}
	}
	// The flow-control section goes after the main one (written last).
	writeFlow := func() error {
		if !o.write || len(flowRuns) == 0 {
			return nil
		}
		md := flowMarkdown(o, time.Now(), report.ThisMachine().String(), revision, fileLine, flowRuns)
		if err := report.WriteBetween(o.out, intro, flowStartMarker, flowEndMarker, md); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nwrote the flow-control section of %s\n", o.out)
		return nil
	}
	if o.flowOnly {
		return writeFlow()
	}

	ps := procs{terminal: svc.Pid(), gateway: gw.Pid()}
	if pid, ok := cpustat.KernelThreads(); ok {
		ps.kernel = pid
	}
	paths := []path{
		rawPath(sh),
		wsPath(pathDirect, "ws://"+svc.Addr, svc.Header(), svc, sh),
		wsPath(pathGateway, gw.URL("ws"), http.Header{"Authorization": []string{"Bearer " + gw.Token}}, svc, sh),
	}
	wettyLine := "not run (-wetty=false)"
	if o.wetty {
		srv, wdir, line, err := startWetty(ctx, o, sh, stdout)
		if err != nil {
			return err
		}
		wettyLine = line
		if srv != nil {
			defer func() {
				err = errors.Join(err, srv.Stop())
				if p := srv.Problems(); p != "" {
					fmt.Fprintf(stdout, "\nwetty log (warnings and errors):\n%s\n", p)
				}
			}()
			ps.wetty = srv.Pid()
			paths = append(paths, wettyPath(srv, wdir))
			fmt.Fprintf(stdout, "wetty on %s\n", srv.URL)
		}
	}

	res, err := measure(ctx, o, paths, ps, file, stdout)
	if err != nil {
		return err
	}
	var names []string
	for _, p := range paths {
		names = append(names, p.name)
	}
	s := section{
		Date:       time.Now(),
		Machine:    report.ThisMachine(),
		Revision:   revision,
		Command:    command(o),
		File:       fileLine,
		Shell:      shellVersion(ctx, shellPath) + ", interactive, with an empty home (no rc file but the system's)",
		Wetty:      wettyLine,
		Rounds:     o.rounds,
		Echoes:     o.echoes,
		Interrupts: o.interrupts,
		Flood:      o.flood,
		Summary:    summarize(res, names),
		Results:    res,
	}
	s.Notes = notes(o, s)
	fmt.Fprintf(stdout, "\n%s\n%s\n%s\n", s.Figures(), s.Ratios(), s.Goals())
	for _, n := range s.Notes {
		fmt.Fprintf(stdout, "- %s\n", n)
	}
	if !o.write {
		return nil
	}
	if err := report.WriteBetween(o.out, intro, startMarker, endMarker, s.Markdown()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s\n", o.out)
	return writeFlow()
}

// intro opens BENCHMARKS.md when this program creates it.
const intro = "# Benchmarks\n\nEach section below is rewritten by the program that measures it, between its markers; " +
	"text outside the markers is kept.\n"

// startWetty installs WeTTY when missing and starts it running the same
// shell as the other paths. Without root, WeTTY would log in over ssh
// instead of running a shell, so it is left out, and line says why.
func startWetty(ctx context.Context, o options, sh shellSetup, stdout io.Writer) (srv *wetty.Server, dir, line string, err error) {
	if os.Geteuid() != 0 {
		return nil, "", "not run: " + wetty.ErrNotRoot.Error(), nil
	}
	dir = o.wettyDir
	if dir == "" {
		if dir, err = wetty.DefaultDir(); err != nil {
			return nil, "", "", err
		}
	}
	if err := wetty.Install(ctx, dir, stdout); err != nil {
		return nil, "", "", err
	}
	srv, err = wetty.Start(ctx, dir, wetty.Options{
		Command: sh.shell, Env: append(sh.env, "NODE_ENV=production"), Workdir: sh.workdir,
	})
	if err != nil {
		return nil, "", "", err
	}
	node, _ := exec.CommandContext(ctx, "node", "--version").Output()
	line = fmt.Sprintf("wetty %s from npm, socket.io-client %s, Node.js %s, installed in %s",
		wetty.Version, wetty.ClientVersion, strings.TrimSpace(string(node)), dir)
	return srv, dir, line, nil
}

// checkGates makes sure both paths are guarded as in production before
// anything is measured: the terminal service refuses a socket without
// the internal credential, and the gateway one without a client
// credential.
func checkGates(ctx context.Context, svc *termproc.Service, gw *gatewayproc.Gateway) error {
	for _, base := range []string{"ws://" + svc.Addr, gw.URL("ws")} {
		c, err := termclient.Dial(ctx, base+"/ws/terminal?session=termbench-gate", nil, 5*time.Second)
		if err == nil {
			_ = c.Close()
			return fmt.Errorf("%s/ws/terminal accepted a socket without a credential", base)
		}
		if !strings.Contains(err.Error(), "status 401") {
			return fmt.Errorf("%s/ws/terminal without a credential: %w, want status 401", base, err)
		}
	}
	return nil
}

// shellVersion is the first line of `bash --version`.
func shellVersion(ctx context.Context, shell string) string {
	out, err := exec.CommandContext(ctx, shell, "--version").Output()
	if err != nil {
		return shell
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return shell + " (" + strings.TrimSpace(first) + ")"
}

func userName() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "bench"
}
