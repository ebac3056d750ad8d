package main

import (
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/bench/internal/termload"
)

func cat(mbps float64, skipped int64) measurement {
	return measurement{outcome: outcome{transfer: termload.Transfer{Bytes: int64(mbps * 1e6), Elapsed: time.Second}, skipped: skipped}}
}

func echoes(ms ...float64) measurement {
	var lat []time.Duration
	for _, v := range ms {
		lat = append(lat, time.Duration(v*float64(time.Millisecond)))
	}
	return measurement{outcome: outcome{latencies: lat}}
}

func stop(ms float64) measurement {
	return measurement{outcome: outcome{interrupt: termload.Interruption{Stop: time.Duration(ms * float64(time.Millisecond)), Flood: 1000}}}
}

// fixture is three rounds on four paths.
func fixture(gatewayMBps []float64, gatewaySkipped int64, gatewayEchoMS, gatewayStopMS float64) results {
	r := results{}
	for i := range 3 {
		r.add(opCat, pathRaw, cat([]float64{60, 55, 70}[i], 0))
		r.add(opCat, pathDirect, cat([]float64{40, 45, 42}[i], 0))
		r.add(opCat, pathGateway, cat(gatewayMBps[i], gatewaySkipped))
		r.add(opCat, pathWetty, cat([]float64{20, 22, 21}[i], 0))
		for _, p := range []string{pathRaw, pathDirect, pathWetty} {
			r.add(opEcho, p, echoes(0.1, 0.2, 0.3))
			r.add(opInterrupt, p, stop(2))
		}
		r.add(opEcho, pathGateway, echoes(0.3, 0.4, gatewayEchoMS))
		r.add(opInterrupt, pathGateway, stop(gatewayStopMS))
	}
	return r
}

var allPaths = []string{pathRaw, pathDirect, pathGateway, pathWetty}

func TestSummarize(t *testing.T) {
	s := summarize(fixture([]float64{30, 36, 33}, 0, 0.9, 3), allPaths)
	tests := []struct {
		name      string
		got, want any
	}{
		{"raw throughput is the median round", s.Cat[pathRaw].MBps, 60.0},
		{"gateway throughput", s.Cat[pathGateway].MBps, 33.0},
		{"bytes are the median round's", s.Cat[pathDirect].Bytes, int64(42e6)},
		{"echo p50", s.Echo[pathGateway].P50, 400 * time.Microsecond},
		{"echo p99 is the tail", s.Echo[pathGateway].P99, 900 * time.Microsecond},
		{"keys over all rounds", s.Echo[pathGateway].Keys, 9},
		{"Ctrl-C trials over all rounds", s.Stop[pathGateway].Trials, 3},
		{"Ctrl-C worst", s.Stop[pathGateway].Worst, 3 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestVerdicts(t *testing.T) {
	tests := []struct {
		name    string
		res     results
		paths   []string
		goal    string // a substring of the goal
		want    string
		wantFig string // a substring of the figure
	}{
		{"gateway below 100 MB/s", fixture([]float64{30, 36, 33}, 0, 0.9, 3), allPaths, "≥ 100 MB/s", notMet, "33.0 MB/s"},
		{"gateway at 100 MB/s", fixture([]float64{100, 120, 110}, 0, 0.9, 3), allPaths, "≥ 100 MB/s", met, "110.0 MB/s"},
		{"gateway fast while dropping output", fixture([]float64{100, 120, 110}, 5, 0.9, 3), allPaths, "≥ 100 MB/s", met, "110.0 MB/s"},
		{"nothing dropped", fixture([]float64{30, 36, 33}, 0, 0.9, 3), allPaths, "output delivered, gateway", met, "nothing dropped"},
		{"output dropped", fixture([]float64{30, 36, 33}, 2e6, 0.9, 3), allPaths, "output delivered, gateway", notMet, "6.0 MB dropped in 3 of 3 rounds"},
		{"direct delivered all", fixture([]float64{30, 36, 33}, 2e6, 0.9, 3), allPaths, "output delivered, direct", met, "nothing dropped"},
		{"half the raw PTY", fixture([]float64{30, 36, 33}, 0, 0.9, 3), allPaths, "0.5×", met, "0.55×"},
		{"below half the raw PTY", fixture([]float64{20, 29, 25}, 0, 0.9, 3), allPaths, "0.5×", notMet, "0.42×"},
		{"ahead of wetty", fixture([]float64{30, 36, 33}, 0, 0.9, 3), allPaths, "ahead of wetty", met, "33.0 vs 21.0 MB/s (1.57×)"},
		{"behind wetty", fixture([]float64{20, 21, 19}, 0, 0.9, 3), allPaths, "ahead of wetty", notMet, "20.0 vs 21.0"},
		{"wetty not run", fixture([]float64{30, 36, 33}, 0, 0.9, 3), allPaths[:3], "ahead of wetty", notMeasured, ""},
		{"echo p99 within 5 ms", fixture([]float64{30, 36, 33}, 0, 5, 3), allPaths, "echo p99 ≤ 5 ms, gateway", met, "p99 5 ms"},
		{"echo p99 above 5 ms", fixture([]float64{30, 36, 33}, 0, 5.001, 3), allPaths, "echo p99 ≤ 5 ms, gateway", notMet, "p99 5.001 ms"},
		{"Ctrl-C within 200 ms", fixture([]float64{30, 36, 33}, 0, 1, 200), allPaths, "within 200 ms, gateway", met, "worst 200 ms of 3"},
		{"Ctrl-C over 200 ms once", fixture([]float64{30, 36, 33}, 0, 1, 250), allPaths, "within 200 ms, gateway", notMet, "worst 250 ms of 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var found bool
			for _, v := range summarize(tt.res, tt.paths).verdicts() {
				if !strings.Contains(v.Goal, tt.goal) {
					continue
				}
				found = true
				if v.Result != tt.want {
					t.Errorf("%s: %s, want %s (figure %q)", v.Goal, v.Result, tt.want, v.Figure)
				}
				if !strings.Contains(v.Figure, tt.wantFig) {
					t.Errorf("%s: figure %q, want it to contain %q", v.Goal, v.Figure, tt.wantFig)
				}
			}
			if !found {
				t.Fatalf("no goal contains %q", tt.goal)
			}
		})
	}
}

func TestRatios(t *testing.T) {
	got := summarize(fixture([]float64{30, 36, 33}, 0, 1, 1), allPaths).ratios()
	want := map[string]float64{
		"gateway/raw PTY": 0.55, "direct/raw PTY": 0.7, "wetty/raw PTY": 0.35,
		"gateway/direct": 33.0 / 42, "gateway/wetty": 33.0 / 21, "direct/wetty": 2,
	}
	if len(got) != len(want) {
		t.Fatalf("%d ratios, want %d: %+v", len(got), len(want), got)
	}
	for _, r := range got {
		w, ok := want[r.Of+"/"+r.To]
		if !ok || r.Value < w-1e-9 || r.Value > w+1e-9 {
			t.Errorf("%s/%s = %v, want %v", r.Of, r.To, r.Value, w)
		}
	}
	if got := summarize(fixture([]float64{30, 36, 33}, 0, 1, 1), allPaths[:3]).ratios(); len(got) != 3 {
		t.Errorf("without wetty: %d ratios, want 3", len(got))
	}
}

func TestMs(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{5 * time.Millisecond, "5 ms"},
		{200 * time.Millisecond, "200 ms"},
		{412 * time.Microsecond, "0.412 ms"},
		{187300 * time.Microsecond, "187.3 ms"},
		{0, "0 ms"},
	}
	for _, tt := range tests {
		if got := ms(tt.d); got != tt.want {
			t.Errorf("ms(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
