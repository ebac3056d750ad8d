// Package load drives a closed-loop benchmark: a fixed number of workers,
// each doing one round trip after another (an HTTP request, or a WebSocket
// message and its echo) for a set time after an unmeasured warm-up, with
// the latency of every measured round trip recorded.
package load

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// RoundTrip performs one round trip and reports what went wrong, if
// anything. A worker calls its RoundTrip sequentially.
type RoundTrip func() error

// Dial prepares one worker, unmeasured (a WebSocket dials its connection
// here), and returns its round trip and what releases its resources.
type Dial func(ctx context.Context) (rt RoundTrip, release func(), err error)

// Plan is how a run is driven.
type Plan struct {
	Workers  int
	Warmup   time.Duration // run but not recorded
	Duration time.Duration // recorded
}

// Result is what a run measured.
type Result struct {
	// Latencies of the round trips started after the warm-up, in no
	// particular order.
	Latencies []time.Duration
	// Window is from the end of the warm-up to the last recorded round
	// trip's completion: the denominator of the throughput.
	Window time.Duration
}

// Run dials Plan.Workers workers, then runs them together. A failed round
// trip fails the run: a benchmark of a path that errs measures nothing
// worth reporting.
func Run(ctx context.Context, p Plan, dial Dial) (Result, error) {
	if p.Workers < 1 || p.Duration <= 0 {
		return Result{}, fmt.Errorf("plan needs at least one worker and a positive duration, got %+v", p)
	}
	rts := make([]RoundTrip, 0, p.Workers)
	for i := range p.Workers {
		rt, release, err := dial(ctx)
		if err != nil {
			return Result{}, fmt.Errorf("prepare worker %d: %w", i, err)
		}
		defer release()
		rts = append(rts, rt)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := time.Now()
	from := start.Add(p.Warmup)
	end := from.Add(p.Duration)

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		all      []time.Duration
		lastDone time.Time
	)
	for i, rt := range rts {
		wg.Go(func() {
			lat, done, err := work(ctx, rt, from, end)
			if err != nil {
				cancel(fmt.Errorf("worker %d: %w", i, err))
				return
			}
			mu.Lock()
			defer mu.Unlock()
			all = append(all, lat...)
			if done.After(lastDone) {
				lastDone = done
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return Result{}, err
	}
	if len(all) == 0 {
		return Result{}, errors.New("no round trip completed in the measured window")
	}
	return Result{Latencies: all, Window: lastDone.Sub(from)}, nil
}

// work is one worker's loop. It records round trips started in [from, end)
// and returns when the first one after end would start.
func work(ctx context.Context, rt RoundTrip, from, end time.Time) (lat []time.Duration, lastDone time.Time, err error) {
	lat = make([]time.Duration, 0, 4096)
	for ctx.Err() == nil {
		t0 := time.Now()
		if !t0.Before(end) {
			return lat, lastDone, nil
		}
		if err := rt(); err != nil {
			return nil, time.Time{}, err
		}
		t1 := time.Now()
		if !t0.Before(from) {
			lat = append(lat, t1.Sub(t0))
			lastDone = t1
		}
	}
	return nil, time.Time{}, context.Cause(ctx)
}
