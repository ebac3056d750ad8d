package shadowapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/pgmigrate"
	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/shadow/internal/journal"
	"github.com/svc-code/svc-code/services/shadow/internal/project"
	"github.com/svc-code/svc-code/services/shadow/internal/shadowapi"
)

const testSecret = "0123456789abcdef-shadowapi-tests"

type env struct {
	t       *testing.T
	app     *fiber.App
	home    string
	project string
	journal *journal.Journal
	turns   *journal.Turns
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgmigratetest.MustSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pgmigrate.Apply(ctx, pool, "shadow", os.DirFS("../app/migrations")); err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	e := &env{t: t, home: t.TempDir(), project: dir, turns: journal.NewTurns(pool)}
	e.journal = journal.New(project.NewStore(e.home, nil), log, journal.Options{})
	t.Cleanup(e.journal.Wait)
	e.app = svchttp.New(svchttp.Config{
		Service: "shadow", Secret: internalauth.FromString(testSecret), BodyLimit: 1 << 20, Log: log,
	})
	shadowapi.Register(e.app, shadowapi.Deps{Journal: e.journal, Turns: e.turns, Log: log})
	return e
}

func (e *env) write(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.project, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.project, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// turn journals one turn of session s1 through the consumer, as the
// stream would deliver it.
func (e *env) turn(n int, prompt string, change func()) {
	e.t.Helper()
	c := journal.NewConsumer(nil, "", e.journal, e.turns, nil, slog.New(slog.DiscardHandler), journal.ConsumerOptions{})
	now := time.Now()
	id := "s1:" + string(rune('0'+n))
	ctx := context.Background()
	if err := c.Handle(ctx, journal.Event{Kind: "turn_started", SessionID: "s1", TurnID: id, Prompt: prompt, Cwd: e.project, At: now, Added: now}); err != nil {
		e.t.Fatal(err)
	}
	change()
	if err := c.Handle(ctx, journal.Event{Kind: "turn_ended", SessionID: "s1", TurnID: id, Prompt: prompt, At: now, Added: now}); err != nil {
		e.t.Fatal(err)
	}
}

type answer struct {
	status int
	body   []byte
}

func (e *env) do(method, path string, q url.Values, body any) answer {
	e.t.Helper()
	if q == nil {
		q = url.Values{}
	}
	if !q.Has("cwd") {
		q.Set("cwd", e.project)
	}
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			rd = strings.NewReader(b)
		default:
			data, _ := json.Marshal(b)
			rd = bytes.NewReader(data)
		}
	}
	req := httptest.NewRequest(method, path+"?"+q.Encode(), rd)
	req.Header.Set(protocol.HeaderInternal, testSecret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.app.Test(req, -1)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, data}
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
}

func (a answer) want(t *testing.T, status int, code string) {
	t.Helper()
	var eb protocol.ErrorBody
	_ = json.Unmarshal(a.body, &eb)
	if a.status != status || eb.Error != code {
		t.Errorf("answer %d %s, want %d %s", a.status, a.body, status, code)
	}
}

// setup journals two turns: turn 1 edits a.txt and adds b.txt, turn 2
// edits a.txt again.
func setup(t *testing.T) *env {
	e := newEnv(t)
	e.write("a.txt", "alpha\n")
	e.turn(1, "add beta\nsecond line", func() {
		e.write("a.txt", "alpha\nneedle one\n")
		cmd := exec.Command("sh", "-c", "echo made by bash > b.txt")
		cmd.Dir = e.project
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
	})
	e.turn(2, "edit again", func() { e.write("a.txt", "alpha\nneedle two\n") })
	return e
}

func TestReadRoutes(t *testing.T) {
	e := setup(t)

	var br struct {
		Branches []journal.Branch `json:"branches"`
	}
	a := e.do("GET", "/api/shadow/branches", nil, nil)
	a.decode(t, &br)
	if a.status != 200 || len(br.Branches) != 1 || br.Branches[0].Name != "session/s1" ||
		br.Branches[0].Commits != 3 || br.Branches[0].SessionCommits != 3 {
		t.Errorf("branches: %d %s", a.status, a.body)
	}

	var lg struct {
		Commits []journal.Commit `json:"commits"`
	}
	a = e.do("GET", "/api/shadow/log", url.Values{"session": {"s1"}, "path": {"b.txt"}}, nil)
	a.decode(t, &lg)
	if len(lg.Commits) != 1 || lg.Commits[0].Turn != 1 || lg.Commits[0].Kind != "turn" || lg.Commits[0].Files[0].Path != "b.txt" {
		t.Errorf("log by session and path: %s", a.body)
	}

	var sr struct {
		Hits []journal.Hit `json:"hits"`
	}
	a = e.do("GET", "/api/shadow/search", url.Values{"q": {"NEEDLE"}}, nil)
	a.decode(t, &sr)
	if len(sr.Hits) != 2 || sr.Hits[0].Turn != 2 || len(sr.Hits[0].Matches) != 2 {
		t.Errorf("search: %s", a.body)
	}
	a = e.do("GET", "/api/shadow/search", url.Values{"q": {"needle t.o"}, "regex": {"true"}, "case": {"true"}}, nil)
	a.decode(t, &sr)
	if len(sr.Hits) != 1 || sr.Hits[0].Matches[0] != (journal.Match{Path: "a.txt", Side: "+", Line: "needle two"}) {
		t.Errorf("regex search: %s", a.body)
	}

	var tl struct {
		Versions []journal.Version `json:"versions"`
	}
	a = e.do("GET", "/api/shadow/timeline", url.Values{"path": {"a.txt"}}, nil)
	a.decode(t, &tl)
	if len(tl.Versions) != 3 || tl.Versions[0].Turn != 2 || tl.Versions[0].Session != "s1" || tl.Versions[2].Kind != "baseline" ||
		tl.Versions[0].Size != int64(len("alpha\nneedle two\n")) {
		t.Errorf("timeline: %s", a.body)
	}

	var f struct {
		Content, Encoding string
	}
	a = e.do("GET", "/api/shadow/file", url.Values{"path": {"a.txt"}, "commit": {tl.Versions[1].SHA}}, nil)
	a.decode(t, &f)
	if f.Content != "alpha\nneedle one\n" || f.Encoding != "utf-8" {
		t.Errorf("file: %s", a.body)
	}

	var d journal.TurnChanges
	a = e.do("GET", "/api/shadow/diff", url.Values{"commit": {"session/s1"}}, nil)
	a.decode(t, &d)
	if len(d.Diffs) != 1 || d.Diffs[0].Additions != 1 || d.Diffs[0].Deletions != 1 || !strings.Contains(d.Diffs[0].Diff, "+needle two") {
		t.Errorf("diff: %s", a.body)
	}

	var ch struct {
		Turns []journal.TurnChanges `json:"turns"`
	}
	a = e.do("GET", "/api/sessions/s1/changes", url.Values{}, nil)
	a.decode(t, &ch)
	if a.status != 200 || len(ch.Turns) != 2 || ch.Turns[0].Turn != 1 || len(ch.Turns[0].Diffs) != 2 ||
		ch.Turns[0].Diffs[1].Path != "b.txt" || ch.Turns[0].Diffs[1].Status != "A" {
		t.Errorf("changes: %s", a.body)
	}
	e.do("GET", "/api/sessions/nobody/changes", nil, nil).want(t, 404, "not_found")
}

func TestUndoRoute(t *testing.T) {
	e := setup(t)
	e.write("a.txt", "the user's\n")
	a := e.do("POST", "/api/shadow/undo", nil, map[string]any{"session_id": "s1"})
	var conflict struct {
		Error     string             `json:"error"`
		Conflicts []journal.Conflict `json:"conflicts"`
	}
	a.decode(t, &conflict)
	if a.status != http.StatusConflict || conflict.Error != "conflict" || len(conflict.Conflicts) != 1 || conflict.Conflicts[0].Path != "a.txt" {
		t.Fatalf("undo over a user edit: %d %s", a.status, a.body)
	}
	if e.read("a.txt") != "the user's\n" {
		t.Fatal("a refused undo wrote a.txt")
	}
	e.write("a.txt", "alpha\nneedle two\n")
	a = e.do("POST", "/api/shadow/undo", nil, map[string]any{"session_id": "s1"})
	if a.status != 200 || e.read("a.txt") != "alpha\nneedle one\n" {
		t.Fatalf("undo: %d %s", a.status, a.body)
	}
}

func TestBadInput(t *testing.T) {
	e := setup(t)
	other := t.TempDir()
	outside := filepath.Join(filepath.Dir(e.project), "x.txt")
	tests := []struct {
		name, method, path string
		q                  url.Values
		body               any
		status             int
		code               string
	}{
		{"no cwd", "GET", "/api/shadow/log", url.Values{"cwd": {""}}, nil, 400, "bad_request"},
		{"relative cwd", "GET", "/api/shadow/log", url.Values{"cwd": {"rel/dir"}}, nil, 400, "bad_request"},
		{"missing cwd", "GET", "/api/shadow/log", url.Values{"cwd": {other + "/nope"}}, nil, 404, "not_found"},
		{"unknown project", "GET", "/api/shadow/branches", url.Values{"cwd": {other}}, nil, 404, "not_found"},
		{"log bad session", "GET", "/api/shadow/log", url.Values{"session": {"../x"}}, nil, 400, "bad_request"},
		{"log unknown session", "GET", "/api/shadow/log", url.Values{"session": {"nobody"}}, nil, 404, "not_found"},
		{"log bad limit", "GET", "/api/shadow/log", url.Values{"limit": {"0"}}, nil, 400, "bad_request"},
		{"log path outside", "GET", "/api/shadow/log", url.Values{"path": {"../x"}}, nil, 403, "forbidden"},
		{"search no pattern", "GET", "/api/shadow/search", url.Values{}, nil, 400, "bad_request"},
		{"search bad regex", "GET", "/api/shadow/search", url.Values{"q": {"a(b"}, "regex": {"true"}}, nil, 400, "bad_request"},
		{"search bad bool", "GET", "/api/shadow/search", url.Values{"q": {"a"}, "regex": {"maybe"}}, nil, 400, "bad_request"},
		{"timeline no path", "GET", "/api/shadow/timeline", url.Values{}, nil, 400, "bad_request"},
		{"timeline .git", "GET", "/api/shadow/timeline", url.Values{"path": {".git/config"}}, nil, 400, "bad_request"},
		{"file unknown commit", "GET", "/api/shadow/file", url.Values{"path": {"a.txt"}, "commit": {"deadbeef"}}, nil, 404, "not_found"},
		{"file bad revision", "GET", "/api/shadow/file", url.Values{"path": {"a.txt"}, "commit": {"--output=/tmp/x"}}, nil, 400, "bad_request"},
		{"file absent", "GET", "/api/shadow/file", url.Values{"path": {"zzz.txt"}, "commit": {"session/s1"}}, nil, 404, "not_found"},
		{"diff no commit", "GET", "/api/shadow/diff", url.Values{}, nil, 400, "bad_request"},
		{"undo no session", "POST", "/api/shadow/undo", nil, map[string]any{}, 400, "bad_request"},
		{"undo unknown field", "POST", "/api/shadow/undo", nil, map[string]any{"session_id": "s1", "x": 1}, 400, "bad_request"},
		{"undo not json", "POST", "/api/shadow/undo", nil, "session_id=s1", 400, "bad_request"},
		{"undo unknown session", "POST", "/api/shadow/undo", nil, map[string]any{"session_id": "nobody"}, 404, "not_found"},
		{"restore unknown commit", "POST", "/api/shadow/restore", nil, map[string]any{"commit": "0123456789abcdef0123456789abcdef01234567"}, 404, "not_found"},
		{"restore bad revision", "POST", "/api/shadow/restore", nil, map[string]any{"commit": "-p"}, 400, "bad_request"},
		{"restore outside", "POST", "/api/shadow/restore", nil, map[string]any{"commit": "session/s1~2", "path": outside}, 403, "forbidden"},
		{"restore traversal", "POST", "/api/shadow/restore", nil, map[string]any{"commit": "session/s1~2", "path": "a/../../x"}, 403, "forbidden"},
		{"restore no commit", "POST", "/api/shadow/restore", nil, map[string]any{"path": "a.txt"}, 400, "bad_request"},
		{"changes bad id", "GET", "/api/sessions/..%2Fx/changes", nil, nil, 400, "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.do(tt.method, tt.path, tt.q, tt.body).want(t, tt.status, tt.code)
		})
	}
	if e.read("a.txt") != "alpha\nneedle two\n" || e.read("b.txt") != "made by bash\n" {
		t.Error("bad input changed files")
	}
	var br struct {
		Branches []journal.Branch `json:"branches"`
	}
	e.do("GET", "/api/shadow/branches", nil, nil).decode(t, &br)
	if len(br.Branches) != 1 || br.Branches[0].Commits != 3 {
		t.Errorf("bad input changed the journal: %+v", br.Branches)
	}
}

func TestRestoreRoute(t *testing.T) {
	e := setup(t)
	a := e.do("POST", "/api/shadow/restore", nil, map[string]any{"commit": "session/s1~2", "path": "a.txt"})
	if a.status != 200 || e.read("a.txt") != "alpha\n" {
		t.Fatalf("restore: %d %s", a.status, a.body)
	}
	e.write("b.txt", "edited\n")
	a = e.do("POST", "/api/shadow/restore", nil, map[string]any{"commit": "session/s1~2"})
	if a.status != 409 || e.read("b.txt") != "edited\n" {
		t.Fatalf("restore over a user edit: %d %s", a.status, a.body)
	}
	a = e.do("POST", "/api/shadow/restore", nil, map[string]any{"commit": "session/s1~2", "force": true})
	if _, err := os.Stat(filepath.Join(e.project, "b.txt")); a.status != 200 || !os.IsNotExist(err) {
		t.Fatalf("forced restore: %d %s", a.status, a.body)
	}
}
