package throttle

import (
	"fmt"
	"testing"
	"time"
)

func TestDelaysDoubleAfterFreeFailures(t *testing.T) {
	now := time.Unix(0, 0)
	l := New()
	l.Now = func() time.Time { return now }
	for i := range 5 {
		if d := l.Fail("a"); d != 0 {
			t.Fatalf("failure %d: delay %v, want none", i+1, d)
		}
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	for i, w := range want {
		if d := l.Fail("a"); d != w {
			t.Fatalf("failure %d: delay %v, want %v", 6+i, d, w)
		}
	}
	if ok, wait := l.Allow("a"); ok || wait != 4*time.Second {
		t.Errorf("Allow = %v %v, want blocked for 4s", ok, wait)
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Error("another client is blocked too")
	}
	now = now.Add(4 * time.Second)
	if ok, _ := l.Allow("a"); !ok {
		t.Error("still blocked after the delay")
	}
	l.Succeed("a")
	if d := l.Fail("a"); d != 0 {
		t.Errorf("after success the count did not reset: delay %v", d)
	}
}

func TestDelayCapped(t *testing.T) {
	l := New()
	var d time.Duration
	for range 100 {
		d = l.Fail("a")
	}
	if d != l.Max {
		t.Errorf("delay = %v, want cap %v", d, l.Max)
	}
}

func TestBoundedMemory(t *testing.T) {
	l := New()
	l.MaxClients = 10
	for i := range 100 {
		l.Fail(fmt.Sprint(i))
	}
	if n := len(l.clients); n > 10 {
		t.Errorf("%d clients tracked, want ≤ 10", n)
	}
}
