package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/svc-code/svc-code/bench/internal/termclient"
	"github.com/svc-code/svc-code/bench/internal/termload"
	"github.com/svc-code/svc-code/bench/internal/termproc"
)

// Markers of the flow-control section of BENCHMARKS.md.
const (
	flowStartMarker = "<!-- bench:terminal-flow:start -->"
	flowEndMarker   = "<!-- bench:terminal-flow:end -->"
)

// Flow-control scenarios: a reader that takes output at a fixed rate
// (a browser that renders slower than `cat` prints), on its own or beside
// a reader at full speed.
const (
	flowAlone      = "slow reader with flow=1, alone"
	flowBesideFast = "slow reader with flow=1, beside a fast flow=1 reader"
	flowOld        = "slow reader without flow (before flow control)"
)

// flowRun is one scenario on one path.
type flowRun struct {
	scenario, path string
	// slow is the rate-limited reader's transfer (until the marker), the
	// output the server dropped for it (resync), and its screens.
	slow            termload.Transfer
	skipped, screen int64
	// fast is the full-speed reader's transfer (flowBesideFast only), and
	// caught tells that the slow reader then reached the same offset.
	fast   termload.Transfer
	caught bool
}

// endpoint is where a scenario dials /ws/terminal.
type endpoint struct {
	name, base string
	header     http.Header
}

// measureFlow runs each scenario on each endpoint with a reader limited
// to mbps.
func measureFlow(ctx context.Context, o options, eps []endpoint, svc *termproc.Service, sh shellSetup, file string) ([]flowRun, error) {
	var out []flowRun
	for _, sc := range []string{flowAlone, flowBesideFast, flowOld} {
		for _, ep := range eps {
			r, err := flowOne(ctx, o, ep, svc, sh, file, sc)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", sc, ep.name, err)
			}
			out = append(out, r)
			fmt.Printf("%-52s %-8s slow: %s in %v (%.1f MB/s), dropped %d, screens %d; fast: %.1f MB/s\n",
				sc, ep.name, mb(r.slow.Bytes), r.slow.Elapsed.Round(time.Millisecond), r.slow.MBps(), r.skipped, r.screen, r.fast.MBps())
		}
	}
	return out, nil
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// limited reads a Conn at most mbps megabytes per second.
type limited struct {
	c     *termclient.Conn
	rate  float64 // bytes per second
	start time.Time
	n     int64
}

func (l *limited) Send(keys []byte) error            { return l.c.Send(keys) }
func (l *limited) SetReadDeadline(t time.Time) error { return l.c.SetReadDeadline(t) }
func (l *limited) Read(p []byte) (int, error) {
	if l.start.IsZero() {
		l.start = time.Now()
	}
	n, err := l.c.Read(p[:min(len(p), 16<<10)])
	l.n += int64(n)
	// Not a synchronisation: the reader's pace.
	if ahead := time.Until(l.start.Add(time.Duration(float64(l.n) / l.rate * float64(time.Second)))); ahead > 0 {
		time.Sleep(ahead)
	}
	return n, err
}

func flowOne(ctx context.Context, o options, ep endpoint, svc *termproc.Service, sh shellSetup, file, sc string) (flowRun, error) {
	run := flowRun{scenario: sc, path: ep.name}
	sid := "termbench-flow-" + termload.Nonce()
	defer endSession(svc, sid)
	q := "/ws/terminal?session=" + url.QueryEscape(sid) + "&cwd=" + url.QueryEscape(sh.workdir)
	dial := func(flow bool) (*termclient.Conn, error) {
		u := ep.base + q
		if flow {
			u += "&flow=1"
		}
		c, err := termclient.Dial(ctx, u, ep.header, 10*time.Second)
		if err == nil && flow && !c.Connected.Flow {
			_ = c.Close()
			return nil, errors.New("the service did not accept flow=1")
		}
		return c, err
	}
	slowConn, err := dial(sc != flowOld)
	if err != nil {
		return run, err
	}
	defer slowConn.Close()
	buf := make([]byte, readBuffer)
	if err := slowConn.Resize(24, 80); err != nil {
		return run, err
	}
	if err := ready(slowConn, buf, o.timeout); err != nil {
		return run, err
	}
	slow := &limited{c: slowConn, rate: o.slowMBps * 1e6}

	var fastDone chan error
	var fastConn *termclient.Conn
	if sc == flowBesideFast {
		if fastConn, err = dial(true); err != nil {
			return run, err
		}
		defer fastConn.Close()
		fbuf := make([]byte, readBuffer)
		if err := termload.Settle(fastConn, fbuf, settleQuiet, settleTimeout); err != nil {
			return run, err
		}
		fastDone = make(chan error, 1)
		cmd, mark := termload.MarkerCommand("END", termload.Nonce())
		start := time.Now()
		go func() {
			n, err := termload.ReadUntil(fastConn, mark, fbuf, start.Add(o.timeout))
			run.fast = termload.Transfer{Bytes: n, Elapsed: time.Since(start)}
			fastDone <- err
		}()
		if err := slowConn.Send([]byte("cat " + termload.ShellQuote(file) + "; " + cmd + "\r")); err != nil {
			return run, err
		}
		// The slow reader reads on until it has reached where the fast
		// one ended (it skips what it missed through screens).
		sbuf := make([]byte, readBuffer)
		slowStart := time.Now()
		if err := <-fastDone; err != nil {
			return run, fmt.Errorf("fast reader: %w", err)
		}
		end := fastConn.Pos()
		_ = slow.SetReadDeadline(time.Now().Add(o.timeout))
		for slowConn.Pos() < end {
			if _, err := slow.Read(sbuf); err != nil {
				return run, fmt.Errorf("slow reader at %d of %d: %w", slowConn.Pos(), end, err)
			}
		}
		run.caught = true
		run.slow = termload.Transfer{Bytes: slow.n, Elapsed: time.Since(slowStart)}
	} else {
		tr, err := termload.Cat(slow, file, buf, o.timeout)
		if err != nil {
			return run, err
		}
		run.slow = tr
	}
	run.skipped, run.screen = slowConn.Skipped(), slowConn.Screens()
	return run, nil
}

// flowMarkdown is the flow-control section of BENCHMARKS.md.
func flowMarkdown(o options, when time.Time, machine, revision, fileLine string, runs []flowRun) string {
	var b strings.Builder
	b.WriteString(flowStartMarker + "\n")
	b.WriteString("## Terminal flow control: a slow reader\n\n")
	fmt.Fprintf(&b, "Measured by `make bench-terminal` (`go run ./bench/cmd/termbench`). "+
		"(`-flow-only` runs this section alone.) A reader takes the output of `cat <file>` at %.0f MB/s at most (`-slow-mbps`), as a browser that renders slower than `cat` prints: "+
		"with `flow=1` it acknowledges what it has read (every 64 KiB or 100 ms, as the pane does); without, it is a client as before flow control. "+
		"Beside it, in the second scenario, a `flow=1` reader takes the output at full speed and sets the pace; the slow one is then resynchronised "+
		"with screens and reads on until it reaches the fast one's end. Bytes count every byte of output received up to the marker "+
		"(the file with CR added to each newline, the echoed command line and the marker).\n\n", o.slowMBps)
	fmt.Fprintf(&b, "- Date: %s\n- Machine: %s\n- Services built from: %s\n- Command: %s\n- File: %s\n\n",
		when.UTC().Format("2006-01-02 15:04 MST"), machine, revision, command(o), fileLine)
	b.WriteString("| Scenario | Path | Slow reader: bytes | MB/s | dropped (resync) | screens | Fast reader: MB/s |\n|---|---|--:|--:|--:|--:|--:|\n")
	for _, r := range runs {
		fast := "–"
		if r.fast.Bytes > 0 {
			fast = fmt.Sprintf("%.1f", r.fast.MBps())
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.1f | %d | %d | %s |\n", r.scenario, r.path, r.slow.Bytes, r.slow.MBps(), r.skipped, r.screen, fast)
	}
	b.WriteString("\n- With `flow=1` alone, the slow reader paces the shell: nothing is dropped and it gets no screen. " +
		"Beside a fast reader, the fast one sets the pace (the shell is never held to the slow one's rate) and the slow one " +
		"gets screens instead of holes. Without flow, the slow reader loses output (dropped).\n")
	b.WriteString(flowEndMarker + "\n")
	return b.String()
}
