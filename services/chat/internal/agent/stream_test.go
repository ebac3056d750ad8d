package agent

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestStreamOrderAndClose(t *testing.T) {
	s := NewStream()
	ctx := context.Background()
	for i := range 3 {
		if !s.Push(Stderr{Line: string(rune('a' + i))}) {
			t.Fatal("push on an open stream failed")
		}
	}
	s.Close()
	if s.Push(Stderr{Line: "late"}) {
		t.Error("push after close succeeded")
	}
	for _, want := range []string{"a", "b", "c"} {
		e, err := s.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.(Stderr).Line; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if _, err := s.Next(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("after drain: %v, want EOF", err)
	}
	s.Close() // twice is fine
}

func TestStreamNextWaits(t *testing.T) {
	s := NewStream()
	got := make(chan Event)
	go func() {
		e, _ := s.Next(context.Background())
		got <- e
	}()
	s.Push(RawOutput{Line: "x"})
	if e := <-got; e != (RawOutput{Line: "x"}) {
		t.Errorf("got %v", e)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestStreamPushNeverBlocks: a producer goes on while nobody reads.
func TestStreamPushNeverBlocks(t *testing.T) {
	s := NewStream()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100000 {
			s.Push(TurnStarted{})
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("push blocked")
	}
	if s.Len() != 100000 {
		t.Errorf("len %d", s.Len())
	}
}

// TestStreamConcurrentConsumers: every event reaches exactly one consumer
// and all of them see the end.
func TestStreamConcurrentConsumers(t *testing.T) {
	s := NewStream()
	const n = 5000
	var mu sync.Mutex
	seen := 0
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, err := s.Next(context.Background()); err != nil {
					return
				}
				mu.Lock()
				seen++
				mu.Unlock()
			}
		}()
	}
	for range n {
		s.Push(TurnStarted{})
	}
	s.Close()
	wg.Wait()
	if seen != n {
		t.Errorf("consumed %d, want %d", seen, n)
	}
}

func TestMissingExecutableError(t *testing.T) {
	err := error(&MissingExecutableError{Provider: "agent-sdk", Program: "claude", PathName: "claude", Err: errors.New("not found")})
	want := `agent-sdk: cannot run "claude" (not found); set its path with PUT /api/app/provider-path/claude`
	if err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	var missing *MissingExecutableError
	if !errors.As(err, &missing) || missing.Program != "claude" {
		t.Error("errors.As failed")
	}
}
