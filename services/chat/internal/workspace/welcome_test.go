package workspace_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/store"
	"github.com/svc-code/svc-code/services/chat/internal/workspace"
)

// editBlock is an assistant message with tool_use blocks, as Claude Code
// logs it.
func editBlock(tools ...string) string {
	return `{"type":"assistant","message":{"role":"assistant","content":[` + strings.Join(tools, ",") + `]}}`
}

func TestWelcomeSessions(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	old := e.mustSession("/srv/alpha", "old one")
	e.mustPrompt(old, "first question")
	busy := e.mustSession("/srv/beta", "busy one")
	e.mustAppend(busy, store.KindNotice, `{"notice":"started"}`)
	e.mustPrompt(busy, "make the parser faster\nand more")
	e.mustPrompt(busy, "second prompt")
	e.mustAppend(busy, store.KindAgent, editBlock(
		`{"type":"text","text":"ok"}`,
		`{"type":"tool_use","id":"1","name":"Edit","input":{"file_path":"/srv/beta/a.go","old_string":"x","new_string":"y"}}`,
		`{"type":"tool_use","id":"2","name":"Write","input":{"file_path":"/srv/beta/b.go","content":""}}`,
		`{"type":"tool_use","id":"3","name":"Read","input":{"file_path":"/srv/beta/c.go"}}`,
	))
	e.mustAppend(busy, store.KindAgent, editBlock(
		`{"type":"tool_use","id":"4","name":"MultiEdit","input":{"file_path":"/srv/beta/a.go","edits":[]}}`,
		`{"type":"tool_use","id":"5","name":"NotebookEdit","input":{"notebook_path":"/srv/beta/n.ipynb"}}`,
	))
	e.mustAppend(busy, store.KindAgent, `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"1"}]}}`)
	e.mustAppend(busy, store.KindAgent, `{"type":"assistant","message":{"content":"plain text"}}`)
	if _, err := e.store.RecordTurn(ctx, busy, 0.25); err != nil {
		t.Fatal(err)
	}
	archived := e.mustSession("/srv/alpha", "archived")
	if _, err := e.store.SetArchived(ctx, archived, true); err != nil {
		t.Fatal(err)
	}
	e.do(http.MethodPut, "/api/favorites/sessions/"+busy, `{}`).want(t, http.StatusOK, "")

	got := e.do(http.MethodGet, "/api/welcome/sessions", "").want(t, http.StatusOK, "")
	sessions := got.list("sessions")
	if len(sessions) != 2 {
		t.Fatalf("welcome sessions %s, want the 2 not archived", got.raw)
	}
	first := sessions[0].(map[string]any)
	if first["session_id"] != busy || first["project"] != "/srv/beta" || first["project_name"] != "beta" ||
		first["title"] != "busy one" || first["first_prompt"] != "make the parser faster\nand more" ||
		first["cost_usd"] != 0.25 || first["turns"] != 1.0 || first["files_changed"] != 3.0 || first["is_favorite"] != true {
		t.Errorf("busy session %v", first)
	}
	second := sessions[1].(map[string]any)
	if second["session_id"] != old || second["files_changed"] != 0.0 || second["first_prompt"] != "first question" {
		t.Errorf("old session %v", second)
	}

	t.Run("a fork counts its copied files", func(t *testing.T) {
		fork, err := e.store.Fork(ctx, busy)
		if err != nil {
			t.Fatal(err)
		}
		got := e.do(http.MethodGet, "/api/welcome/sessions?limit=1", "").want(t, http.StatusOK, "")
		if s := got.list("sessions"); len(s) != 1 || s[0].(map[string]any)["session_id"] != fork.ID || s[0].(map[string]any)["files_changed"] != 3.0 {
			t.Errorf("after fork %s", got.raw)
		}
	})
	t.Run("by project", func(t *testing.T) {
		got := e.do(http.MethodGet, "/api/welcome/sessions?cwd=/srv/alpha/", "").want(t, http.StatusOK, "")
		if s := got.list("sessions"); len(s) != 1 || s[0].(map[string]any)["session_id"] != old {
			t.Errorf("alpha %s", got.raw)
		}
	})
	for _, q := range []string{"limit=0", "limit=101", "limit=x", "cwd=rel"} {
		e.do(http.MethodGet, "/api/welcome/sessions?"+q, "").want(t, http.StatusBadRequest, "bad_request")
	}
}

func TestWelcomeProjects(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	a1 := e.mustSession("/srv/alpha", "")
	e.mustSession("/srv/beta", "")
	a2 := e.mustSession("/srv/alpha", "")
	if _, err := e.store.SetArchived(ctx, a1, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.RecordTurn(ctx, a2, 1.5); err != nil {
		t.Fatal(err)
	}
	got := e.do(http.MethodGet, "/api/welcome/projects", "").want(t, http.StatusOK, "")
	projects := got.list("projects")
	if len(projects) != 2 {
		t.Fatalf("projects %s", got.raw)
	}
	alpha := projects[0].(map[string]any)
	if alpha["cwd"] != "/srv/alpha" || alpha["name"] != "alpha" || alpha["sessions"] != 1.0 || alpha["archived_sessions"] != 1.0 ||
		alpha["cost_usd"] != 1.5 || alpha["turns"] != 1.0 {
		t.Errorf("alpha %v", alpha)
	}
	last, err := time.Parse(time.RFC3339Nano, alpha["last_activity"].(string))
	if err != nil || time.Since(last) > time.Minute {
		t.Errorf("last_activity %v (%v)", alpha["last_activity"], err)
	}
	if got := e.do(http.MethodGet, "/api/welcome/projects?limit=1", ""); len(got.list("projects")) != 1 {
		t.Errorf("limit=1 %s", got.raw)
	}
	e.do(http.MethodGet, "/api/welcome/projects?limit=-1", "").want(t, http.StatusBadRequest, "bad_request")
}

func TestWelcomeSearch(t *testing.T) {
	e := mustEnv(t)
	parser := e.mustSession("/srv/alpha", "Parser rewrite")
	other := e.mustSession("/srv/beta", "Deploy scripts")
	p := e.mustPrompt(other, "the parsers are slow when the input has long lines")
	e.mustPrompt(other, "unrelated words entirely")
	e.mustPrompt(parser, "start")

	got := e.do(http.MethodPost, "/api/welcome/search", `{"query":"parser"}`).want(t, http.StatusOK, "")
	results := got.list("results")
	if len(results) != 2 {
		t.Fatalf("results %s, want the title and the prompt", got.raw)
	}
	title, prompt := results[0].(map[string]any), results[1].(map[string]any)
	if title["kind"] != "session" || title["session_id"] != parser || title["prompt_id"] != nil || title["title"] != "Parser rewrite" {
		t.Errorf("first hit %v, want the title (ranked above a prompt)", title)
	}
	if prompt["kind"] != "prompt" || prompt["prompt_id"] != p.SID() || prompt["cwd"] != "/srv/beta" ||
		!strings.Contains(prompt["snippet"].(string), "**parsers**") || prompt["rank"].(float64) <= 0 {
		t.Errorf("second hit %v, want the stemmed prompt with a highlighted snippet", prompt)
	}
	if title["rank"].(float64) <= prompt["rank"].(float64) {
		t.Errorf("title rank %v not above prompt rank %v", title["rank"], prompt["rank"])
	}

	t.Run("filters", func(t *testing.T) {
		got := e.do(http.MethodPost, "/api/welcome/search", `{"query":"parser","cwd":"/srv/beta","limit":5}`).want(t, http.StatusOK, "")
		if r := got.list("results"); len(r) != 1 || r[0].(map[string]any)["session_id"] != other {
			t.Errorf("cwd filter %s", got.raw)
		}
		got = e.do(http.MethodPost, "/api/welcome/search", `{"query":"parser","limit":1}`).want(t, http.StatusOK, "")
		if len(got.list("results")) != 1 {
			t.Errorf("limit %s", got.raw)
		}
		got = e.do(http.MethodPost, "/api/welcome/search", `{"query":"\"long lines\" -deploy"}`).want(t, http.StatusOK, "")
		if len(got.list("results")) != 1 {
			t.Errorf("phrase %s", got.raw)
		}
		got = e.do(http.MethodPost, "/api/welcome/search", `{"query":"the"}`).want(t, http.StatusOK, "")
		if len(got.list("results")) != 0 {
			t.Errorf("stop word %s", got.raw)
		}
		got = e.do(http.MethodPost, "/api/welcome/search", `{"query":"nowhere"}`).want(t, http.StatusOK, "")
		if len(got.list("results")) != 0 {
			t.Errorf("no match %s", got.raw)
		}
	})

	bad := []struct{ name, contentType, body string }{
		{"empty query", "application/json", `{"query":""}`},
		{"blank query", "application/json", `{"query":"  "}`},
		{"no query", "application/json", `{"limit":3}`},
		{"query too long", "application/json", `{"query":"` + strings.Repeat("a", 501) + `"}`},
		{"limit zero", "application/json", `{"query":"x","limit":0}`},
		{"limit too big", "application/json", `{"query":"x","limit":1000}`},
		{"relative cwd", "application/json", `{"query":"x","cwd":"srv"}`},
		{"unknown field", "application/json", `{"query":"x","sort":"date"}`},
		{"malformed", "application/json", `{"query":`},
		{"empty body", "application/json", ``},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			e.send(http.MethodPost, "/api/welcome/search", tt.body, tt.contentType).want(t, http.StatusBadRequest, "bad_request")
		})
	}
	e.send(http.MethodPost, "/api/welcome/search", `{"query":"x"}`, "text/plain").want(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
}

// TestSearchUsesIndexes checks that the search query's expressions are the
// indexed ones: with sequential scans discouraged, the plan reads both
// full-text indexes.
func TestSearchUsesIndexes(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	tx, err := e.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `EXPLAIN `+workspace.SearchSQL, "parser", "", 20)
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, index := range []string{"sessions_title_fts_idx", "session_messages_prompt_fts_idx"} {
		if !strings.Contains(plan.String(), index) {
			t.Errorf("the plan does not use %s:\n%s", index, plan.String())
		}
	}
}
