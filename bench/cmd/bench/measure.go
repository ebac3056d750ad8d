package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/svc-code/svc-code/bench/internal/backend"
	"github.com/svc-code/svc-code/bench/internal/gatewayproc"
	"github.com/svc-code/svc-code/bench/internal/load"
	"github.com/svc-code/svc-code/bench/internal/report"
	"github.com/svc-code/svc-code/bench/internal/stats"
	"github.com/svc-code/svc-code/libs/cpustat"
	"github.com/svc-code/svc-code/libs/protocol"
)

// benchmark is one kind of round trip, made against either path.
type benchmark struct {
	name, unit string
	// direct and gateway each prepare one run: the worker, and what to
	// release after the run.
	direct, gateway func() (load.Dial, func())
}

func benchmarks(o options, be *backend.Backend, gw *gatewayproc.Gateway, secret string) []benchmark {
	internal := map[string]string{protocol.HeaderInternal: secret}
	bearer := map[string]string{"Authorization": "Bearer " + gw.Token}
	httpRun := func(base string, header map[string]string) func() (load.Dial, func()) {
		return func() (load.Dial, func()) {
			client := load.NewHTTPClient(o.workers)
			return load.HTTPGet(client, base+backend.SessionsPath, header, backend.SessionsBody), client.CloseIdleConnections
		}
	}
	wsRun := func(base string, header map[string]string) func() (load.Dial, func()) {
		h := make(map[string][]string, len(header))
		for k, v := range header {
			h[k] = []string{v}
		}
		return func() (load.Dial, func()) {
			return load.WebSocketEcho(base+backend.EchoPath, h, echoMessage), func() {}
		}
	}
	direct, through := "http://"+be.Addr(), gw.URL("http")
	directWS, throughWS := "ws://"+be.Addr(), gw.URL("ws")
	return []benchmark{
		{
			name: "HTTP GET " + backend.SessionsPath, unit: "req/s",
			direct: httpRun(direct, internal), gateway: httpRun(through, bearer),
		},
		{
			name: "WebSocket echo " + backend.EchoPath, unit: "msg/s",
			direct: wsRun(directWS, internal), gateway: wsRun(throughWS, bearer),
		},
	}
}

// measure runs every benchmark o.rounds times on both paths, alternating
// which path goes first, and takes the medians. gatewayPid is sampled with
// this process for the CPU figures.
func measure(ctx context.Context, o options, benches []benchmark, gatewayPid int, stdout io.Writer) ([]report.Comparison, error) {
	results := make([]report.Comparison, len(benches))
	for i, b := range benches {
		results[i] = report.Comparison{Name: b.name, Unit: b.unit, Rounds: make([][2]report.Run, o.rounds)}
	}
	for r := range o.rounds {
		fmt.Fprintf(stdout, "\nround %d/%d\n", r+1, o.rounds)
		order := []int{0, 1}
		if r%2 == 1 {
			order = []int{1, 0}
		}
		for i, b := range benches {
			for _, p := range order {
				prepare := b.direct
				if p == 1 {
					prepare = b.gateway
				}
				run, err := measureOne(ctx, o, prepare, gatewayPid)
				if err != nil {
					return nil, fmt.Errorf("%s, %s, round %d: %w", b.name, report.Paths[p], r+1, err)
				}
				results[i].Rounds[r][p] = run
				line := report.RunLine(b.name, report.Paths[p], b.unit, run)
				if run.Repeats > 0 {
					line += fmt.Sprintf("   (repeated %d× while other processes were busy)", run.Repeats)
				}
				fmt.Fprintln(stdout, line)
			}
		}
	}
	for i := range results {
		var direct, gateway []stats.Summary
		for _, r := range results[i].Rounds {
			direct, gateway = append(direct, r[0].Summary), append(gateway, r[1].Summary)
		}
		results[i].Direct, results[i].Gateway = stats.MedianSummary(direct), stats.MedianSummary(gateway)
	}
	return results, nil
}

// measureOne is one run, with the CPU use around it. A run during which
// other processes used more than o.maxOthers CPUs is repeated, up to
// maxRepeats times after a pause; the last attempt is kept either way.
func measureOne(ctx context.Context, o options, prepare func() (load.Dial, func()), gatewayPid int) (report.Run, error) {
	const maxRepeats = 2
	plan := load.Plan{Workers: o.workers, Warmup: o.warmup, Duration: o.duration}
	for attempt := 0; ; attempt++ {
		run, err := attemptRun(ctx, plan, prepare, gatewayPid)
		if err != nil {
			return report.Run{}, err
		}
		run.Repeats = attempt
		if !run.CPUKnown || run.OthersCPU <= o.maxOthers || attempt == maxRepeats {
			return run, nil
		}
		select {
		case <-ctx.Done():
			return report.Run{}, ctx.Err()
		case <-time.After(othersPause):
		}
	}
}

// othersPause is how long to wait before repeating a disturbed run.
const othersPause = 3 * time.Second

func attemptRun(ctx context.Context, plan load.Plan, prepare func() (load.Dial, func()), gatewayPid int) (report.Run, error) {
	dial, release := prepare()
	defer release()
	before, cpuErr := cpustat.Take(os.Getpid(), gatewayPid)
	res, err := load.Run(ctx, plan, dial)
	if err != nil {
		return report.Run{}, err
	}
	run := report.Run{Summary: stats.Summarize(res.Latencies, res.Window)}
	if after, err := cpustat.Take(os.Getpid(), gatewayPid); err == nil && cpuErr == nil {
		u := after.Since(before)
		run.CPUKnown = true
		run.BenchCPU, run.GatewayCPU, run.OthersCPU = u.Procs[0], u.Procs[1], u.Others
	}
	return run, nil
}
