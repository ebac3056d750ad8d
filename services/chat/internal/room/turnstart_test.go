package room

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// scriptedProvider is a provider whose events the test pushes; the
// methods a turn start does not use are left to the embedded nil
// interface (calling one panics, failing the test).
type scriptedProvider struct {
	agent.Provider
	events *agent.Stream
	mu     sync.Mutex
	sent   []string
}

func (p *scriptedProvider) Name() string          { return "agent-sdk" }
func (p *scriptedProvider) Events() *agent.Stream { return p.events }
func (p *scriptedProvider) Close() error          { p.events.Close(); return nil }

func (p *scriptedProvider) Send(_ context.Context, t agent.Turn) error {
	p.mu.Lock()
	p.sent = append(p.sent, t.Text)
	p.mu.Unlock()
	return nil
}

// frameSink collects the frames sent to it.
type frameSink struct {
	mu     sync.Mutex
	frames []Frame
}

func (s *frameSink) Send(f Frame) {
	s.mu.Lock()
	s.frames = append(s.frames, f)
	s.mu.Unlock()
}

// TestTurnStartState: the first prompt's append locks the session's
// provider (it is locked once UserMessage returns, before any turn ends),
// and turn_number comes from the count the room keeps (read with the
// session, then taken from each recorded turn), not from a read of the
// session at each turn start.
func TestTurnStartState(t *testing.T) {
	st := mustStore(t)
	ctx := context.Background()
	sess, err := st.Create(ctx, store.NewSession{Cwd: "/tmp", Provider: "agent-sdk"})
	if err != nil {
		t.Fatal(err)
	}
	fp := &scriptedProvider{events: agent.NewStream()}
	m := NewManager(Config{Store: st, NewProvider: func(agent.Options) agent.Provider { return fp }})
	t.Cleanup(m.Close)
	r := m.room(sess.ID)
	sink := &frameSink{}

	// waitTurn waits for the running turn and returns its number.
	waitTurn := func() int {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			r.mu.Lock()
			n, ok := 0, len(r.turns) == 1
			if ok {
				n = r.turns[0].number
			}
			r.mu.Unlock()
			if ok {
				return n
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatal("no turn started")
		return 0
	}
	// endTurn pushes the turn's result and waits for it to be recorded.
	endTurn := func(turns int) {
		t.Helper()
		fp.events.Push(agent.Message{Type: agent.TypeResult, Subtype: "success", Raw: json.RawMessage(`{"type":"result","subtype":"success"}`)})
		fp.events.Push(agent.TurnEnded{Subtype: "success"})
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			r.mu.Lock()
			done := len(r.turns) == 0 && r.turnCountKnown && r.turnCount == turns
			r.mu.Unlock()
			if done {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("turn %d not recorded", turns)
	}

	r.UserMessage(ctx, sink, "first", nil)
	got, err := st.Get(ctx, sess.ID)
	if err != nil || !got.ProviderLocked || got.Turns != 0 {
		t.Fatalf("after the first prompt: provider_locked %v, turns %d (%v); want locked before any turn ends", got.ProviderLocked, got.Turns, err)
	}
	fp.events.Push(agent.TurnStarted{})
	if n := waitTurn(); n != 1 {
		t.Errorf("first turn_number %d, want 1", n)
	}
	endTurn(1)

	// The stored count moves behind the room's back: the next number
	// still follows the room's own count, so it was not read again.
	if _, err := st.RecordTurn(ctx, sess.ID, 0); err != nil {
		t.Fatal(err)
	}
	r.UserMessage(ctx, sink, "second", nil)
	fp.events.Push(agent.TurnStarted{})
	if n := waitTurn(); n != 2 {
		t.Errorf("second turn_number %d, want 2 (the room's count plus one)", n)
	}
	endTurn(3) // the recorded turn brings the stored count back in

	fp.mu.Lock()
	defer fp.mu.Unlock()
	if len(fp.sent) != 2 || fp.sent[0] != "first" || fp.sent[1] != "second" {
		t.Errorf("prompts sent to the agent: %q, want first, second", fp.sent)
	}
}
