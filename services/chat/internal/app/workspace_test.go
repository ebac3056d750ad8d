package app

import (
	"net/http"
	"testing"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
)

// TestWorkspaceTwoInstances checks that the workspace routes keep their
// state in PostgreSQL only: what one chat instance changes, the other
// answers at once.
func TestWorkspaceTwoInstances(t *testing.T) {
	db := pgmigratetest.MustSchema(t)
	a := startInstance(t, db, nil, notOnPath, nil, nil)
	b := startInstance(t, db, nil, notOnPath, nil, nil)
	dir := t.TempDir()
	id := a.mustSession(dir)

	t.Run("drafts", func(t *testing.T) {
		d := a.do(http.MethodPost, "/api/drafts", `{"text":"hello\nworld","session_id":`+quote(id)+`}`)
		d.want(t, http.StatusCreated, "")
		b.do(http.MethodPut, "/api/drafts/"+d.str("draft_id"), `{"text":"changed on b"}`).want(t, http.StatusOK, "")
		got := a.do(http.MethodGet, "/api/drafts", "")
		drafts, _ := got.body["drafts"].([]any)
		if len(drafts) != 1 || drafts[0].(map[string]any)["title"] != "changed on b" {
			t.Errorf("a's drafts after b's change: %s", got.raw)
		}
		b.do(http.MethodDelete, "/api/drafts/NOPE", "").want(t, http.StatusNotFound, "not_found")
	})

	t.Run("stash", func(t *testing.T) {
		item := a.do(http.MethodPost, "/api/session/"+id+"/stash", `{"text":"later"}`)
		item.want(t, http.StatusCreated, "")
		b.do(http.MethodPatch, "/api/session/"+id+"/stash/"+item.str("item_id"), `{"sent":true}`).want(t, http.StatusOK, "")
		got := a.do(http.MethodGet, "/api/session/"+id+"/stash?sent=true", "")
		if items, _ := got.body["items"].([]any); len(items) != 1 {
			t.Errorf("a's sent items after b marked one: %s", got.raw)
		}
		b.do(http.MethodGet, "/api/session/NOPE/stash", "").want(t, http.StatusNotFound, "not_found")
	})

	t.Run("favorites", func(t *testing.T) {
		b.do(http.MethodPut, "/api/favorites/sessions/"+id, `{"note":"from b"}`).want(t, http.StatusOK, "")
		got := a.do(http.MethodGet, "/api/favorites", "")
		if s, _ := got.body["sessions"].([]any); len(s) != 1 || s[0].(map[string]any)["note"] != "from b" {
			t.Errorf("a's favorites: %s", got.raw)
		}
	})

	t.Run("config and tabs", func(t *testing.T) {
		a.do(http.MethodPut, "/api/app/config", `{"shadow_db.sql_timeout_s":12}`).want(t, http.StatusOK, "")
		got := b.do(http.MethodGet, "/api/app/config", "")
		if cfg, _ := got.body["config"].(map[string]any); cfg["shadow_db.sql_timeout_s"] != 12.0 {
			t.Errorf("b's config after a's change: %s", got.raw)
		}
		b.do(http.MethodPut, "/api/app/config", `{"nope":1}`).want(t, http.StatusBadRequest, "bad_request")
		b.do(http.MethodPost, "/api/app/tabs", `{"tabs":[{"id":"t","kind":"chat","session_id":`+quote(id)+`}],"active":"t"}`).
			want(t, http.StatusOK, "")
		if got := a.do(http.MethodGet, "/api/app/tabs", ""); got.str("active") != "t" {
			t.Errorf("a's tabs: %s", got.raw)
		}
		if got := a.do(http.MethodGet, "/api/app/presets", ""); got.str("default") != "chat" {
			t.Errorf("presets: %s", got.raw)
		}
	})

	t.Run("welcome", func(t *testing.T) {
		got := b.do(http.MethodGet, "/api/welcome/sessions", "")
		if s, _ := got.body["sessions"].([]any); len(s) != 1 || s[0].(map[string]any)["is_favorite"] != true {
			t.Errorf("b's welcome sessions: %s", got.raw)
		}
		got = a.do(http.MethodGet, "/api/welcome/projects", "")
		if p, _ := got.body["projects"].([]any); len(p) != 1 || p[0].(map[string]any)["cwd"] != dir {
			t.Errorf("a's projects: %s", got.raw)
		}
		b.do(http.MethodPost, "/api/welcome/search", `{"query":""}`).want(t, http.StatusBadRequest, "bad_request")
	})
}

// TestWorkspaceFavoritePromptAck checks user_message_stored's isFavorite:
// false for a new prompt, true once its text is a favorite (set through
// the route, by the promptId the acknowledgment carried).
func TestWorkspaceFavoritePromptAck(t *testing.T) {
	c := startFakeChat(t)
	w, conn := c.connect()
	id := conn.str("session_id")
	ack := func() frame {
		t.Helper()
		w.send(map[string]any{"type": "user_message", "content": "run the linters"})
		var got frame
		for _, f := range w.until("result", isResult) {
			if f.str("type") == "user_message_stored" {
				got = f
			}
		}
		if got == nil {
			t.Fatal("no user_message_stored")
		}
		return got
	}
	first := ack()
	if first["isFavorite"] != false || first.str("promptId") != id+":1" {
		t.Fatalf("first ack %v", first)
	}
	c.do(http.MethodPut, "/api/favorites/prompts/"+first.str("promptId"), `{"favorite":true}`).want(t, http.StatusOK, "")
	if second := ack(); second["isFavorite"] != true {
		t.Errorf("ack of a favorite text %v, want isFavorite true", second)
	}
	got := c.do(http.MethodGet, "/api/favorites", "")
	if p, _ := got.body["prompts"].([]any); len(p) != 1 || p[0].(map[string]any)["text"] != "run the linters" {
		t.Errorf("favorites %s", got.raw)
	}
}
