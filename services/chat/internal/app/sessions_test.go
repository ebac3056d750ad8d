package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/store"
)

func notOnPath(string) (string, error) { return "", exec.ErrNotFound }

func TestCreateSession(t *testing.T) {
	c := startChat(t, notOnPath)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, contentType, body string
		status                  int
		code                    string
	}{
		{"defaults", "application/json", `{"cwd":` + quote(dir) + `}`, 201, ""},
		{"every field", "application/json; charset=utf-8", `{"cwd":` + quote(dir+"/.") + `,"provider":"app-server","title":"t"}`, 201, ""},
		{"no cwd", "application/json", `{"title":"t"}`, 400, "bad_request"},
		{"relative cwd", "application/json", `{"cwd":"tmp"}`, 400, "bad_request"},
		{"missing cwd", "application/json", `{"cwd":` + quote(filepath.Join(dir, "gone")) + `}`, 400, "bad_request"},
		{"cwd is a file", "application/json", `{"cwd":` + quote(file) + `}`, 400, "bad_request"},
		{"unknown provider", "application/json", `{"cwd":` + quote(dir) + `,"provider":"claude"}`, 400, "bad_request"},
		{"title too long", "application/json", `{"cwd":` + quote(dir) + `,"title":"` + strings.Repeat("x", 501) + `"}`, 400, "bad_request"},
		{"unknown field", "application/json", `{"cwd":` + quote(dir) + `,"model":"x"}`, 400, "bad_request"},
		{"malformed", "application/json", `{"cwd":`, 400, "bad_request"},
		{"trailing data", "application/json", `{"cwd":` + quote(dir) + `} {}`, 400, "bad_request"},
		{"not an object", "application/json", `[]`, 400, "bad_request"},
		{"wrong content type", "text/plain", `{"cwd":` + quote(dir) + `}`, 415, "unsupported_media_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.send(http.MethodPost, "/api/sessions", tt.body, tt.contentType, testSecret)
			got.want(t, tt.status, tt.code)
			if tt.status != 201 {
				return
			}
			if got.str("cwd") != dir || len(got.str("session_id")) != 26 || got.body["parent_id"] != nil ||
				got.body["agent_running"] != false || got.body["is_compacting"] != false ||
				got.str("permission_mode") != "default" || got.body["provider_locked"] != false ||
				got.body["turns"] != 0.0 || got.body["cost_usd"] != 0.0 || got.body["archived"] != false {
				t.Errorf("session object %s", got.raw)
			}
		})
	}
	t.Run("provider default and set", func(t *testing.T) {
		a := c.do(http.MethodPost, "/api/sessions", `{"cwd":`+quote(dir)+`}`)
		b := c.do(http.MethodPost, "/api/sessions", `{"cwd":`+quote(dir)+`,"provider":"app-server","title":"t"}`)
		if a.str("provider") != "agent-sdk" || b.str("provider") != "app-server" || b.str("title") != "t" {
			t.Errorf("got %s and %s", a.raw, b.raw)
		}
	})
	t.Run("without the internal credential", func(t *testing.T) {
		c.send(http.MethodPost, "/api/sessions", `{"cwd":"/"}`, "application/json", "").want(t, 401, "unauthorized")
	})
}

func TestSessionRoutes(t *testing.T) {
	c := startChat(t, notOnPath)
	ctx := context.Background()
	dir := t.TempDir()
	id := c.mustSession(dir)
	base := "/api/session/" + id

	t.Run("get", func(t *testing.T) {
		got := c.do(http.MethodGet, base, "")
		got.want(t, 200, "")
		if got.str("session_id") != id || got.str("cwd") != dir {
			t.Errorf("got %s", got.raw)
		}
	})
	t.Run("rename", func(t *testing.T) {
		got := c.do(http.MethodPatch, base, `{"title":"renamed"}`)
		got.want(t, 200, "")
		if got.str("title") != "renamed" || c.do(http.MethodGet, base, "").str("title") != "renamed" {
			t.Errorf("got %s", got.raw)
		}
	})
	t.Run("permission mode", func(t *testing.T) {
		got := c.do(http.MethodPut, base+"/permission-mode", `{"mode":"acceptEdits"}`)
		got.want(t, 200, "")
		if got.str("mode") != "acceptEdits" || got.str("applied") != "next_turn" {
			t.Errorf("got %s", got.raw)
		}
		if mode := c.do(http.MethodGet, base, "").str("permission_mode"); mode != "acceptEdits" {
			t.Errorf("stored mode %q, want acceptEdits", mode)
		}
	})
	t.Run("provider before the first turn", func(t *testing.T) {
		got := c.do(http.MethodPut, base+"/provider", `{"provider":"app-server"}`)
		got.want(t, 200, "")
		if got.str("provider") != "app-server" {
			t.Errorf("got %s", got.raw)
		}
	})
	t.Run("provider after the first turn", func(t *testing.T) {
		if _, err := c.store.RecordTurn(ctx, id, 0.5); err != nil {
			t.Fatal(err)
		}
		c.do(http.MethodPut, base+"/provider", `{"provider":"agent-sdk"}`).want(t, 409, "provider_locked")
		got := c.do(http.MethodGet, base, "")
		if got.str("provider") != "app-server" || got.body["provider_locked"] != true || got.body["turns"] != 1.0 || got.body["cost_usd"] != 0.5 {
			t.Errorf("after a refused switch: %s", got.raw)
		}
	})
	t.Run("fork", func(t *testing.T) {
		if _, err := c.store.AppendMessage(ctx, id, store.KindUserPrompt, json.RawMessage(`{"message":"hi"}`)); err != nil {
			t.Fatal(err)
		}
		got := c.send(http.MethodPost, base+"/fork", "", "", testSecret)
		got.want(t, 201, "")
		fork := got.str("session_id")
		if fork == id || got.str("parent_id") != id || got.str("title") != "renamed" {
			t.Errorf("fork %s", got.raw)
		}
		msgs := c.do(http.MethodGet, "/api/sessions/"+fork+"/logs/messages", "")
		if list, _ := msgs.body["messages"].([]any); len(list) != 1 {
			t.Errorf("fork's log %s, want the one message", msgs.raw)
		}
		empty := c.mustSession(dir)
		c.send(http.MethodPost, "/api/session/"+empty+"/fork", "", "", testSecret).want(t, 201, "")
	})
	t.Run("delete", func(t *testing.T) {
		victim := c.mustSession(dir)
		got := c.do(http.MethodDelete, "/api/session/"+victim, "")
		got.want(t, 200, "")
		if got.body["ok"] != true {
			t.Errorf("got %s", got.raw)
		}
		c.do(http.MethodGet, "/api/session/"+victim, "").want(t, 404, "not_found")
		c.do(http.MethodDelete, "/api/session/"+victim, "").want(t, 404, "not_found")
	})

	bad := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"rename without title", http.MethodPatch, base, `{}`, 400, "bad_request"},
		{"rename with null title", http.MethodPatch, base, `{"title":null}`, 400, "bad_request"},
		{"rename unknown field", http.MethodPatch, base, `{"title":"x","pinned":true}`, 400, "bad_request"},
		{"rename too long", http.MethodPatch, base, `{"title":"` + strings.Repeat("é", 501) + `"}`, 400, "bad_request"},
		{"unknown mode", http.MethodPut, base + "/permission-mode", `{"mode":"yolo"}`, 400, "bad_request"},
		{"empty mode", http.MethodPut, base + "/permission-mode", `{}`, 400, "bad_request"},
		{"unknown provider", http.MethodPut, base + "/provider", `{"provider":"codex"}`, 400, "bad_request"},
		{"malformed provider body", http.MethodPut, base + "/provider", `{"provider":`, 400, "bad_request"},
		{"get unknown", http.MethodGet, "/api/session/nope", "", 404, "not_found"},
		{"rename unknown", http.MethodPatch, "/api/session/nope", `{"title":"x"}`, 404, "not_found"},
		{"delete unknown", http.MethodDelete, "/api/session/nope", "", 404, "not_found"},
		{"fork unknown", http.MethodPost, "/api/session/nope/fork", "", 404, "not_found"},
		{"provider of unknown", http.MethodPut, "/api/session/nope/provider", `{"provider":"agent-sdk"}`, 404, "not_found"},
		{"mode of unknown", http.MethodPut, "/api/session/nope/permission-mode", `{"mode":"plan"}`, 404, "not_found"},
		{"logs of unknown", http.MethodGet, "/api/sessions/nope/logs", "", 404, "not_found"},
		{"messages of unknown", http.MethodGet, "/api/sessions/nope/logs/messages", "", 404, "not_found"},
		{"raw of unknown", http.MethodGet, "/api/sessions/nope/logs/raw", "", 404, "not_found"},
		{"tools of unknown", http.MethodGet, "/api/sessions/nope/logs/tools", "", 404, "not_found"},
		{"wrong method", http.MethodPost, base, `{}`, 405, "method_not_allowed"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			c.do(tt.method, tt.path, tt.body).want(t, tt.status, tt.code)
		})
	}
	t.Run("provider body wrong content type", func(t *testing.T) {
		c.send(http.MethodPut, base+"/provider", `{"provider":"agent-sdk"}`, "text/plain", testSecret).want(t, 415, "unsupported_media_type")
	})
}

// TestArchiveSession: PATCH archives and unarchives, alone or with a
// title; what it refuses changes nothing; the lists follow the flag.
func TestArchiveSession(t *testing.T) {
	c := startChat(t, notOnPath)
	dir := t.TempDir()
	id := c.mustSession(dir)
	other := c.mustSession(dir)
	base := "/api/session/" + id
	// state returns the session's title and archived flag as stored.
	state := func(t *testing.T) (string, any) {
		t.Helper()
		got := c.do(http.MethodGet, base, "")
		got.want(t, 200, "")
		return got.str("title"), got.body["archived"]
	}
	// listed reports whether id is in the answer's "sessions".
	listed := func(t *testing.T, path string) bool {
		t.Helper()
		got := c.do(http.MethodGet, path, "")
		got.want(t, 200, "")
		list, _ := got.body["sessions"].([]any)
		for _, s := range list {
			if s.(map[string]any)["session_id"] == id {
				return true
			}
		}
		return false
	}

	t.Run("archive", func(t *testing.T) {
		got := c.do(http.MethodPatch, base, `{"archived":true}`)
		got.want(t, 200, "")
		if got.str("session_id") != id || got.body["archived"] != true || got.str("title") != "" {
			t.Errorf("answer %s", got.raw)
		}
		if _, a := state(t); a != true {
			t.Errorf("stored archived = %v", a)
		}
		for path, want := range map[string]bool{
			"/api/sessions": false, "/api/sessions?archived=false": false,
			"/api/sessions?archived=true": true, "/api/sessions?archived=all": true,
			"/api/welcome/sessions": false,
		} {
			if got := listed(t, path); got != want {
				t.Errorf("%s lists the archived session: %v, want %v", path, got, want)
			}
		}
		p := c.do(http.MethodGet, "/api/welcome/projects", "")
		projects, _ := p.body["projects"].([]any)
		if len(projects) != 1 || projects[0].(map[string]any)["sessions"] != 1.0 || projects[0].(map[string]any)["archived_sessions"] != 1.0 {
			t.Errorf("projects %s, want 1 live and 1 archived session", p.raw)
		}
		if o := c.do(http.MethodGet, "/api/session/"+other, ""); o.body["archived"] != false {
			t.Errorf("the other session: %s", o.raw)
		}
	})
	t.Run("archive again", func(t *testing.T) {
		c.do(http.MethodPatch, base, `{"archived":true}`).want(t, 200, "")
		if _, a := state(t); a != true {
			t.Errorf("stored archived = %v", a)
		}
	})
	t.Run("unarchive", func(t *testing.T) {
		got := c.do(http.MethodPatch, base, `{"archived":false}`)
		got.want(t, 200, "")
		if got.body["archived"] != false {
			t.Errorf("answer %s", got.raw)
		}
		if !listed(t, "/api/sessions") || !listed(t, "/api/welcome/sessions") || listed(t, "/api/sessions?archived=true") {
			t.Error("the unarchived session is not back in the default lists only")
		}
	})
	t.Run("both fields", func(t *testing.T) {
		got := c.do(http.MethodPatch, base, `{"title":"old work","archived":true}`)
		got.want(t, 200, "")
		if got.str("title") != "old work" || got.body["archived"] != true {
			t.Errorf("answer %s", got.raw)
		}
		if title, a := state(t); title != "old work" || a != true {
			t.Errorf("stored %q, %v", title, a)
		}
	})

	// Each refused body leaves the title "old work" and archived true.
	bad := []struct{ name, body string }{
		{"empty", `{}`},
		{"null archived", `{"archived":null}`},
		{"string archived", `{"archived":"false"}`},
		{"number archived", `{"archived":0}`},
		{"valid title, bad archived", `{"title":"new","archived":"no"}`},
		{"valid archived, too long title", `{"archived":false,"title":"` + strings.Repeat("é", 501) + `"}`},
		{"valid archived, bad title type", `{"archived":false,"title":7}`},
		{"valid archived, unknown field", `{"archived":false,"hidden":true}`},
		{"two objects", `{"archived":false}{"archived":false}`},
	}
	for _, tt := range bad {
		t.Run("bad "+tt.name, func(t *testing.T) {
			c.do(http.MethodPatch, base, tt.body).want(t, 400, "bad_request")
			if title, a := state(t); title != "old work" || a != true {
				t.Errorf("after a refused %s: stored %q, %v", tt.body, title, a)
			}
		})
	}
	t.Run("bad content type", func(t *testing.T) {
		c.send(http.MethodPatch, base, `{"archived":false}`, "text/plain", testSecret).want(t, 415, "unsupported_media_type")
		if _, a := state(t); a != true {
			t.Errorf("stored archived = %v", a)
		}
	})
	t.Run("unknown session", func(t *testing.T) {
		c.do(http.MethodPatch, "/api/session/nope", `{"archived":true}`).want(t, 404, "not_found")
	})
}

func TestListSessions(t *testing.T) {
	c := startChat(t, notOnPath)
	ctx := context.Background()
	a, b := t.TempDir(), t.TempDir()
	var inA []string
	for range 5 {
		inA = append(inA, c.mustSession(a))
	}
	c.mustSession(b)
	if _, err := c.store.SetArchived(ctx, inA[0], true); err != nil {
		t.Fatal(err)
	}
	// pages follows next_cursor and returns the ids and the page count.
	pages := func(t *testing.T, query string) ([]string, int) {
		t.Helper()
		var ids []string
		n := 0
		cursor := ""
		for {
			q := query
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			got := c.do(http.MethodGet, "/api/sessions?"+q, "")
			got.want(t, 200, "")
			n++
			list, _ := got.body["sessions"].([]any)
			for _, s := range list {
				ids = append(ids, s.(map[string]any)["session_id"].(string))
			}
			if got.body["next_cursor"] == nil {
				return ids, n
			}
			cursor = got.str("next_cursor")
		}
	}
	tests := []struct {
		name      string
		query     string
		wantCount int
		wantPages int
	}{
		{"live sessions", "", 5, 1},
		{"pages of 2", "limit=2", 5, 3},
		{"cwd a", "cwd=" + a, 4, 1},
		{"cwd a, pages of 3", "cwd=" + a + "&limit=3", 4, 2},
		{"archived", "archived=true", 1, 1},
		{"all", "archived=all", 6, 1},
		{"unknown cwd", "cwd=/nowhere", 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, n := pages(t, tt.query)
			if len(ids) != tt.wantCount || n != tt.wantPages {
				t.Errorf("got %d sessions in %d pages, want %d in %d", len(ids), n, tt.wantCount, tt.wantPages)
			}
		})
	}
	t.Run("newest first", func(t *testing.T) {
		ids, _ := pages(t, "cwd="+a+"&archived=all")
		for i, id := range ids {
			if want := inA[len(inA)-1-i]; id != want {
				t.Errorf("position %d: got %s, want %s", i, id, want)
			}
		}
	})
	for _, q := range []string{"limit=0", "limit=201", "limit=x", "archived=yes", "cursor=!!"} {
		t.Run("bad "+q, func(t *testing.T) {
			c.do(http.MethodGet, "/api/sessions?"+q, "").want(t, 400, "bad_request")
		})
	}
}

func TestSessionLogs(t *testing.T) {
	c := startChat(t, notOnPath)
	ctx := context.Background()
	id := c.mustSession(t.TempDir())
	payloads := []struct{ kind, payload string }{
		{store.KindUserPrompt, `{"message":"list files"}`},
		{store.KindAgent, `{"type":"assistant","message":{"content":[{"type":"text","text":"sure"},{"type":"tool_use","id":"tu1","name":"Bash","input":{"command":"ls"}}]}}`},
		{store.KindAgent, `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"tu1","content":"a\nb","is_error":false}]}}`},
		{store.KindAgent, `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"tu2","name":"Read","input":{"file_path":"/x"}}]}}`},
		{store.KindNotice, `{"text":"done"}`},
	}
	for _, p := range payloads {
		if _, err := c.store.AppendMessage(ctx, id, p.kind, json.RawMessage(p.payload)); err != nil {
			t.Fatal(err)
		}
	}
	logs := "/api/sessions/" + id + "/logs"

	t.Run("logs", func(t *testing.T) {
		got := c.do(http.MethodGet, logs, "")
		got.want(t, 200, "")
		sess, _ := got.body["session"].(map[string]any)
		msgs, _ := got.body["messages"].([]any)
		if sess["session_id"] != id || len(msgs) != 5 || got.body["has_more"] != false {
			t.Fatalf("got %s", got.raw)
		}
		first := msgs[0].(map[string]any)
		if first["sid"] != id+":1" || first["line"] != 1.0 || first["kind"] != "user_prompt" || first["is_favorite"] != false {
			t.Errorf("first message %v", first)
		}
	})
	for _, tt := range []struct {
		query     string
		wantLines []int
		wantMore  bool
	}{
		{"", []int{1, 2, 3, 4, 5}, false},
		{"since=3", []int{4, 5}, false},
		{"since=1&limit=2", []int{2, 3}, true},
		{"since=5", nil, false},
	} {
		t.Run("messages "+tt.query, func(t *testing.T) {
			got := c.do(http.MethodGet, logs+"/messages?"+tt.query, "")
			got.want(t, 200, "")
			msgs, _ := got.body["messages"].([]any)
			var lines []int
			for _, m := range msgs {
				lines = append(lines, int(m.(map[string]any)["line"].(float64)))
			}
			if fmt.Sprint(lines) != fmt.Sprint(tt.wantLines) ||
				got.body["has_more"] != tt.wantMore {
				t.Errorf("got lines %v more %v, want %v %v", lines, got.body["has_more"], tt.wantLines, tt.wantMore)
			}
		})
	}
	t.Run("raw", func(t *testing.T) {
		got := c.do(http.MethodGet, logs+"/raw?since=3", "")
		got.want(t, 200, "")
		if ct := got.header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Errorf("content type %q", ct)
		}
		lines := strings.Split(strings.TrimSuffix(got.raw, "\n"), "\n")
		if len(lines) != 2 || !json.Valid([]byte(lines[0])) || !strings.Contains(lines[0], `"tu2"`) || lines[1] != `{"text": "done"}` {
			t.Errorf("got %q", got.raw)
		}
	})
	t.Run("tools", func(t *testing.T) {
		got := c.do(http.MethodGet, logs+"/tools", "")
		got.want(t, 200, "")
		tools, _ := got.body["tools"].([]any)
		if len(tools) != 2 {
			t.Fatalf("got %s, want two tools", got.raw)
		}
		bash, read := tools[0].(map[string]any), tools[1].(map[string]any)
		result, _ := bash["result"].(map[string]any)
		if bash["name"] != "Bash" || bash["line"] != 2.0 || result["content"] != "a\nb" || result["line"] != 3.0 ||
			read["name"] != "Read" || read["result"] != nil {
			t.Errorf("got %s", got.raw)
		}
	})
	for _, q := range []string{"since=-1", "since=x", "limit=0", "limit=5001"} {
		t.Run("bad "+q, func(t *testing.T) {
			c.do(http.MethodGet, logs+"/messages?"+q, "").want(t, 400, "bad_request")
		})
	}
	c.do(http.MethodGet, logs+"/raw?since=x", "").want(t, 400, "bad_request")
}
