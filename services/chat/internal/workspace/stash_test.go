package workspace_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/workspace"
)

func TestStash(t *testing.T) {
	e := mustEnv(t)
	sid := e.mustSession("/tmp", "")
	other := e.mustSession("/tmp", "")
	base := "/api/session/" + sid + "/stash"

	first := e.do(http.MethodPost, base, `{"text":"first"}`).want(t, http.StatusCreated, "")
	second := e.do(http.MethodPost, base, `{"text":"second"}`).want(t, http.StatusCreated, "")
	if first.str("session_id") != sid || first.body["sent"] != false || first.body["sent_at"] != nil ||
		len(first.str("item_id")) != 26 || first.str("text") != "first" {
		t.Fatalf("added %s", first.raw)
	}
	e.do(http.MethodPost, "/api/session/"+other+"/stash", `{"text":"elsewhere"}`).want(t, http.StatusCreated, "")
	item := base + "/" + first.str("item_id")

	t.Run("list in order, per session", func(t *testing.T) {
		got := e.do(http.MethodGet, base, "").want(t, http.StatusOK, "")
		items := got.list("items")
		if len(items) != 2 || items[0].(map[string]any)["text"] != "first" || items[1].(map[string]any)["text"] != "second" ||
			got.str("session_id") != sid {
			t.Errorf("list %s", got.raw)
		}
	})

	t.Run("edit and mark sent", func(t *testing.T) {
		got := e.do(http.MethodPatch, item, `{"text":"first, edited"}`).want(t, http.StatusOK, "")
		if got.str("text") != "first, edited" || got.body["sent"] != false {
			t.Errorf("edited %s", got.raw)
		}
		sent := e.do(http.MethodPatch, item, `{"sent":true}`).want(t, http.StatusOK, "")
		if sent.body["sent"] != true || sent.str("sent_at") == "" || sent.str("text") != "first, edited" {
			t.Errorf("marked sent %s", sent.raw)
		}
		again := e.do(http.MethodPatch, item, `{"sent":true}`).want(t, http.StatusOK, "")
		if again.str("sent_at") != sent.str("sent_at") {
			t.Errorf("marking sent again moved sent_at: %s then %s", sent.raw, again.raw)
		}
		if got := e.do(http.MethodGet, base+"?sent=true", ""); len(got.list("items")) != 1 {
			t.Errorf("sent items %s", got.raw)
		}
		if got := e.do(http.MethodGet, base+"?sent=false", ""); len(got.list("items")) != 1 {
			t.Errorf("unsent items %s", got.raw)
		}
	})

	bad := []struct {
		name, method, path, contentType, body string
		status                                int
		code                                  string
	}{
		{"list unknown session", "GET", "/api/session/NOPE/stash", "", ``, 404, "not_found"},
		{"add unknown session", "POST", "/api/session/NOPE/stash", "application/json", `{"text":"t"}`, 404, "not_found"},
		{"clear unknown session", "DELETE", "/api/session/NOPE/stash", "", ``, 404, "not_found"},
		{"add empty text", "POST", base, "application/json", `{"text":""}`, 400, "bad_request"},
		{"add blank text", "POST", base, "application/json", `{"text":"\n"}`, 400, "bad_request"},
		{"add text too long", "POST", base, "application/json", `{"text":"` + strings.Repeat("x", workspace.MaxTextBytes+1) + `"}`, 400, "bad_request"},
		{"add unknown field", "POST", base, "application/json", `{"text":"t","sent":true}`, 400, "bad_request"},
		{"add malformed", "POST", base, "application/json", `{`, 400, "bad_request"},
		{"add empty body", "POST", base, "application/json", ``, 400, "bad_request"},
		{"add wrong content type", "POST", base, "text/plain", `{"text":"t"}`, 415, "unsupported_media_type"},
		{"bad sent filter", "GET", base + "?sent=yes", "", ``, 400, "bad_request"},
		{"update nothing", "PATCH", item, "application/json", `{}`, 400, "bad_request"},
		{"update empty text", "PATCH", item, "application/json", `{"text":""}`, 400, "bad_request"},
		{"update sent not a bool", "PATCH", item, "application/json", `{"sent":"yes"}`, 400, "bad_request"},
		{"update unknown field", "PATCH", item, "application/json", `{"pinned":true}`, 400, "bad_request"},
		{"update wrong content type", "PATCH", item, "text/plain", `{"sent":false}`, 415, "unsupported_media_type"},
		{"update unknown item", "PATCH", base + "/NOPE", "application/json", `{"sent":true}`, 404, "not_found"},
		{"update item of another session", "PATCH", "/api/session/" + other + "/stash/" + first.str("item_id"), "application/json", `{"sent":false}`, 404, "not_found"},
		{"update unknown session", "PATCH", "/api/session/NOPE/stash/" + first.str("item_id"), "application/json", `{"sent":false}`, 404, "not_found"},
		{"delete unknown item", "DELETE", base + "/NOPE", "", ``, 404, "not_found"},
		{"delete item of another session", "DELETE", "/api/session/" + other + "/stash/" + second.str("item_id"), "", ``, 404, "not_found"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			e.send(tt.method, tt.path, tt.body, tt.contentType).want(t, tt.status, tt.code)
			if n := e.count(`SELECT count(*) FROM stash_items WHERE session_id = $1`, sid); n != 2 {
				t.Errorf("%d items after a refused request, want 2", n)
			}
			if n := e.count(`SELECT count(*) FROM stash_items WHERE text = 'first, edited' AND sent_at IS NOT NULL`); n != 1 {
				t.Error("a refused request changed an item")
			}
		})
	}

	t.Run("clear the sent ones, then delete one, then clear all", func(t *testing.T) {
		got := e.do(http.MethodDelete, base+"?sent=true", "").want(t, http.StatusOK, "")
		if got.body["deleted"] != 1.0 {
			t.Errorf("clear sent %s", got.raw)
		}
		e.do(http.MethodDelete, base+"/"+second.str("item_id"), "").want(t, http.StatusOK, "")
		e.do(http.MethodDelete, base+"/"+second.str("item_id"), "").want(t, http.StatusNotFound, "not_found")
		e.do(http.MethodPost, base, `{"text":"third"}`).want(t, http.StatusCreated, "")
		got = e.do(http.MethodDelete, base, "").want(t, http.StatusOK, "")
		if got.body["deleted"] != 1.0 {
			t.Errorf("clear %s", got.raw)
		}
		if n := e.count(`SELECT count(*) FROM stash_items WHERE session_id = $1`, other); n != 1 {
			t.Errorf("the other session's stash has %d items, want 1", n)
		}
	})

	t.Run("deleting the session deletes its stash", func(t *testing.T) {
		if err := e.store.Delete(t.Context(), other); err != nil {
			t.Fatal(err)
		}
		if n := e.count(`SELECT count(*) FROM stash_items WHERE session_id = $1`, other); n != 0 {
			t.Errorf("%d items left", n)
		}
	})
}

func TestStashFull(t *testing.T) {
	e := mustEnv(t)
	sid := e.mustSession("/tmp", "")
	if _, err := e.db.Exec(t.Context(), `INSERT INTO stash_items (id, session_id, text)
		SELECT 'i' || i, $1, 'x' FROM generate_series(1, $2) AS i`, sid, workspace.MaxStashItems); err != nil {
		t.Fatal(err)
	}
	e.do(http.MethodPost, "/api/session/"+sid+"/stash", `{"text":"one more"}`).want(t, http.StatusConflict, "conflict")
	if n := e.count(`SELECT count(*) FROM stash_items`); n != workspace.MaxStashItems {
		t.Errorf("%d items, want %d", n, workspace.MaxStashItems)
	}
	e.do(http.MethodDelete, "/api/session/"+sid+"/stash/i1", "").want(t, http.StatusOK, "")
	e.do(http.MethodPost, "/api/session/"+sid+"/stash", `{"text":"one more"}`).want(t, http.StatusCreated, "")
}

func TestStashMarkSent(t *testing.T) {
	e := mustEnv(t)
	sid := e.mustSession("/tmp", "")
	other := e.mustSession("/tmp", "")
	base := "/api/session/" + sid + "/stash"
	a := e.do(http.MethodPost, base, `{"text":"a"}`).want(t, http.StatusCreated, "").str("item_id")
	b := e.do(http.MethodPost, base, `{"text":"b"}`).want(t, http.StatusCreated, "").str("item_id")
	c := e.do(http.MethodPost, base, `{"text":"c"}`).want(t, http.StatusCreated, "").str("item_id")
	elsewhere := e.do(http.MethodPost, "/api/session/"+other+"/stash", `{"text":"x"}`).want(t, http.StatusCreated, "").str("item_id")

	bad := []struct {
		name, path, contentType, body string
		status                        int
		code                          string
	}{
		{"unknown item", base + "/sent", "application/json", `{"item_ids":[` + quote(a) + `,"NOPE"]}`, 404, "not_found"},
		{"item of another session", base + "/sent", "application/json", `{"item_ids":[` + quote(elsewhere) + `]}`, 404, "not_found"},
		{"unknown session", "/api/session/NOPE/stash/sent", "application/json", `{"item_ids":[` + quote(a) + `]}`, 404, "not_found"},
		{"no ids", base + "/sent", "application/json", `{"item_ids":[]}`, 400, "bad_request"},
		{"ids not a list", base + "/sent", "application/json", `{"item_ids":"a"}`, 400, "bad_request"},
		{"unknown field", base + "/sent", "application/json", `{"item_ids":[` + quote(a) + `],"all":true}`, 400, "bad_request"},
		{"empty body", base + "/sent", "application/json", ``, 400, "bad_request"},
		{"wrong content type", base + "/sent", "text/plain", `{"item_ids":[` + quote(a) + `]}`, 415, "unsupported_media_type"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			e.send(http.MethodPost, tt.path, tt.body, tt.contentType).want(t, tt.status, tt.code)
			if n := e.count(`SELECT count(*) FROM stash_items WHERE sent_at IS NOT NULL`); n != 0 {
				t.Errorf("%d items marked sent by a refused request", n)
			}
		})
	}

	got := e.do(http.MethodPost, base+"/sent", `{"item_ids":[`+quote(c)+`,`+quote(a)+`,`+quote(a)+`]}`).want(t, http.StatusOK, "")
	items := got.list("items")
	if len(items) != 2 || items[0].(map[string]any)["item_id"] != a || items[1].(map[string]any)["item_id"] != c ||
		items[0].(map[string]any)["sent"] != true {
		t.Fatalf("marked %s, want a then c, sent", got.raw)
	}
	unsent := e.do(http.MethodGet, base+"?sent=false", "")
	if l := unsent.list("items"); len(l) != 1 || l[0].(map[string]any)["item_id"] != b {
		t.Errorf("unsent %s, want b alone", unsent.raw)
	}
}
