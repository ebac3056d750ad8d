package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/redisx"
)

func TestChatTurnEvents(t *testing.T) {
	ctx := context.Background()
	rdb, err := redisx.Connect(ctx, testRedisURL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	stream := "test:" + t.Name() + ":turns" // REDIS_PREFIX of startChatEnv
	rdb.Del(ctx, stream)
	t.Cleanup(func() { rdb.Del(context.Background(), stream) })

	c := startFakeChat(t)
	w, conn := c.connect()
	id := conn.str("session_id")
	w.send(map[string]any{"type": "user_message", "content": "hello there"})
	w.until("result", isResult)

	var entries []map[string]any
	for deadline := time.Now().Add(5 * time.Second); len(entries) < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		msgs, err := rdb.XRange(ctx, stream, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		entries = entries[:0]
		for _, m := range msgs {
			entries = append(entries, m.Values)
		}
	}
	if len(entries) != 2 {
		t.Fatalf("stream %s has %d entries, want 2: %v", stream, len(entries), entries)
	}
	started, ended := entries[0], entries[1]
	turnID := id + ":1"
	for k, want := range map[string]string{
		"event": "turn_started", "session_id": id, "turn_id": turnID, "prompt": "hello there",
		"cwd": conn.str("cwd"), "provider": "agent-sdk",
	} {
		if started[k] != want {
			t.Errorf("turn_started %s = %v, want %q (%v)", k, started[k], want, started)
		}
	}
	if started["model"] == nil || started["started_at"] == "" {
		t.Errorf("turn_started lacks model or started_at: %v", started)
	}
	for k, want := range map[string]string{
		"event": "turn_ended", "session_id": id, "turn_id": turnID, "prompt": "hello there",
		"is_error": "false", "tool_calls": "0",
	} {
		if ended[k] != want {
			t.Errorf("turn_ended %s = %v, want %q (%v)", k, ended[k], want, ended)
		}
	}
	for _, k := range []string{
		"model", "cost_usd", "input_tokens", "output_tokens", "cache_read_tokens",
		"cache_creation_tokens", "duration_ms", "stop_reason", "ended_at",
	} {
		if _, ok := ended[k]; !ok {
			t.Errorf("turn_ended lacks %s: %v", k, ended)
		}
	}
	if s, _ := ended["output_tokens"].(string); s == "" || s == "0" || strings.HasPrefix(s, "-") {
		t.Errorf("turn_ended output_tokens = %v, want > 0", ended["output_tokens"])
	}
	if s, _ := ended["model"].(string); s == "" {
		t.Errorf("turn_ended model empty: %v", ended)
	}
}
