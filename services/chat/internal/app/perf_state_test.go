package app

import (
	"net/http"
	"testing"
)

func isAssistant(f frame) bool {
	return f.str("type") == "agent_message" && f.dataType() == "assistant"
}

// session reads GET /api/session/{id} on c.
func (c *chat) session(id string) answer {
	c.t.Helper()
	got := c.do(http.MethodGet, "/api/session/"+id, "")
	got.want(c.t, http.StatusOK, "")
	return got
}

// On an instance that does not own the session, connected and GET
// /api/session/{id} report the owner's live state: running during the
// turn, not running once its result has come.
func TestChatMultiLiveStateFromOwner(t *testing.T) {
	a, b := startPair(t, "FAKECLAUDE_DELAY=300ms")
	wa, conn := a.connect()
	id := conn.str("session_id")
	if got := b.session(id); got.body["agent_running"] != false || got.body["is_compacting"] != false {
		t.Fatalf("on B before any turn: agent_running %v, is_compacting %v, want false", got.body["agent_running"], got.body["is_compacting"])
	}
	wa.send(map[string]any{"type": "user_message", "content": "SLOW 10"})
	wa.until("an assistant message", isAssistant) // A owns the session; the turn runs

	wb, bconn := b.join(id, -1)
	if bconn["agent_running"] != true || bconn["is_compacting"] != false {
		t.Errorf("connected on B mid-turn: agent_running %v, is_compacting %v, want true, false", bconn["agent_running"], bconn["is_compacting"])
	}
	if got := b.session(id); got.body["agent_running"] != true {
		t.Errorf("GET on B mid-turn: agent_running %v, want true", got.body["agent_running"])
	}
	if got := a.session(id); got.body["agent_running"] != true {
		t.Errorf("GET on A (the owner) mid-turn: agent_running %v, want true", got.body["agent_running"])
	}

	// Upon the result, on either instance, the turn is over and counted.
	wa.until("result", isResult)
	wb.until("result", isResult)
	for name, c := range map[string]*chat{"A": a, "B": b} {
		got := c.session(id)
		if got.body["agent_running"] != false || got.body["turns"] != float64(1) {
			t.Errorf("GET on %s upon the result: agent_running %v, turns %v, want false, 1", name, got.body["agent_running"], got.body["turns"])
		}
	}
	if _, again := b.join(id, -1); again["agent_running"] != false {
		t.Errorf("connected on B after the turn: agent_running %v, want false", again["agent_running"])
	}
}

// The turn count and cost are stored before the result frame goes out: a
// client reading the session as soon as it gets the result sees the turn.
func TestChatTurnRecordedByResult(t *testing.T) {
	c := startFakeChat(t)
	w, conn := c.connect()
	id := conn.str("session_id")
	lastCost := 0.0
	for turn := 1; turn <= 3; turn++ {
		w.send(map[string]any{"type": "user_message", "content": "hello"})
		w.until("result", isResult)
		got := c.session(id)
		cost, _ := got.body["cost_usd"].(float64)
		if got.body["turns"] != float64(turn) || cost <= lastCost || got.body["agent_running"] != false {
			t.Fatalf("upon result %d: turns %v, cost_usd %v (before %v), agent_running %v; want %d, more, false",
				turn, got.body["turns"], got.body["cost_usd"], lastCost, got.body["agent_running"], turn)
		}
		lastCost = cost
	}
}
