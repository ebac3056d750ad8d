package throttle

import (
	"fmt"
	"testing"
	"time"
)

func newAt(now *time.Time) *Limiter {
	l := New()
	l.Now = func() time.Time { return *now }
	return l
}

func fail(t *testing.T, l *Limiter, key string) {
	t.Helper()
	if r, w := l.Begin(key); r != Allowed {
		t.Fatalf("Begin(%s) refused: %v %v", key, r, w)
	}
	l.Finish(key, false)
}

func TestWaitsDoubleAfterFreeFailures(t *testing.T) {
	now := time.Unix(0, 0)
	l := newAt(&now)
	for range DefaultFree {
		fail(t, l, "a")
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	for i, w := range want {
		fail(t, l, "a")
		if r, wait := l.Begin("a"); r != Waiting || wait != w {
			t.Fatalf("after failure %d: Begin = %v %v, want waiting %v", DefaultFree+1+i, r, wait, w)
		}
		if r, _ := l.Begin("b"); r != Allowed {
			t.Fatal("another client is blocked too")
		}
		l.Finish("b", true)
		now = now.Add(w)
	}
	if r, _ := l.Begin("a"); r != Allowed {
		t.Fatal("still blocked after the wait")
	}
	l.Finish("a", true)
	if r, _ := l.Begin("a"); r != Allowed {
		t.Error("a success did not clear the record")
	}
}

func TestCountedBeforeTheCheck(t *testing.T) {
	now := time.Unix(0, 0)
	l := newAt(&now)
	if r, _ := l.Begin("a"); r != Allowed {
		t.Fatal("first attempt refused")
	}
	// While the first attempt is being checked, others are refused.
	for range 39 {
		if r, _ := l.Begin("a"); r != InFlight {
			t.Fatalf("a parallel attempt was allowed: %v", r)
		}
	}
	l.Finish("a", false)
	if got := l.clients["a"].failures; got != 1 {
		t.Errorf("failures = %d, want 1 (refused attempts are not counted)", got)
	}
}

func TestRefusedAttemptsDoNotExtendTheWait(t *testing.T) {
	now := time.Unix(0, 0)
	l := newAt(&now)
	for range DefaultFree + 1 {
		fail(t, l, "a")
	}
	for range 100 {
		now = now.Add(5 * time.Millisecond)
		_, _ = l.Begin("a")
	}
	now = now.Add(time.Second)
	if r, w := l.Begin("a"); r != Allowed {
		t.Errorf("still refused %v after hammering: %v", w, r)
	}
}

// TestWaitBounded is the documented promise: whatever happened before, the
// next attempt waits at most Max.
func TestWaitBounded(t *testing.T) {
	now := time.Unix(0, 0)
	l := newAt(&now)
	for range 1000 {
		r, w := l.Begin("a")
		if r == Allowed {
			l.Finish("a", false)
			continue
		}
		if w > DefaultMax {
			t.Fatalf("wait %v beyond the bound %v", w, DefaultMax)
		}
		now = now.Add(w)
	}
	if l.clients["a"].failures < 100 {
		t.Errorf("only %d failures checked", l.clients["a"].failures)
	}
}

func TestBoundedMemory(t *testing.T) {
	l := New()
	l.MaxClients = 10
	for i := range 100 {
		k := fmt.Sprint(i)
		if r, _ := l.Begin(k); r == Allowed {
			l.Finish(k, false)
		}
	}
	if n := len(l.clients); n > 10 {
		t.Errorf("%d clients tracked, want ≤ 10", n)
	}
}
