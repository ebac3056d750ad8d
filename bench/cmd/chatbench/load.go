package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/svc-code/svc-code/bench/internal/stats"
	"github.com/svc-code/svc-code/libs/cpustat"
)

// load is what one measured turn of every session delivered.
type load struct {
	window    time.Duration // first prompt sent to last frame received
	frames    int64
	fps       float64
	lat       stats.Summary
	phases    []phase
	missing   int64
	results   int64
	timedOut  bool
	parseErrs int64
	// Logged frames seen at or below a socket's previous line, and gaps.
	repeated, skipped int64

	loadBefore, loadAfter string // 1-minute load averages

	cpuKnown bool
	cpu      []float64 // the benchmark client, then each server (with its children)
	others   float64
	steal    float64
	busy     float64 // the whole machine, interrupts included
}

// ok reports whether every frame arrived once, in order.
func (l load) ok() bool {
	return l.lat.Count > 0 && l.missing == 0 && l.repeated == 0 && l.skipped == 0 && !l.timedOut
}

// runLoad has the first `sessions` sockets each send a `SLOW o.chunks`
// prompt (socket s drives session s), spread over one message interval
// with o.stagger, and reads every socket until its turn's result. pids are
// the processes whose CPU use is reported: the benchmark's, then the
// servers'.
func runLoad(ctx context.Context, o options, socks []*sock, sessions int, delay time.Duration, pids []int) (load, error) {
	var l load
	l.loadBefore = loadAvg()
	cpu0, cpuErr := cpustat.TakeTrees(pids...)
	t0 := time.Now()
	dones := make([]<-chan struct{}, len(socks))
	for i, s := range socks {
		dones[i] = s.arm(true, o.chunks)
	}
	var sendErr error
	for sIdx := range sessions {
		if o.stagger {
			// Spread the turns' starts over one interval between
			// messages, so that the agents write at a steady rate.
			time.Sleep(time.Until(t0.Add(delay * time.Duration(sIdx) / time.Duration(sessions))))
		}
		sendErr = errors.Join(sendErr, socks[sIdx].prompt(fmt.Sprintf("SLOW %d", o.chunks)))
	}
	if sendErr != nil {
		return l, fmt.Errorf("send user_message: %w", sendErr)
	}
	expected := time.Duration(o.chunks) * delay
	timeout := expected + 60*time.Second
	fmt.Printf("streaming: %d messages per session, %s apart (offered ≈ %.0f frames/s), up to %s ...\n",
		o.chunks, delay, float64(len(socks))/delay.Seconds(), timeout.Round(time.Second))
	done := make(chan struct{})
	go func() {
		for _, d := range dones {
			<-d
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
		l.timedOut = true
	case <-ctx.Done():
		return l, ctx.Err()
	}
	cpu1, cpuErr2 := cpustat.TakeTrees(pids...)
	l.loadAfter = loadAvg()

	var lat []time.Duration
	byIndex := make([][]time.Duration, o.chunks) // latencies of each session's k-th message
	var assistant int64
	var last time.Time
	for _, s := range socks {
		s.mu.Lock()
		lat = append(lat, s.lat...)
		for k, d := range s.lat {
			if k < len(byIndex) {
				byIndex[k] = append(byIndex[k], d)
			}
		}
		l.frames += s.frames
		assistant += int64(len(s.lat))
		l.parseErrs += s.parseErrs
		l.repeated += s.repeated
		l.skipped += s.skipped
		if s.gotResult {
			l.results++
		}
		if s.last.After(last) {
			last = s.last
		}
		s.mu.Unlock()
	}
	l.window = last.Sub(t0)
	l.lat = stats.Summarize(lat, l.window)
	if l.window > 0 {
		l.fps = float64(l.frames) / l.window.Seconds()
	}
	l.phases = phasesOf(byIndex)
	l.missing = int64(len(socks))*int64(o.chunks) - assistant
	if cpuErr == nil && cpuErr2 == nil {
		u := cpu1.Since(cpu0)
		l.cpuKnown, l.cpu, l.others, l.steal, l.busy = true, u.Procs, u.Others, u.Steal, u.Busy
	}
	return l, nil
}

// loadAvg is the machine's 1-minute load average ("?" when unknown).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	var first string
	if _, err := fmt.Sscan(string(b), &first); err != nil {
		return "?"
	}
	return first
}
