package app

import (
	"context"
	"net/http"
	"testing"
)

func TestSessionThreads(t *testing.T) {
	c := startChat(t, notOnPath)
	ctx := context.Background()
	root := c.mustSession(t.TempDir())
	fork := c.send(http.MethodPost, "/api/session/"+root+"/fork", "", "", testSecret)
	fork.want(t, 201, "")
	forkID := fork.str("session_id")
	grandchild := c.send(http.MethodPost, "/api/session/"+forkID+"/fork", "", "", testSecret)
	grandchild.want(t, 201, "")
	grandchildID := grandchild.str("session_id")
	archived, err := c.store.Clear(ctx, forkID)
	if err != nil {
		t.Fatal(err)
	}
	unrelated := c.mustSession(t.TempDir())

	got := c.do(http.MethodGet, "/api/session/"+forkID+"/threads", "")
	got.want(t, 200, "")
	threads, _ := got.body["threads"].([]any)
	want := map[string]struct {
		relation string
		depth    float64
	}{
		root:         {"ancestor", -1},
		forkID:       {"self", 0},
		grandchildID: {"fork", 1},
		archived.ID:  {"archived", 1},
	}
	if len(threads) != len(want) {
		t.Fatalf("threads = %s, want %d entries", got.raw, len(want))
	}
	for _, th := range threads {
		m := th.(map[string]any)
		id, _ := m["session_id"].(string)
		w, ok := want[id]
		if !ok {
			t.Errorf("unexpected session %s in the family (unrelated is %s)", id, unrelated)
			continue
		}
		if m["relation"] != w.relation || m["depth"] != w.depth {
			t.Errorf("%s: relation %v depth %v, want %s %v", id, m["relation"], m["depth"], w.relation, w.depth)
		}
	}
	if got.str("session_id") != forkID {
		t.Errorf("session_id = %q", got.str("session_id"))
	}

	lone := c.do(http.MethodGet, "/api/session/"+unrelated+"/threads", "")
	lone.want(t, 200, "")
	if n := len(lone.body["threads"].([]any)); n != 1 {
		t.Errorf("a session with no family has %d threads, want itself only", n)
	}
	c.do(http.MethodGet, "/api/session/no-such-session/threads", "").want(t, 404, "not_found")
}
