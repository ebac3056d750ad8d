package main

import (
	"testing"
)

// TestBackground: the command's item/started and first delta come in the
// turn, turn/completed follows while it runs, then its remaining deltas
// and item/completed with the whole output.
func TestBackground(t *testing.T) {
	s := start(t, "CODEX_HOME="+t.TempDir())
	s.write(map[string]any{"method": "initialize", "id": 1, "params": map[string]any{"clientInfo": map[string]any{"name": "t"}}})
	s.until("initialize", isID(float64(1)))
	s.write(map[string]any{"method": "thread/start", "id": 2, "params": map[string]any{}})
	res := s.until("thread", isID(float64(2)))
	thread := res["result"].(map[string]any)["thread"].(map[string]any)["id"].(string)
	s.write(map[string]any{"method": "turn/start", "id": 3, "params": map[string]any{"threadId": thread, "input": []any{map[string]any{"type": "text", "text": "BACKGROUND 2"}}}})
	started := s.until("command item/started", func(m map[string]any) bool {
		p, _ := m["params"].(map[string]any)
		it, _ := p["item"].(map[string]any)
		return m["method"] == "item/started" && it["type"] == "commandExecution"
	})
	it := started["params"].(map[string]any)["item"].(map[string]any)
	if it["processId"] == nil || it["status"] != "inProgress" {
		t.Fatalf("started item %v, want a processId and inProgress", it)
	}
	id := it["id"]
	var deltas []string
	isDelta := func(m map[string]any) bool {
		p, _ := m["params"].(map[string]any)
		return m["method"] == "item/commandExecution/outputDelta" && p["itemId"] == id
	}
	d := s.until("first delta", isDelta)
	deltas = append(deltas, d["params"].(map[string]any)["delta"].(string))
	s.until("turn/completed", isMethod("turn/completed"))
	var done map[string]any
	for done == nil {
		m := s.until("delta or item/completed", func(m map[string]any) bool { return isDelta(m) || m["method"] == "item/completed" })
		p := m["params"].(map[string]any)
		if m["method"] == "item/completed" {
			done = p["item"].(map[string]any)
			continue
		}
		deltas = append(deltas, p["delta"].(string))
	}
	want := "line 0\nline 1\nline 2\n"
	got := ""
	for _, d := range deltas {
		got += d
	}
	if got != want || done["aggregatedOutput"] != want || done["status"] != "completed" || done["exitCode"] != float64(0) || done["id"] != id {
		t.Errorf("deltas %q, completed %v; want %q, completed with exit code 0", got, done, want)
	}
}
