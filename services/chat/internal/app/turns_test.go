package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/turnsig"
)

// turnStream connects to the test Redis and returns the turns stream of
// the test's chat (REDIS_PREFIX of startChatEnv), emptied.
func turnStream(t *testing.T) (*redis.Client, string) {
	t.Helper()
	ctx := context.Background()
	rdb, err := redisx.Connect(ctx, testRedisURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	stream := "test:" + t.Name() + ":turns"
	rdb.Del(ctx, stream)
	t.Cleanup(func() { rdb.Del(context.Background(), stream) })
	return rdb, stream
}

// waitEntries polls the stream until it holds n entries (failing after
// 20 s) and returns their values, oldest first.
func waitEntries(t *testing.T, rdb *redis.Client, stream string, n int) []map[string]any {
	t.Helper()
	ctx := context.Background()
	var entries []map[string]any
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		msgs, err := rdb.XRange(ctx, stream, "-", "+").Result()
		if err != nil && !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			t.Fatal(err)
		}
		entries = entries[:0]
		for _, m := range msgs {
			entries = append(entries, m.Values)
		}
		if len(entries) >= n || time.Now().After(deadline) {
			break
		}
	}
	if len(entries) != n {
		t.Fatalf("stream %s has %d entries, want %d: %v", stream, len(entries), n, entries)
	}
	return entries
}

// wantTools compares turn_ended's tools with want (name and outcome each;
// every finished call has a duration).
func wantTools(t *testing.T, ended map[string]any, want ...[2]string) {
	t.Helper()
	var tools []struct {
		Name       string `json:"name"`
		DurationMS *int64 `json:"duration_ms"`
		Outcome    string `json:"outcome"`
	}
	raw, _ := ended["tools"].(string)
	if err := json.Unmarshal([]byte(raw), &tools); err != nil {
		t.Fatalf("turn_ended tools %q: %v", raw, err)
	}
	if len(tools) != len(want) {
		t.Fatalf("turn_ended tools = %s, want %d calls %v", raw, len(want), want)
	}
	for i, w := range want {
		if tools[i].Name != w[0] || tools[i].Outcome != w[1] {
			t.Errorf("tool %d = %+v, want name %s outcome %s", i, tools[i], w[0], w[1])
		}
		if tools[i].DurationMS == nil || *tools[i].DurationMS < 0 {
			t.Errorf("tool %d duration_ms = %v, want >= 0", i, tools[i].DurationMS)
		}
	}
}

func TestChatTurnEvents(t *testing.T) {
	rdb, stream := turnStream(t)
	c := startFakeChat(t)
	w, conn := c.connect()
	id := conn.str("session_id")

	w.send(map[string]any{"type": "user_message", "content": "hello there"})
	w.until("result", isResult)
	// A tool call allowed, then one denied.
	for _, behavior := range []string{"allow", "deny"} {
		w.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
		req := w.until("permission_request", isType("permission_request"))
		w.send(map[string]any{"type": "permission_response", "request_id": req[len(req)-1].str("request_id"), "behavior": behavior})
		w.until("result", isResult)
	}

	entries := waitEntries(t, rdb, stream, 6)
	key := turnsig.New(internalauth.FromString(testSecret))
	for i, e := range entries {
		if !key.Verify(stream, e) {
			t.Errorf("entry %d is not signed for shadow and analytics: %v", i, e)
		}
	}
	prompts := []string{"hello there", "RUN_BASH", "RUN_BASH"}
	for i, prompt := range prompts {
		started, ended := entries[2*i], entries[2*i+1]
		number := string(rune('1' + i))
		turnID, _ := started["turn_id"].(string)
		if !strings.HasPrefix(turnID, id+":") || ended["turn_id"] != turnID {
			t.Errorf("turn %s: turn_id started %v ended %v, want %s:<line>", number, turnID, ended["turn_id"], id)
		}
		for k, want := range map[string]string{
			"event": "turn_started", "session_id": id, "prompt": prompt,
			"cwd": conn.str("cwd"), "provider": "agent-sdk", "turn_number": number,
		} {
			if started[k] != want {
				t.Errorf("turn %s: turn_started %s = %v, want %q (%v)", number, k, started[k], want, started)
			}
		}
		if started["model"] == nil || started["started_at"] == "" {
			t.Errorf("turn_started lacks model or started_at: %v", started)
		}
		for k, want := range map[string]string{
			"event": "turn_ended", "session_id": id, "prompt": prompt,
			"cwd": conn.str("cwd"), "provider": "agent-sdk", "turn_number": number,
		} {
			if ended[k] != want {
				t.Errorf("turn %s: turn_ended %s = %v, want %q (%v)", number, k, ended[k], want, ended)
			}
		}
		for _, k := range []string{
			"model", "cost_usd", "input_tokens", "output_tokens", "cache_read_tokens",
			"cache_creation_tokens", "duration_ms", "stop_reason", "ended_at", "tools",
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
	if e := entries[1]; e["is_error"] != "false" || e["tool_calls"] != "0" || e["tools"] != "[]" {
		t.Errorf("turn 1 ended is_error %v tool_calls %v tools %v, want false, 0, []", e["is_error"], e["tool_calls"], e["tools"])
	}
	if e := entries[3]; e["tool_calls"] != "1" {
		t.Errorf("turn 2 tool_calls = %v, want 1", e["tool_calls"])
	}
	wantTools(t, entries[3], [2]string{"Bash", "ok"})
	if e := entries[5]; e["tool_calls"] != "1" {
		t.Errorf("turn 3 tool_calls = %v, want 1", e["tool_calls"])
	}
	wantTools(t, entries[5], [2]string{"Bash", "denied"})
}

// TestChatTurnEventsRetry: while XADD fails (the stream's key holds a
// string), the turn's events wait and are retried; once the key is
// usable again both arrive, in order, once each.
func TestChatTurnEventsRetry(t *testing.T) {
	rdb, stream := turnStream(t)
	ctx := context.Background()
	if err := rdb.Set(ctx, stream, "not a stream", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c := startFakeChat(t)
	w, conn := c.connect()
	w.send(map[string]any{"type": "user_message", "content": "hello there"})
	w.until("result", isResult)
	if typ := rdb.Type(ctx, stream).Val(); typ != "string" {
		t.Fatalf("key %s is a %s during the outage, want the string still", stream, typ)
	}
	if err := rdb.Del(ctx, stream).Err(); err != nil {
		t.Fatal(err)
	}
	entries := waitEntries(t, rdb, stream, 2)
	if entries[0]["event"] != "turn_started" || entries[1]["event"] != "turn_ended" {
		t.Errorf("events %v, %v, want turn_started then turn_ended", entries[0]["event"], entries[1]["event"])
	}
	for _, e := range entries {
		if e["session_id"] != conn.str("session_id") || e["turn_number"] != "1" {
			t.Errorf("event %v: want session %s, turn_number 1", e, conn.str("session_id"))
		}
	}
	// No duplicate comes later: events are written in order, so the next
	// turn's come right after these two.
	w.send(map[string]any{"type": "user_message", "content": "hello again"})
	w.until("result", isResult)
	entries = waitEntries(t, rdb, stream, 4)
	if entries[2]["event"] != "turn_started" || entries[2]["turn_number"] != "2" || entries[3]["event"] != "turn_ended" {
		t.Errorf("events after the outage: %v, %v; want turn 2's start and end", entries[2], entries[3])
	}
}
