package store_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// An open turn is closed once: by its instance at its end, or by one
// instance that took its instance for dead, never both, whoever races.
func TestOpenTurnClosedOnce(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	sess := mustCreate(t, s, store.NewSession{})
	mustAppend(t, s, sess.ID, store.KindUserPrompt, `{"role":"user","content":"go"}`)
	turn := store.OpenTurn{
		TurnID: sess.ID + ":1", SessionID: sess.ID, PromptLine: 1, Instance: "dead", Host: "h", PID: 1, PIDStart: 2,
		StartedAt: time.Now(), Started: json.RawMessage(`{"prompt":"go"}`),
	}
	if err := s.OpenTurn(ctx, turn); err != nil {
		t.Fatal(err)
	}
	if err := s.OpenTurn(ctx, turn); err != nil { // again: nothing changes
		t.Fatal(err)
	}
	if got, err := s.OpenTurns(ctx, "dead"); err != nil || len(got) != 0 {
		t.Fatalf("OpenTurns of the other instances = %v, %v; want none", got, err)
	}
	got, err := s.OpenTurns(ctx, "alive")
	if err != nil || len(got) != 1 || got[0].TurnID != turn.TurnID || string(got[0].Started) != `{"prompt": "go"}` {
		t.Fatalf("OpenTurns = %+v, %v", got, err)
	}

	notice := json.RawMessage(`{"role":"notice","level":"error","content":"turn interrupted: the server restarted","prompt_line":1}`)
	var wg sync.WaitGroup
	oks := make([]bool, 8)
	for i := range oks {
		wg.Go(func() {
			if i == 0 {
				ok, err := s.CloseTurn(ctx, turn.TurnID, turn.Instance)
				if err != nil {
					t.Error(err)
				}
				oks[i] = ok
				return
			}
			_, ok, err := s.InterruptTurn(ctx, got[0], notice)
			if err != nil {
				t.Error(err)
			}
			oks[i] = ok
		})
	}
	wg.Wait()
	n := 0
	for _, ok := range oks {
		if ok {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the turn was closed %d times (%v), want once", n, oks)
	}
	msgs, err := s.Messages(ctx, sess.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + map[bool]int{true: 0, false: 1}[oks[0]]; len(msgs) != want {
		t.Errorf("log has %d lines, want %d (the notice only when the turn was interrupted)", len(msgs), want)
	}
	if ok, err := s.CloseTurn(ctx, turn.TurnID, turn.Instance); ok || err != nil {
		t.Errorf("CloseTurn of a closed turn = %v, %v", ok, err)
	}
}
