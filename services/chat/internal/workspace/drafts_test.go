package workspace_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/workspace"
)

func TestTitle(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"first line", "fix the bug\nin main.go", "fix the bug"},
		{"blank lines first", "\n  \r\n  refactor  \nmore", "refactor"},
		{"one line", "hello", "hello"},
		{"long", strings.Repeat("é", 150), strings.Repeat("é", 100)},
		{"blank", " \n\t", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := workspace.Title(tt.text); got != tt.want {
				t.Errorf("Title(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestDrafts(t *testing.T) {
	e := mustEnv(t)
	sid := e.mustSession("/tmp", "s")

	created := e.do(http.MethodPost, "/api/drafts",
		`{"text":"\n  Refactor the parser\nsecond line","cwd":"/srv/app/./x/..","session_id":`+quote(sid)+`}`).
		want(t, http.StatusCreated, "")
	id := created.str("draft_id")
	if len(id) != 26 || created.str("title") != "Refactor the parser" || created.str("cwd") != "/srv/app" ||
		created.str("session_id") != sid || created.str("text") != "\n  Refactor the parser\nsecond line" ||
		created.str("created_at") == "" || created.str("created_at") != created.str("updated_at") {
		t.Fatalf("created %s", created.raw)
	}
	plain := e.do(http.MethodPost, "/api/drafts", `{"text":"just text"}`).want(t, http.StatusCreated, "")
	if plain.body["cwd"] != nil || plain.body["session_id"] != nil {
		t.Errorf("draft without cwd and session: %s", plain.raw)
	}

	t.Run("list, newest first, filtered", func(t *testing.T) {
		all := e.do(http.MethodGet, "/api/drafts", "").want(t, http.StatusOK, "")
		drafts := all.list("drafts")
		if len(drafts) != 2 || drafts[0].(map[string]any)["draft_id"] != plain.str("draft_id") || all.body["count"] != 2.0 {
			t.Errorf("list %s", all.raw)
		}
		bySession := e.do(http.MethodGet, "/api/drafts?session="+sid, "").want(t, http.StatusOK, "")
		byCwd := e.do(http.MethodGet, "/api/drafts?cwd=/srv/app/", "").want(t, http.StatusOK, "")
		if len(bySession.list("drafts")) != 1 || len(byCwd.list("drafts")) != 1 {
			t.Errorf("filtered: %s / %s", bySession.raw, byCwd.raw)
		}
		e.do(http.MethodGet, "/api/drafts?cwd=rel", "").want(t, http.StatusBadRequest, "bad_request")
	})

	t.Run("update replaces", func(t *testing.T) {
		got := e.do(http.MethodPut, "/api/drafts/"+id, `{"text":"New title\nbody"}`).want(t, http.StatusOK, "")
		if got.str("title") != "New title" || got.body["cwd"] != nil || got.body["session_id"] != nil ||
			got.str("created_at") != created.str("created_at") || !parseTime(t, got.str("updated_at")).After(parseTime(t, created.str("updated_at"))) {
			t.Errorf("updated %s", got.raw)
		}
	})

	bad := []struct {
		name, method, path, contentType, body string
		status                                int
		code                                  string
	}{
		{"empty text", "POST", "/api/drafts", "application/json", `{"text":""}`, 400, "bad_request"},
		{"blank text", "POST", "/api/drafts", "application/json", `{"text":"  \n "}`, 400, "bad_request"},
		{"no text", "POST", "/api/drafts", "application/json", `{"cwd":"/x"}`, 400, "bad_request"},
		{"text too long", "POST", "/api/drafts", "application/json", `{"text":"` + strings.Repeat("x", workspace.MaxTextBytes+1) + `"}`, 400, "bad_request"},
		{"NUL in text", "POST", "/api/drafts", "application/json", `{"text":"a\u0000b"}`, 400, "bad_request"},
		{"relative cwd", "POST", "/api/drafts", "application/json", `{"text":"t","cwd":"src"}`, 400, "bad_request"},
		{"unknown session", "POST", "/api/drafts", "application/json", `{"text":"t","session_id":"NOPE"}`, 404, "not_found"},
		{"unknown field", "POST", "/api/drafts", "application/json", `{"text":"t","tags":[]}`, 400, "bad_request"},
		{"malformed", "POST", "/api/drafts", "application/json", `{"text":`, 400, "bad_request"},
		{"empty body", "POST", "/api/drafts", "application/json", ``, 400, "bad_request"},
		{"not an object", "POST", "/api/drafts", "application/json", `"text"`, 400, "bad_request"},
		{"trailing data", "POST", "/api/drafts", "application/json", `{"text":"t"}{}`, 400, "bad_request"},
		{"wrong content type", "POST", "/api/drafts", "text/plain", `{"text":"t"}`, 415, "unsupported_media_type"},
		{"no content type", "POST", "/api/drafts", "", `{"text":"t"}`, 415, "unsupported_media_type"},
		{"update unknown id", "PUT", "/api/drafts/NOPE", "application/json", `{"text":"t"}`, 404, "not_found"},
		{"update empty text", "PUT", "/api/drafts/" + id, "application/json", `{"text":""}`, 400, "bad_request"},
		{"update unknown field", "PUT", "/api/drafts/" + id, "application/json", `{"text":"t","x":1}`, 400, "bad_request"},
		{"update wrong content type", "PUT", "/api/drafts/" + id, "text/plain", `{"text":"t"}`, 415, "unsupported_media_type"},
		{"delete unknown id", "DELETE", "/api/drafts/NOPE", "", ``, 404, "not_found"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			e.send(tt.method, tt.path, tt.body, tt.contentType).want(t, tt.status, tt.code)
			if n := e.count(`SELECT count(*) FROM drafts WHERE text IN ('New title' || chr(10) || 'body', 'just text')`); n != 2 {
				t.Errorf("%d drafts unchanged after a refused request, want 2", n)
			}
			if n := e.count(`SELECT count(*) FROM drafts`); n != 2 {
				t.Errorf("%d drafts after a refused request, want 2", n)
			}
		})
	}

	t.Run("deleting the session clears the draft's session", func(t *testing.T) {
		other := e.mustSession("/tmp", "")
		d := e.do(http.MethodPost, "/api/drafts", `{"text":"t","session_id":`+quote(other)+`}`).want(t, http.StatusCreated, "")
		if err := e.store.Delete(t.Context(), other); err != nil {
			t.Fatal(err)
		}
		all := e.do(http.MethodGet, "/api/drafts", "")
		for _, x := range all.list("drafts") {
			if m := x.(map[string]any); m["draft_id"] == d.str("draft_id") && m["session_id"] != nil {
				t.Errorf("draft keeps a deleted session: %v", m)
			}
		}
		e.do(http.MethodDelete, "/api/drafts/"+d.str("draft_id"), "").want(t, http.StatusOK, "")
		e.do(http.MethodDelete, "/api/drafts/"+d.str("draft_id"), "").want(t, http.StatusNotFound, "not_found")
	})

	t.Run("clear all answers how many", func(t *testing.T) {
		got := e.do(http.MethodDelete, "/api/drafts", "").want(t, http.StatusOK, "")
		if got.body["deleted"] != 2.0 {
			t.Errorf("clear %s, want 2 deleted", got.raw)
		}
		if got := e.do(http.MethodGet, "/api/drafts", ""); len(got.list("drafts")) != 0 {
			t.Errorf("after clear: %s", got.raw)
		}
		if got := e.do(http.MethodDelete, "/api/drafts", ""); got.body["deleted"] != 0.0 {
			t.Errorf("second clear %s", got.raw)
		}
	})
}

func TestDraftsCapDropsOldest(t *testing.T) {
	e := mustEnv(t)
	// Fill to the cap directly, oldest first, then create one more.
	if _, err := e.db.Exec(t.Context(), `INSERT INTO drafts (id, text, title, updated_at, created_at)
		SELECT 'd' || lpad(i::text, 4, '0'), 'x', 'x', now() - make_interval(secs => $1 - i), now() - make_interval(secs => $1 - i)
		FROM generate_series(1, $1) AS i`, workspace.MaxDrafts); err != nil {
		t.Fatal(err)
	}
	e.do(http.MethodPost, "/api/drafts", `{"text":"newest"}`).want(t, http.StatusCreated, "")
	if n := e.count(`SELECT count(*) FROM drafts`); n != workspace.MaxDrafts {
		t.Errorf("%d drafts, want %d", n, workspace.MaxDrafts)
	}
	if n := e.count(`SELECT count(*) FROM drafts WHERE id = 'd0001'`); n != 0 {
		t.Error("the oldest draft was kept")
	}
	if n := e.count(`SELECT count(*) FROM drafts WHERE id = $1`, fmt.Sprintf("d%04d", 2)); n != 1 {
		t.Error("the second oldest draft was dropped")
	}
}

func parseTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return at
}

// TestDraftsCapUnderConcurrency creates drafts from many goroutines across
// the cap: exactly MaxDrafts remain.
func TestDraftsCapUnderConcurrency(t *testing.T) {
	e := mustEnv(t)
	if _, err := e.db.Exec(t.Context(), `INSERT INTO drafts (id, text, title)
		SELECT 'd' || i, 'x', 'x' FROM generate_series(1, $1) AS i`, workspace.MaxDrafts-5); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	statuses := make(chan int, 20)
	for range 20 {
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodPost, "/api/drafts", strings.NewReader(`{"text":"concurrent"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(protocol.HeaderInternal, testSecret)
			resp, err := e.app.Test(req, -1)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		})
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != http.StatusCreated {
			t.Errorf("status %d, want 201", s)
		}
	}
	if n := e.count(`SELECT count(*) FROM drafts`); n != workspace.MaxDrafts {
		t.Errorf("%d drafts, want %d", n, workspace.MaxDrafts)
	}
	if n := e.count(`SELECT count(*) FROM drafts WHERE text = 'concurrent'`); n != 20 {
		t.Errorf("%d new drafts kept, want all 20", n)
	}
}
