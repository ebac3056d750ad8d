package workspace_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/store"
	"github.com/svc-code/svc-code/services/chat/internal/workspace"
)

func TestParsePromptID(t *testing.T) {
	tests := []struct {
		in   string
		id   string
		line int64
		ok   bool
	}{
		{"ABC:12", "ABC", 12, true},
		{"a:b:3", "a:b", 3, true},
		{"ABC:0", "", 0, false},
		{"ABC:-1", "", 0, false},
		{"ABC:012", "", 0, false},
		{"ABC:+1", "", 0, false},
		{"ABC:", "", 0, false},
		{":1", "", 0, false},
		{"ABC", "", 0, false},
		{"ABC:1x", "", 0, false},
		{strings.Repeat("x", 200) + ":1", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			id, line, ok := workspace.ParsePromptID(tt.in)
			if id != tt.id || line != tt.line || ok != tt.ok {
				t.Errorf("ParsePromptID(%q) = %q, %d, %v; want %q, %d, %v", tt.in, id, line, ok, tt.id, tt.line, tt.ok)
			}
		})
	}
}

func FuzzParsePromptID(f *testing.F) {
	for _, s := range []string{"ABC:12", "a:b:3", ":", "x:0", "x:99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, line, ok := workspace.ParsePromptID(s)
		if !ok {
			return
		}
		if id == "" || line < 1 || id+":"+itoa(line) != s {
			t.Errorf("ParsePromptID(%q) = %q, %d: does not give the id back", s, id, line)
		}
	})
}

func itoa(n int64) string {
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func TestFavoriteSessions(t *testing.T) {
	e := mustEnv(t)
	a := e.mustSession("/srv/a", "first")
	b := e.mustSession("/srv/b", "second")

	got := e.do(http.MethodPut, "/api/favorites/sessions/"+a, `{"note":"the good one"}`).want(t, http.StatusOK, "")
	if got.str("session_id") != a || got.str("note") != "the good one" || got.str("title") != "first" || got.str("cwd") != "/srv/a" {
		t.Fatalf("favorite %s", got.raw)
	}
	e.do(http.MethodPut, "/api/favorites/sessions/"+b, `{}`).want(t, http.StatusOK, "")
	kept := e.do(http.MethodPut, "/api/favorites/sessions/"+a, `{}`).want(t, http.StatusOK, "")
	if kept.str("note") != "the good one" || kept.str("favorited_at") != got.str("favorited_at") {
		t.Errorf("re-favoriting without a note: %s", kept.raw)
	}
	changed := e.do(http.MethodPut, "/api/favorites/sessions/"+a, `{"note":""}`).want(t, http.StatusOK, "")
	if changed.str("note") != "" {
		t.Errorf("note not cleared: %s", changed.raw)
	}

	list := e.do(http.MethodGet, "/api/favorites", "").want(t, http.StatusOK, "")
	if s := list.list("sessions"); len(s) != 2 || s[0].(map[string]any)["session_id"] != b {
		t.Errorf("favorites %s", list.raw)
	}

	bad := []struct {
		name, method, path, contentType, body string
		status                                int
		code                                  string
	}{
		{"unknown session", "PUT", "/api/favorites/sessions/NOPE", "application/json", `{}`, 404, "not_found"},
		{"note too long", "PUT", "/api/favorites/sessions/" + a, "application/json", `{"note":"` + strings.Repeat("n", workspace.MaxNoteRunes+1) + `"}`, 400, "bad_request"},
		{"note not a string", "PUT", "/api/favorites/sessions/" + a, "application/json", `{"note":1}`, 400, "bad_request"},
		{"unknown field", "PUT", "/api/favorites/sessions/" + a, "application/json", `{"pinned":true}`, 400, "bad_request"},
		{"empty body", "PUT", "/api/favorites/sessions/" + a, "application/json", ``, 400, "bad_request"},
		{"wrong content type", "PUT", "/api/favorites/sessions/" + a, "text/plain", `{}`, 415, "unsupported_media_type"},
		{"delete unknown session", "DELETE", "/api/favorites/sessions/NOPE", "", ``, 404, "not_found"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			e.send(tt.method, tt.path, tt.body, tt.contentType).want(t, tt.status, tt.code)
			if n := e.count(`SELECT count(*) FROM session_favorites WHERE note = ''`); n != 2 {
				t.Errorf("%d favorites unchanged, want 2", n)
			}
		})
	}

	e.do(http.MethodDelete, "/api/favorites/sessions/"+a, "").want(t, http.StatusOK, "")
	e.do(http.MethodDelete, "/api/favorites/sessions/"+a, "").want(t, http.StatusNotFound, "not_found")
	if err := e.store.Delete(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if got := e.do(http.MethodGet, "/api/favorites", ""); len(got.list("sessions")) != 0 {
		t.Errorf("favorites after removing one and deleting the other: %s", got.raw)
	}
}

func TestFavoritePrompts(t *testing.T) {
	e := mustEnv(t)
	sid := e.mustSession("/srv/a", "title")
	other := e.mustSession("/srv/b", "")
	p1 := e.mustPrompt(sid, "run the tests")
	e.mustAppend(sid, store.KindAgent, `{"type":"assistant","message":{"content":[]}}`)
	p2 := e.mustPrompt(sid, "something else")
	if p1.IsFavorite || p2.IsFavorite {
		t.Fatal("a new prompt is a favorite")
	}
	path := "/api/favorites/prompts/" + p1.SID()

	got := e.do(http.MethodPut, path, `{"favorite":true}`).want(t, http.StatusOK, "")
	if got.str("prompt_id") != p1.SID() || got.body["is_favorite"] != true || got.body["line"] != float64(p1.Line) {
		t.Fatalf("favorite %s", got.raw)
	}
	// The prompt id may arrive percent-encoded.
	e.do(http.MethodPut, "/api/favorites/prompts/"+sid+"%3A"+itoa(p1.Line), `{"favorite":true}`).want(t, http.StatusOK, "")

	t.Run("re-sending a favorite stores a favorite", func(t *testing.T) {
		again := e.mustPrompt(other, "run the tests")
		if !again.IsFavorite {
			t.Error("the same text sent again is not a favorite")
		}
		if e.mustPrompt(other, "run the tests please").IsFavorite {
			t.Error("another text is a favorite")
		}
		list := e.do(http.MethodGet, "/api/favorites", "").want(t, http.StatusOK, "")
		prompts := list.list("prompts")
		if len(prompts) != 1 {
			t.Fatalf("favorite prompts %s, want one per text", list.raw)
		}
		p := prompts[0].(map[string]any)
		if p["prompt_id"] != again.SID() || p["text"] != "run the tests" || p["cwd"] != "/srv/b" {
			t.Errorf("favorite prompt %v, want the newest use %s", p, again.SID())
		}
	})

	bad := []struct {
		name, path, contentType, body string
		status                        int
		code                          string
	}{
		{"not a prompt id", "/api/favorites/prompts/nocolon", "application/json", `{"favorite":true}`, 400, "bad_request"},
		{"line zero", "/api/favorites/prompts/" + sid + ":0", "application/json", `{"favorite":true}`, 400, "bad_request"},
		{"unknown session", "/api/favorites/prompts/NOPE:1", "application/json", `{"favorite":true}`, 404, "not_found"},
		{"unknown line", "/api/favorites/prompts/" + sid + ":99", "application/json", `{"favorite":true}`, 404, "not_found"},
		{"agent line", "/api/favorites/prompts/" + sid + ":2", "application/json", `{"favorite":true}`, 404, "not_found"},
		{"no favorite field", path, "application/json", `{}`, 400, "bad_request"},
		{"favorite not a bool", path, "application/json", `{"favorite":"yes"}`, 400, "bad_request"},
		{"unknown field", path, "application/json", `{"favorite":false,"x":1}`, 400, "bad_request"},
		{"empty body", path, "application/json", ``, 400, "bad_request"},
		{"wrong content type", path, "text/plain", `{"favorite":false}`, 415, "unsupported_media_type"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			e.send(http.MethodPut, tt.path, tt.body, tt.contentType).want(t, tt.status, tt.code)
			if n := e.count(`SELECT count(*) FROM session_messages WHERE is_favorite`); n != 2 {
				t.Errorf("%d favorite prompts after a refused request, want 2", n)
			}
		})
	}

	t.Run("unfavoriting a text unfavorites it everywhere", func(t *testing.T) {
		got := e.do(http.MethodPut, path, `{"favorite":false}`).want(t, http.StatusOK, "")
		if got.body["is_favorite"] != false {
			t.Errorf("unfavorite %s", got.raw)
		}
		if n := e.count(`SELECT count(*) FROM session_messages WHERE is_favorite`); n != 0 {
			t.Errorf("%d favorite prompts left", n)
		}
		if e.mustPrompt(sid, "run the tests").IsFavorite {
			t.Error("the text is still a favorite")
		}
		if got := e.do(http.MethodGet, "/api/favorites", ""); len(got.list("prompts")) != 0 {
			t.Errorf("favorites %s", got.raw)
		}
		// Unfavoriting a prompt that is not a favorite is not an error.
		e.do(http.MethodPut, path, `{"favorite":false}`).want(t, http.StatusOK, "")
	})
}
