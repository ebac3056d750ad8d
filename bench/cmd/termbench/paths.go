package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"time"

	"github.com/svc-code/svc-code/bench/internal/rawpty"
	"github.com/svc-code/svc-code/bench/internal/termclient"
	"github.com/svc-code/svc-code/bench/internal/termload"
	"github.com/svc-code/svc-code/bench/internal/termproc"
	"github.com/svc-code/svc-code/bench/internal/wetty"
)

// The operations measured on every path.
const (
	opCat       = "cat"
	opEcho      = "echo"
	opInterrupt = "interrupt"
)

// op is one measured operation.
type op struct {
	kind    string
	file    string        // opCat
	count   int           // opEcho: keys typed
	flood   time.Duration // opInterrupt: how long `yes` runs before Ctrl-C
	timeout time.Duration
}

// outcome is what one operation measured.
type outcome struct {
	transfer  termload.Transfer     // opCat
	latencies []time.Duration       // opEcho
	interrupt termload.Interruption // opInterrupt
	// skipped is output the server dropped because the client fell
	// behind (resync frames); only the terminal service does that.
	skipped int64
	// frames is how many WebSocket frames of output arrived, on the paths
	// that count them (direct, gateway).
	frames int64
}

// path is one way of reaching a shell.
type path struct {
	name string // key and column label: raw PTY, direct, gateway, wetty
	// prepare readies a fresh terminal for o, its shell at the prompt with
	// the output settled (or, for the raw cat, nothing), and returns the
	// measured part and what frees everything after it.
	prepare func(ctx context.Context, o op) (run func() (outcome, error), release func(), err error)
}

// Path names, in the order of the tables.
const (
	pathRaw     = "raw PTY"
	pathDirect  = "direct"
	pathGateway = "gateway"
	pathWetty   = "wetty"
)

// shellSetup is the shell every path runs, and its environment.
type shellSetup struct {
	shell   string   // absolute path
	env     []string // HOME, PATH, LANG, SHELL
	workdir string
}

// readBuffer is the client's read size on the Go paths.
const readBuffer = 64 << 10

// settle bounds: the output is settled after settleQuiet of silence.
const (
	settleQuiet   = 50 * time.Millisecond
	settleTimeout = 5 * time.Second
)

// rawPath reads a PTY straight: `cat` of the file with nothing between
// it and the reader, and for echo and Ctrl-C the shell on a PTY of this
// program's own.
func rawPath(sh shellSetup) path {
	return path{name: pathRaw, prepare: func(ctx context.Context, o op) (func() (outcome, error), func(), error) {
		buf := make([]byte, readBuffer)
		if o.kind == opCat {
			run := func() (outcome, error) {
				cmd := exec.CommandContext(ctx, "cat", o.file) //nolint:gosec // G204: the file this program wrote
				cmd.Env, cmd.Dir = append(sh.env, "TERM=xterm-256color"), sh.workdir
				tr, err := rawpty.Drain(cmd, buf, o.timeout)
				return outcome{transfer: termload.Transfer(tr)}, err
			}
			return run, func() {}, nil
		}
		cmd := exec.CommandContext(ctx, sh.shell) //nolint:gosec // G204: the shell found at start
		cmd.Env, cmd.Dir = append(sh.env, "TERM=xterm-256color"), sh.workdir
		t, err := rawpty.Start(cmd, 24, 80)
		if err != nil {
			return nil, nil, err
		}
		stop := context.AfterFunc(ctx, func() { _ = t.Close() })
		release := func() {
			stop()
			_ = t.Close()
		}
		if err := ready(t, buf, o.timeout); err != nil {
			release()
			return nil, nil, err
		}
		return func() (outcome, error) { return runOp(t, o, buf) }, release, nil
	}}
}

// wsPath reaches a shell of the terminal service through /ws/terminal at
// base (the service itself, or the gateway), sending header. Each
// operation gets a session of its own, ended afterwards.
func wsPath(name, base string, header http.Header, svc *termproc.Service, sh shellSetup) path {
	return path{name: name, prepare: func(ctx context.Context, o op) (func() (outcome, error), func(), error) {
		sid := "termbench-" + termload.Nonce()
		u := base + "/ws/terminal?session=" + url.QueryEscape(sid) + "&cwd=" + url.QueryEscape(sh.workdir)
		c, err := termclient.Dial(ctx, u, header, 10*time.Second)
		if err != nil {
			return nil, nil, err
		}
		stop := context.AfterFunc(ctx, func() { _ = c.Close() })
		release := func() {
			stop()
			_ = c.Close()
			endSession(svc, sid)
		}
		buf := make([]byte, readBuffer)
		if err := c.Resize(24, 80); err != nil {
			release()
			return nil, nil, err
		}
		if err := ready(c, buf, o.timeout); err != nil {
			release()
			return nil, nil, err
		}
		run := func() (outcome, error) {
			skipped, frames := c.Skipped(), c.Frames()
			res, err := runOp(c, o, buf)
			res.skipped, res.frames = c.Skipped()-skipped, c.Frames()-frames
			return res, err
		}
		return run, release, nil
	}}
}

// endSession ends a benchmark session's shell (DELETE /api/terminal/{id},
// straight to the service); a failure only leaves an idle shell, which
// the service's shutdown ends.
func endSession(svc *termproc.Service, sid string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = svc.Do(ctx, http.MethodDelete, "/api/terminal/"+url.PathEscape(sid), true)
}

// wettyPath drives WeTTY with its Node client.
func wettyPath(srv *wetty.Server, dir string) path {
	return path{name: pathWetty, prepare: func(ctx context.Context, o op) (func() (outcome, error), func(), error) {
		c, err := srv.Prepare(ctx, dir, wetty.Op{
			Op: o.kind, File: o.file, Count: o.count,
			FloodMS: o.flood.Milliseconds(), TimeoutMS: o.timeout.Milliseconds(),
		})
		if err != nil {
			return nil, nil, err
		}
		run := func() (outcome, error) {
			r, err := c.Go()
			if err != nil {
				return outcome{}, err
			}
			res := outcome{
				transfer:  termload.Transfer{Bytes: r.Bytes, Elapsed: time.Duration(r.NS)},
				interrupt: termload.Interruption{Flood: r.FloodBytes, Stop: time.Duration(r.NS)},
			}
			for _, ns := range r.LatenciesNS {
				res.latencies = append(res.latencies, time.Duration(ns))
			}
			if o.kind == opEcho && len(res.latencies) != o.count {
				return outcome{}, fmt.Errorf("wetty client timed %d echoes, want %d", len(res.latencies), o.count)
			}
			return res, nil
		}
		return run, func() { _ = c.Close() }, nil
	}}
}

// ready waits for the shell to answer a marker command and for its prompt
// to settle.
func ready(c termload.Conn, buf []byte, timeout time.Duration) error {
	if err := termload.Sync(c, buf, timeout); err != nil {
		return fmt.Errorf("the shell did not answer: %w", err)
	}
	return termload.Settle(c, buf, settleQuiet, settleTimeout)
}

// runOp runs o on a terminal reached from Go.
func runOp(c termload.Conn, o op, buf []byte) (outcome, error) {
	switch o.kind {
	case opCat:
		tr, err := termload.Cat(c, o.file, buf, o.timeout)
		return outcome{transfer: tr}, err
	case opEcho:
		lat, err := termload.Echo(c, o.count, buf, o.timeout)
		return outcome{latencies: lat}, err
	case opInterrupt:
		in, err := termload.Interrupt(c, o.flood, buf, o.timeout)
		return outcome{interrupt: in}, err
	}
	return outcome{}, errors.New("unknown operation " + o.kind)
}
