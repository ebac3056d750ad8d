package app

import (
	"context"
	"net/http"
	"slices"
	"strconv"
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

// TestForkAtLine: a fork with {"line": N} holds exactly the lines up to N
// and continues after N, without the parent's agent conversation; a line
// past the end, below 1 or not a number is 400 and creates nothing.
func TestForkAtLine(t *testing.T) {
	c := startFakeChat(t)
	w, conn := c.connect()
	id := conn.str("session_id")
	w.send(map[string]any{"type": "user_message", "content": "one"})
	w.until("result", isResult)
	w.send(map[string]any{"type": "user_message", "content": "two"})
	w.until("result", isResult)
	parent := c.waitSession(id, func(a answer) bool { return a.body["turns"] == float64(2) })
	last := int64(parent.body["last_line"].(float64))
	msgs, err := c.store.Messages(context.Background(), id, 0, 1000)
	if err != nil || len(msgs) < 4 {
		t.Fatalf("parent log: %d messages, %v", len(msgs), err)
	}
	// The second prompt's line: the fork keeps the first turn and that
	// prompt.
	var cut int64
	for _, m := range msgs {
		if m.Kind == "user_prompt" {
			cut = m.Line
		}
	}

	count := func() int {
		var n int
		if err := c.db.QueryRow(context.Background(), `SELECT count(*) FROM sessions`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	for _, body := range []string{
		`{"line":0}`, `{"line":-3}`, `{"line":` + strconv.FormatInt(last+1, 10) + `}`,
		`{"line":"2"}`, `{"line":1.5}`, `{"line":2,"x":1}`, `[]`,
	} {
		c.send(http.MethodPost, "/api/session/"+id+"/fork", body, "application/json", testSecret).want(t, http.StatusBadRequest, "bad_request")
	}
	c.do(http.MethodPost, "/api/session/NOPE/fork", `{"line":1}`).want(t, http.StatusNotFound, "not_found")
	if n := count(); n != before {
		t.Fatalf("refused forks created %d sessions", n-before)
	}

	fork := c.do(http.MethodPost, "/api/session/"+id+"/fork", `{"line":`+strconv.FormatInt(cut, 10)+`}`)
	fork.want(t, http.StatusCreated, "")
	fid := fork.str("session_id")
	if fork.body["last_line"] != float64(cut) || fork.body["parent_id"] != id {
		t.Errorf("fork = %s, want last_line %d and parent %s", fork.raw, cut, id)
	}
	got, err := c.store.Messages(context.Background(), fid, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, m := range msgs {
		if m.Line <= cut {
			want = append(want, m.Line)
		}
	}
	var lines []int64
	for i, m := range got {
		lines = append(lines, m.Line)
		if i < len(msgs) && string(m.Payload) != string(msgs[i].Payload) {
			t.Errorf("line %d: payload %s, want the parent's %s", m.Line, m.Payload, msgs[i].Payload)
		}
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("fork's lines %v, want %v", lines, want)
	}
	if st, err := c.store.Get(context.Background(), fid); err != nil || st.ProviderSessionID != "" {
		t.Errorf("fork at a line kept the agent conversation %q (%v), want a new one", st.ProviderSessionID, err)
	}

	// The fork runs a turn of its own; its lines continue after the cut.
	fw, _ := c.join(fid, -1)
	fw.send(map[string]any{"type": "user_message", "content": "three, in the fork"})
	res := fw.until("result", isResult)
	for _, f := range res {
		if n := f.line(); n != 0 && n <= cut {
			t.Errorf("fork's new frame at line %d, want after %d", n, cut)
		}
	}
	// A fork at the last line is a whole fork: the conversation continues.
	whole := c.do(http.MethodPost, "/api/session/"+id+"/fork", `{"line":`+strconv.FormatInt(last, 10)+`}`)
	whole.want(t, http.StatusCreated, "")
	if st, _ := c.store.Get(context.Background(), whole.str("session_id")); st.ProviderSessionID == "" {
		t.Errorf("fork at the last line lost the agent conversation")
	}
}
