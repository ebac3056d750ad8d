package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/svc-code/svc-code/bench/internal/stats"
)

// The goals of the issue.
const (
	goalGatewayMBps  = 100.0                  // MB/s through the gateway
	goalRawFraction  = 0.5                    // of the raw PTY's throughput, through the gateway
	goalEchoP99      = 5 * time.Millisecond   // keystroke echo p99
	goalInterruptMax = 200 * time.Millisecond // Ctrl-C to the end of the flood, worst trial
)

// catFigures is a path's `cat` throughput.
type catFigures struct {
	MBps    float64   // median over the rounds
	Rounds  []float64 // every round's
	Bytes   int64     // median bytes delivered
	Dropped int64     // output the server dropped, over all rounds
	// DroppedRounds is how many rounds dropped any.
	DroppedRounds int
}

// echoFigures is a path's keystroke echo latency.
type echoFigures struct {
	P50, P99 time.Duration // medians over the rounds of each round's figure
	Keys     int           // keys timed, all rounds
}

// stopFigures is how long Ctrl-C took to stop a `yes` flood on a path.
type stopFigures struct {
	Median, Worst time.Duration // over every trial
	Trials        int
	Flood         int64 // median bytes of flood read before the Ctrl-C
}

// summary is the figures per path.
type summary struct {
	Paths []string // in table order, those measured
	Cat   map[string]catFigures
	Echo  map[string]echoFigures
	Stop  map[string]stopFigures
}

func summarize(res results, paths []string) summary {
	s := summary{Paths: paths, Cat: map[string]catFigures{}, Echo: map[string]echoFigures{}, Stop: map[string]stopFigures{}}
	for _, p := range paths {
		if runs := res[opCat][p]; len(runs) > 0 {
			var f catFigures
			var bytes []int64
			for _, r := range runs {
				f.Rounds = append(f.Rounds, r.transfer.MBps())
				f.Dropped += r.skipped
				if r.skipped > 0 {
					f.DroppedRounds++
				}
				bytes = append(bytes, r.transfer.Bytes)
			}
			f.MBps, f.Bytes = stats.Median(f.Rounds), int64(median(bytes))
			s.Cat[p] = f
		}
		if runs := res[opEcho][p]; len(runs) > 0 {
			var f echoFigures
			var p50s, p99s []time.Duration
			for _, r := range runs {
				sum := stats.Summarize(r.latencies, 0)
				p50s, p99s = append(p50s, sum.P50), append(p99s, sum.P99)
				f.Keys += sum.Count
			}
			f.P50, f.P99 = stats.Median(p50s), stats.Median(p99s)
			s.Echo[p] = f
		}
		if runs := res[opInterrupt][p]; len(runs) > 0 {
			var stops []time.Duration
			var floods []int64
			for _, r := range runs {
				stops = append(stops, r.interrupt.Stop)
				floods = append(floods, r.interrupt.Flood)
			}
			s.Stop[p] = stopFigures{Median: stats.Median(stops), Worst: slices.Max(stops), Trials: len(stops), Flood: int64(median(floods))}
		}
	}
	return s
}

func median(xs []int64) float64 {
	fs := make([]float64, len(xs))
	for i, x := range xs {
		fs[i] = float64(x)
	}
	return stats.Median(fs)
}

// ratio is one throughput compared with another.
type ratio struct {
	Of, To string
	Value  float64
}

// ratios are the throughput comparisons the issue asks for, where both
// sides were measured.
func (s summary) ratios() []ratio {
	pairs := [][2]string{
		{pathGateway, pathRaw},
		{pathDirect, pathRaw},
		{pathWetty, pathRaw},
		{pathGateway, pathDirect},
		{pathGateway, pathWetty},
		{pathDirect, pathWetty},
	}
	var out []ratio
	for _, p := range pairs {
		a, okA := s.Cat[p[0]]
		b, okB := s.Cat[p[1]]
		if okA && okB && b.MBps > 0 {
			out = append(out, ratio{Of: p[0], To: p[1], Value: a.MBps / b.MBps})
		}
	}
	return out
}

// verdict is one goal and how this run did against it.
type verdict struct {
	Goal, Figure, Result string
}

const (
	met         = "met"
	notMet      = "not met"
	notMeasured = "not measured"
)

func metIf(ok bool) string {
	if ok {
		return met
	}
	return notMet
}

// verdicts holds the run against the goals. The throughput
// goals are judged on the rate of the bytes delivered; output the service
// dropped for a client that fell behind is a goal of its own (all of
// `cat`'s output arrives), not met when any was dropped.
func (s summary) verdicts() []verdict {
	var v []verdict
	gw, okGW := s.Cat[pathGateway]
	raw, okRaw := s.Cat[pathRaw]
	wt, okWetty := s.Cat[pathWetty]

	g := verdict{Goal: fmt.Sprintf("throughput through the gateway ≥ %.0f MB/s", goalGatewayMBps), Result: notMeasured}
	if okGW {
		g.Figure = mbps(gw.MBps)
		g.Result = metIf(gw.MBps >= goalGatewayMBps)
	}
	v = append(v, g)

	g = verdict{Goal: fmt.Sprintf("throughput through the gateway ≥ %.1f× the raw PTY", goalRawFraction), Result: notMeasured}
	if okGW && okRaw && raw.MBps > 0 {
		r := gw.MBps / raw.MBps
		g.Figure = fmt.Sprintf("%.2f× (%.1f of %.1f MB/s)", r, gw.MBps, raw.MBps)
		g.Result = metIf(r >= goalRawFraction)
	}
	v = append(v, g)

	g = verdict{Goal: "throughput through the gateway ahead of wetty", Result: notMeasured}
	if okGW && okWetty {
		g.Figure = fmt.Sprintf("%.1f vs %.1f MB/s (%.2f×)", gw.MBps, wt.MBps, gw.MBps/wt.MBps)
		g.Result = metIf(gw.MBps > wt.MBps)
	}
	v = append(v, g)

	for _, p := range []string{pathGateway, pathDirect} {
		g = verdict{Goal: "all of `cat`'s output delivered, " + p, Result: notMeasured}
		if c, ok := s.Cat[p]; ok {
			g.Figure = "nothing dropped"
			if c.Dropped > 0 {
				g.Figure = fmt.Sprintf("%s dropped in %d of %d rounds (resync)", megabytes(c.Dropped), c.DroppedRounds, len(c.Rounds))
			}
			g.Result = metIf(c.Dropped == 0)
		}
		v = append(v, g)
	}
	for _, p := range []string{pathGateway, pathDirect} {
		g = verdict{Goal: fmt.Sprintf("keystroke echo p99 ≤ %s, %s", ms(goalEchoP99), p), Result: notMeasured}
		if e, ok := s.Echo[p]; ok {
			g.Figure = fmt.Sprintf("p99 %s (p50 %s)", ms(e.P99), ms(e.P50))
			g.Result = metIf(e.P99 <= goalEchoP99)
		}
		v = append(v, g)
	}
	for _, p := range []string{pathGateway, pathDirect} {
		g = verdict{Goal: fmt.Sprintf("Ctrl-C stops a `yes` flood within %s, %s (worst trial)", ms(goalInterruptMax), p), Result: notMeasured}
		if st, ok := s.Stop[p]; ok {
			g.Figure = fmt.Sprintf("worst %s of %d (median %s)", ms(st.Worst), st.Trials, ms(st.Median))
			g.Result = metIf(st.Worst <= goalInterruptMax)
		}
		v = append(v, g)
	}
	return v
}

// ms formats a duration in milliseconds without needless digits:
// "5 ms", "0.412 ms", "187.3 ms".
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v == float64(int64(v)):
		return fmt.Sprintf("%d ms", int64(v))
	case v < 10:
		return fmt.Sprintf("%.3f ms", v)
	default:
		return fmt.Sprintf("%.1f ms", v)
	}
}
