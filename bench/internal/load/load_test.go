package load

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// sleeper is a worker whose round trip takes d, counting calls.
func sleeper(d time.Duration, calls *atomic.Int64) Dial {
	return func(context.Context) (RoundTrip, func(), error) {
		return func() error {
			calls.Add(1)
			time.Sleep(d)
			return nil
		}, func() {}, nil
	}
}

func TestRunRecordsOnlyAfterWarmup(t *testing.T) {
	var calls atomic.Int64
	plan := Plan{Workers: 2, Warmup: 100 * time.Millisecond, Duration: 200 * time.Millisecond}
	res, err := Run(context.Background(), plan, sleeper(5*time.Millisecond, &calls))
	if err != nil {
		t.Fatal(err)
	}
	got := int64(len(res.Latencies))
	if got == 0 || got >= calls.Load() {
		t.Errorf("recorded %d of %d round trips, want some but not the warm-up ones", got, calls.Load())
	}
	// 2 workers × 200 ms / 5 ms is 80 at most.
	if got > 80 {
		t.Errorf("recorded %d round trips, want at most 80", got)
	}
	for _, l := range res.Latencies {
		if l < 5*time.Millisecond {
			t.Fatalf("latency %v, want at least the 5 ms a round trip sleeps", l)
		}
	}
	if res.Window < plan.Duration || res.Window > plan.Duration+250*time.Millisecond {
		t.Errorf("window %v, want about %v", res.Window, plan.Duration)
	}
}

func TestRunFailsOnError(t *testing.T) {
	boom := errors.New("boom")
	dial := func(context.Context) (RoundTrip, func(), error) {
		return func() error { return boom }, func() {}, nil
	}
	_, err := Run(context.Background(), Plan{Workers: 3, Duration: time.Second}, dial)
	if !errors.Is(err, boom) {
		t.Errorf("Run error = %v, want %v", err, boom)
	}
}

func TestRunReleasesEveryWorker(t *testing.T) {
	tests := []struct {
		name     string
		failDial int // the dial that fails, or -1
		want     int64
	}{
		{"all dialled", -1, 3},
		{"third dial fails", 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dials, released atomic.Int64
			dial := func(context.Context) (RoundTrip, func(), error) {
				if n := dials.Add(1) - 1; n == int64(tt.failDial) {
					return nil, nil, errors.New("refused")
				}
				return func() error { return nil }, func() { released.Add(1) }, nil
			}
			_, err := Run(context.Background(), Plan{Workers: 3, Duration: 10 * time.Millisecond}, dial)
			if (err != nil) != (tt.failDial >= 0) {
				t.Errorf("Run error = %v", err)
			}
			if got := released.Load(); got != tt.want {
				t.Errorf("released %d workers, want %d", got, tt.want)
			}
		})
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	var calls atomic.Int64
	start := time.Now()
	_, err := Run(ctx, Plan{Workers: 2, Duration: 10 * time.Second}, sleeper(time.Millisecond, &calls))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run error = %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("Run took %v after cancel, want it to stop at once", elapsed)
	}
}

func TestRunRejectsEmptyPlan(t *testing.T) {
	_, err := Run(context.Background(), Plan{}, nil)
	if err == nil || !strings.Contains(err.Error(), "worker") {
		t.Errorf("Run error = %v, want a plan error", err)
	}
}
