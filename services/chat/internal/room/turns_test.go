package room

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// TestTurnEventsCloseWhileRedisDown: with Redis unreachable, the queued
// events share one retry budget (it runs from when each was queued), so
// Close, which waits for the queue, returns promptly instead of spending
// the whole budget on every event.
func TestTurnEventsCloseWhileRedisDown(t *testing.T) {
	old := turnRetryDelay
	turnRetryDelay = 2 * time.Millisecond // one event's budget: 2+4+…+128 ms ≈ 0.25 s
	t.Cleanup(func() { turnRetryDelay = old })
	rdb := redis.NewClient(&redis.Options{
		Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond, DialerRetries: 1, DialerRetryTimeout: time.Millisecond,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	m := NewManager(Config{Redis: rdb, TurnStream: "test:turns"})
	const events = 40 // ≈ 10 s if each had the whole budget
	for i := range events {
		m.publishTurn(map[string]any{"event": "turn_started", "turn_id": fmt.Sprintf("s:%d", i)})
	}
	start := time.Now()
	m.Close()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v with Redis down, want the queue given up quickly", d)
	}
	m.turnPub.mu.Lock()
	defer m.turnPub.mu.Unlock()
	if len(m.turnPub.queue) != 0 || m.turnPub.running || !m.turnPub.down {
		t.Errorf("after Close: queue %d, running %v, down %v; want empty, stopped, down", len(m.turnPub.queue), m.turnPub.running, m.turnPub.down)
	}
}

// TestTurnTools: tool calls are matched to their results by id, in
// tool_use order; denials come from system/permission_denied or the
// result's permission_denials; a call with no result is an error with no
// duration; a result for an unknown id is ignored.
func TestTurnTools(t *testing.T) {
	r := &Room{m: &Manager{}, id: "s"}
	r.turns = []*prompt{{id: "s:1"}}
	msg := func(typ, subtype string, v any) agent.Message {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return agent.Message{Type: typ, Subtype: subtype, Raw: raw}
	}
	blocks := func(b ...map[string]any) map[string]any {
		return map[string]any{"message": map[string]any{"content": b}}
	}
	r.trackTools(msg(agent.TypeAssistant, "", blocks(
		map[string]any{"type": "text", "text": "let me look"},
		map[string]any{"type": "tool_use", "id": "a", "name": "Bash"},
		map[string]any{"type": "tool_use", "id": "b", "name": "Read"},
	)))
	r.trackTools(msg(agent.TypeAssistant, "", blocks(
		map[string]any{"type": "tool_use", "id": "c", "name": "Edit"},
		map[string]any{"type": "tool_use", "id": "d", "name": "Write"},
		map[string]any{"type": "tool_use", "id": "e", "name": "Grep"},
	)))
	// Results out of order; one for an id never used.
	r.trackTools(msg(agent.TypeUser, "", blocks(
		map[string]any{"type": "tool_result", "tool_use_id": "b", "is_error": true},
		map[string]any{"type": "tool_result", "tool_use_id": "a"},
		map[string]any{"type": "tool_result", "tool_use_id": "zz"},
		map[string]any{"type": "tool_result", "tool_use_id": "c", "is_error": true},
		map[string]any{"type": "tool_result", "tool_use_id": "d", "is_error": true},
	)))
	r.trackTools(msg(agent.TypeSystem, "permission_denied", map[string]any{"tool_use_id": "c"}))
	r.trackTools(msg(agent.TypeResult, "success", map[string]any{"permission_denials": []map[string]any{{"tool_use_id": "d", "tool_name": "Write"}}}))

	var got []string
	for _, tt := range r.turns[0].toolList() {
		got = append(got, fmt.Sprintf("%s %s %v", tt.Name, tt.Outcome, tt.DurationMS != nil))
	}
	want := []string{"Bash ok true", "Read error true", "Edit denied true", "Write denied true", "Grep error false"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tools\n got %v\nwant %v", got, want)
	}
}

// logBuffer collects a Manager's log for a test to wait on.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *logBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.b.String(), s)
}

// waitUntil polls cond, failing the test after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestTurnEventsOutage: during an outage shorter than the retry budget the
// events queued behind the retried one all arrive, in order; after an
// outage longer than it, the events that waited it out are given up, and
// the next event is written once Redis is back.
func TestTurnEventsOutage(t *testing.T) {
	old := turnRetryDelay
	turnRetryDelay = 10 * time.Millisecond // budget ≈ 1.3 s
	t.Cleanup(func() { turnRetryDelay = old })
	url := os.Getenv("TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	stream := fmt.Sprintf("test:%s:%d:turns", t.Name(), time.Now().UnixNano())
	t.Cleanup(func() { rdb.Del(context.Background(), stream) })
	outage := func() { // XADD fails (WRONGTYPE) while the key holds a string
		if err := rdb.Set(ctx, stream, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var logs logBuffer
	m := NewManager(Config{Redis: rdb, TurnStream: stream, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(m.Close)
	ids := func() []string {
		msgs, _ := rdb.XRange(ctx, stream, "-", "+").Result()
		var out []string
		for _, msg := range msgs {
			out = append(out, fmt.Sprint(msg.Values["turn_id"]))
		}
		return out
	}
	event := func(id string) map[string]any { return map[string]any{"event": "turn_started", "turn_id": id} }

	// Short outage: ends once the first retry is logged.
	outage()
	for _, id := range []string{"a", "b", "c"} {
		m.publishTurn(event(id))
	}
	waitUntil(t, "a retry", func() bool { return logs.count("add turn event, retrying") > 0 })
	if err := rdb.Del(ctx, stream).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the three events", func() bool { return len(ids()) == 3 })
	if got := fmt.Sprint(ids()); got != "[a b c]" {
		t.Errorf("after a short outage: %s, want [a b c]", got)
	}

	// Long outage: d is given up after its budget, e (queued with it) at
	// once; f, published after, is written when Redis is back.
	if err := rdb.Del(ctx, stream).Err(); err != nil {
		t.Fatal(err)
	}
	outage()
	m.publishTurn(event("d"))
	m.publishTurn(event("e"))
	waitUntil(t, "d and e given up", func() bool {
		return logs.count("level=ERROR msg=\"add turn event\"") == 1 && logs.count("Redis down past its retry time") == 1
	})
	m.publishTurn(event("f"))
	waitUntil(t, "a retry of f", func() bool { return logs.count("turn_id=f") > 0 })
	if err := rdb.Del(ctx, stream).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "f", func() bool { return len(ids()) == 1 })
	if got := fmt.Sprint(ids()); got != "[f]" {
		t.Errorf("after a long outage: %s, want [f]", got)
	}
}
