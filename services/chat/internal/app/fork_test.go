package app

import (
	"context"
	"net/http"
	"testing"
)

// TestChatForkContinuesAsNewSession: the first turn of a forked agent-sdk
// session resumes the parent's conversation with --fork-session, so the
// fork gets a CLI session of its own and the parent's is left as it was.
func TestChatForkContinuesAsNewSession(t *testing.T) {
	c := startFakeChat(t)
	w, conn := c.connect()
	id := conn.str("session_id")
	w.send(map[string]any{"type": "user_message", "content": "hi"})
	w.until("result", isResult)
	c.waitSession(id, func(a answer) bool { return a.body["turns"] == float64(1) })
	parent, err := c.store.Get(context.Background(), id)
	if err != nil || parent.ProviderSessionID == "" {
		t.Fatalf("parent %+v (%v): want a CLI session id", parent, err)
	}

	fork := c.do(http.MethodPost, "/api/session/"+id+"/fork", "")
	fork.want(t, http.StatusCreated, "")
	fw, _ := c.join(fork.str("session_id"), -1)
	fw.send(map[string]any{"type": "user_message", "content": "hi from the fork"})
	res := fw.until("result", isResult)
	forked, _ := resultData(res[len(res)-1])["session_id"].(string)
	if forked == "" || forked == parent.ProviderSessionID {
		t.Fatalf("fork's CLI session %q, parent's %q: want one of its own", forked, parent.ProviderSessionID)
	}
	c.waitSession(fork.str("session_id"), func(a answer) bool { return a.body["turns"] == float64(1) })
	if got, err := c.store.Get(context.Background(), fork.str("session_id")); err != nil || got.ProviderSessionID != forked {
		t.Errorf("fork stored CLI session %q (%v), want %q", got.ProviderSessionID, err, forked)
	}

	// The parent continues its own conversation.
	w.send(map[string]any{"type": "user_message", "content": "parent again"})
	res = w.until("result", isResult)
	if got := resultData(res[len(res)-1])["session_id"]; got != parent.ProviderSessionID {
		t.Errorf("parent's CLI session %v, want %s", got, parent.ProviderSessionID)
	}
}
