package room

import (
	"sync/atomic"
	"testing"
)

// TestBgGroupGoDuringWait: Go called while Wait runs (as at shutdown, when
// a failing turn still stores a notice) neither races Wait (the race
// detector checks it) nor loses or strands a function: each has run once
// Go and Wait have both returned.
func TestBgGroupGoDuringWait(t *testing.T) {
	for range 50 {
		var g bgGroup
		var ran atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 200 {
				g.Go(func() { ran.Add(1) })
			}
		}()
		g.Wait()
		<-done
		if n := ran.Load(); n != 200 {
			t.Fatalf("%d of 200 functions ran", n)
		}
	}
}
