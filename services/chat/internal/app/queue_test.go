package app

import (
	"context"
	"strings"
	"testing"
)

// storedPrompt is the content of a message_stored frame.
func storedPrompt(f frame) string {
	m, _ := f["message"].(map[string]any)
	s, _ := m["content"].(string)
	return s
}

// queueItems returns the contents of a queue frame's items.
func queueItems(f frame) []string {
	items, _ := f["items"].([]any)
	out := []string{}
	for _, it := range items {
		m, _ := it.(map[string]any)
		s, _ := m["content"].(string)
		out = append(out, s)
	}
	return out
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// queueIs matches a queue frame holding exactly contents.
func queueIs(contents ...string) func(frame) bool {
	return func(f frame) bool { return f.str("type") == "queue" && sameStrings(queueItems(f), contents) }
}

// queued sends a prompt that must be queued and returns its queue id.
func queued(t *testing.T, w *wsClient, content string) string {
	t.Helper()
	w.send(map[string]any{"type": "user_message", "content": content})
	got := w.until("user_message_queued", func(f frame) bool {
		if f.str("type") == "message_stored" && storedPrompt(f) == content {
			t.Fatalf("%q was stored while a turn ran: %v", content, f)
		}
		return f.str("type") == "user_message_queued"
	})
	id := got[len(got)-1].str("queue_id")
	if id == "" {
		t.Fatalf("user_message_queued without queue_id: %v", got[len(got)-1])
	}
	return id
}

// startSlowTurn sends a SLOW prompt and waits until it streams.
func startSlowTurn(t *testing.T, w *wsClient, prompt string) {
	t.Helper()
	w.send(map[string]any{"type": "user_message", "content": prompt})
	w.until("the turn's first agent message", func(f frame) bool {
		return f.str("type") == "agent_message" && f.dataType() == "assistant"
	})
}

// promptsStored reads frames until the result of the turn of the last of
// want and returns the prompts stored meanwhile, in order, checking that
// each came after the previous turn's result (running: a turn runs, whose
// result comes first).
func promptsStored(t *testing.T, w *wsClient, running bool, want ...string) []string {
	t.Helper()
	offset := 0
	if running {
		offset = 1
	}
	var got []string
	results := 0
	for len(got) < len(want) || results < len(want)+offset {
		f := w.next()
		switch {
		case f.str("type") == "message_stored":
			if results < len(got)+offset {
				t.Fatalf("prompt %q stored before the previous turn's result", storedPrompt(f))
			}
			got = append(got, storedPrompt(f))
		case isResult(f):
			results++
		}
	}
	return got
}

// TestQueueDuringSlowTurn: prompts sent while a SLOW turn runs are queued
// in order (every socket sees the queue), never sent into the running
// turn, then stored and sent one per turn.
func TestQueueDuringSlowTurn(t *testing.T) {
	c := startFakeChat(t, "FAKECLAUDE_DELAY=50ms")
	a, conn := c.connect()
	id := conn.str("session_id")
	b, _ := c.join(id, -1)
	startSlowTurn(t, a, "SLOW 20")
	queued(t, a, "second")
	queued(t, a, "third")
	for name, w := range map[string]*wsClient{"A": a, "B": b} {
		w.until(name+": the queue of two", queueIs("second", "third"))
	}
	// Both are in PostgreSQL, in order.
	q, err := c.store.Queue(context.Background(), id)
	if err != nil || len(q) != 2 || q[0].Content != "second" || q[1].Content != "third" {
		t.Fatalf("stored queue %+v (%v)", q, err)
	}
	// A new socket finds the queue in connected.
	_, conn2 := c.join(id, -1)
	if items, _ := conn2["queue"].([]any); len(items) != 2 {
		t.Errorf("connected.queue = %v, want two items", conn2["queue"])
	}

	got := promptsStored(t, b, true, "second", "third")
	if !sameStrings(got, []string{"second", "third"}) {
		t.Fatalf("prompts stored after the SLOW turn: %v, want second then third", got)
	}
	if q, _ := c.store.Queue(context.Background(), id); len(q) != 0 {
		t.Errorf("queue after both went: %+v", q)
	}
	c.waitSession(id, func(a answer) bool { return a.body["turns"] == float64(3) })
}

// TestQueueCancel: a queued prompt is cancelled before it is sent and
// never reaches the log; cancelling it again, or an unknown or missing
// id, is an error that changes nothing.
func TestQueueCancel(t *testing.T) {
	c := startFakeChat(t, "FAKECLAUDE_DELAY=50ms")
	a, conn := c.connect()
	id := conn.str("session_id")
	startSlowTurn(t, a, "SLOW 20")
	x := queued(t, a, "drop me")
	queued(t, a, "keep me")
	a.send(map[string]any{"type": "cancel_queued", "queue_id": x})
	a.until("the queue without the cancelled prompt", queueIs("keep me"))
	for _, msg := range []map[string]any{
		{"type": "cancel_queued", "queue_id": x},
		{"type": "cancel_queued", "queue_id": "NOPE"},
		{"type": "cancel_queued"},
		{"type": "send_now", "queue_id": x},
		{"type": "send_now"},
	} {
		a.send(msg)
		a.until("an error", func(f frame) bool {
			if f.str("type") == "queue" {
				t.Fatalf("%v changed the queue: %v", msg, f)
			}
			return f.str("type") == "error"
		})
	}
	got := promptsStored(t, a, true, "keep me")
	if !sameStrings(got, []string{"keep me"}) {
		t.Fatalf("stored %v, want only the kept prompt", got)
	}
	msgs, err := c.store.Messages(context.Background(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Kind == "user_prompt" && strings.Contains(string(m.Payload), "drop me") {
			t.Errorf("the cancelled prompt is in the log at line %d", m.Line)
		}
	}
}

// TestQueueSendNow: send_now stops the running turn and its prompt goes
// first, before the prompts queued earlier.
func TestQueueSendNow(t *testing.T) {
	c := startFakeChat(t, "FAKECLAUDE_DELAY=100ms")
	a, _ := c.connect()
	startSlowTurn(t, a, "SLOW 200")
	queued(t, a, "first queued")
	urgent := queued(t, a, "urgent")
	a.send(map[string]any{"type": "send_now", "queue_id": urgent})
	a.until("the queue with urgent first", queueIs("urgent", "first queued"))
	a.until("stopped", isType("stopped"))
	got := promptsStored(t, a, true, "urgent", "first queued")
	if !sameStrings(got, []string{"urgent", "first queued"}) {
		t.Fatalf("stored %v, want urgent, then first queued", got)
	}
}

// TestQueueAcrossInstances: a prompt sent on another instance while the
// owner runs a turn is queued by the owner, and sent by it at the turn's
// end; both instances' sockets see the queue.
func TestQueueAcrossInstances(t *testing.T) {
	a, b := startPair(t, "FAKECLAUDE_DELAY=50ms")
	wa, conn := a.connect()
	id := conn.str("session_id")
	wb, _ := b.join(id, -1)
	startSlowTurn(t, wa, "SLOW 20")
	queued(t, wb, "from B")
	wa.until("A sees the queue", queueIs("from B"))
	for name, w := range map[string]*wsClient{"A": wa, "B": wb} {
		if got := promptsStored(t, w, true, "from B"); !sameStrings(got, []string{"from B"}) {
			t.Errorf("%s: stored %v", name, got)
		}
	}
}

// TestQueueSurvivesRestart: a prompt queued when chat stops is still
// queued when it comes back, and is sent once a socket joins.
func TestQueueSurvivesRestart(t *testing.T) {
	c := startFakeChat(t, "FAKECLAUDE_DELAY=100ms")
	a, conn := c.connect()
	id := conn.str("session_id")
	startSlowTurn(t, a, "SLOW 100")
	queued(t, a, "after the restart")
	c.stop()

	c2 := startInstance(t, c.dbURL, nil, notFound, []string{"FAKECLAUDE_DELAY=10ms"}, nil)
	w, conn2 := c2.join(id, -1)
	items, _ := conn2["queue"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["content"] != "after the restart" {
		t.Fatalf("connected.queue after a restart = %v", conn2["queue"])
	}
	got := promptsStored(t, w, false, "after the restart")
	if !sameStrings(got, []string{"after the restart"}) {
		t.Fatalf("stored %v", got)
	}
}

// TestQueueCodex: the queue works the same with the app-server provider.
func TestQueueCodex(t *testing.T) {
	c := startCodexChat(t)
	w, _ := c.connectCodex()
	w.send(map[string]any{"type": "user_message", "content": "SLOW 20"})
	w.until("the turn running", func(f frame) bool { return f.str("type") == "agent_message" })
	queued(t, w, "codex next")
	w.until("the queue", queueIs("codex next"))
	got := promptsStored(t, w, true, "codex next")
	if !sameStrings(got, []string{"codex next"}) {
		t.Fatalf("stored %v", got)
	}
}
