package query_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/analytics/internal/query"
	"github.com/svc-code/svc-code/services/analytics/internal/schema"
	"github.com/svc-code/svc-code/services/analytics/internal/store"
	"github.com/svc-code/svc-code/services/analytics/internal/storetest"
)

const secret = "query-test-secret-0123456789"

type env struct {
	t   *testing.T
	db  *pgxpool.Pool
	st  *store.Store
	app *fiber.App
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db, _ := storetest.MustDB(t)
	st := store.New(db)
	app := svchttp.New(svchttp.Config{
		Service: "analytics", Secret: internalauth.FromString(secret), BodyLimit: 1 << 20,
		Log: slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	})
	query.Register(app, st)
	return &env{t: t, db: db, st: st, app: app}
}

// answer is a decoded response.
type answer struct {
	status int
	body   map[string]any
	raw    string
}

func (e *env) do(method, path, body string) answer {
	e.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	req.Header.Set(protocol.HeaderInternal, secret)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.app.Test(req, 10000)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, raw: string(raw)}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

// want checks the status and, for an error, the envelope's code.
func (a answer) want(t *testing.T, status int, code string) answer {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.raw)
	}
	if code != "" && a.body["error"] != code {
		t.Fatalf("error %v, want %q: %s", a.body["error"], code, a.raw)
	}
	return a
}

// seed records turns: two sessions, two projects, two models, three days.
func (e *env) seed() {
	e.t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	turns := []struct {
		session, project, model, prompt, cost string
		line                                  int
		at                                    time.Time
		tools                                 []store.Tool
	}{
		{"s1", "/p/one", "opus", "fix the failing tests in parser", "0.5", 1, t0, []store.Tool{{Name: "Bash", DurationMS: ptr(100), Outcome: "ok"}, {Name: "Edit", DurationMS: ptr(20), Outcome: "ok"}}},
		{"s1", "/p/one", "opus", "run the tests again", "0.25", 3, t0.Add(time.Hour), []store.Tool{{Name: "Bash", DurationMS: ptr(300), Outcome: "error"}}},
		{"s1", "/p/one", "sonnet", "run the tests again", "0.125", 5, t0.Add(24 * time.Hour), nil},
		{"s2", "/p/two", "sonnet", "explain the parser module", "1", 1, t0.Add(48 * time.Hour), []store.Tool{{Name: "Read", DurationMS: nil, Outcome: "denied"}}},
	}
	for i, tt := range turns {
		id := fmt.Sprintf("%s:%d", tt.session, tt.line)
		if err := e.st.RecordStart(ctx, store.TurnStart{
			ID: id, SessionID: tt.session, TurnNumber: i + 1, StartedAt: tt.at, Prompt: tt.prompt,
			Model: tt.model, Provider: "agent-sdk", Cwd: tt.project, Project: tt.project,
		}); err != nil {
			e.t.Fatal(err)
		}
		if err := e.st.RecordEnd(ctx, store.TurnEnd{
			ID: id, SessionID: tt.session, EndedAt: tt.at.Add(time.Minute), DurationMS: 60000, Prompt: tt.prompt,
			Model: tt.model, CostUSD: tt.cost, InputTokens: 10, OutputTokens: 100, ToolCalls: len(tt.tools),
			StopReason: "end_turn", Tools: tt.tools,
		}); err != nil {
			e.t.Fatal(err)
		}
	}
	// A turn still running.
	if err := e.st.RecordStart(ctx, store.TurnStart{ID: "s2:3", SessionID: "s2", StartedAt: t0.Add(49 * time.Hour), Prompt: "still running", Project: "/p/two"}); err != nil {
		e.t.Fatal(err)
	}
}

// testWriter sends the service's log to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func ptr(n int64) *int64 { return &n }

func ids(a answer, key, field string) string {
	list, _ := a.body[key].([]any)
	var out []string
	for _, x := range list {
		m, _ := x.(map[string]any)
		out = append(out, fmt.Sprint(m[field]))
	}
	return strings.Join(out, ",")
}

func TestListTurns(t *testing.T) {
	e := newEnv(t)
	e.seed()
	tests := []struct {
		name, query, want string
	}{
		{"all, newest first", "", "s2:3,s2:1,s1:5,s1:3,s1:1"},
		{"session", "session=s1", "s1:5,s1:3,s1:1"},
		{"project", "project=/p/two", "s2:3,s2:1"},
		{"model", "model=opus", "s1:3,s1:1"},
		{"since", "since=2026-03-02", "s2:3,s2:1,s1:5"},
		{"time range", "since=2026-03-01T10:30:00Z&until=2026-03-03T00:00:00Z", "s1:5,s1:3"},
		{"nothing", "model=none", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := e.do(http.MethodGet, "/api/turns?"+tt.query, "").want(t, 200, "")
			if got := ids(a, "turns", "id"); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}

	// Cursor pagination walks everything once.
	var all []string
	path := "/api/turns?limit=2"
	for range 10 {
		a := e.do(http.MethodGet, path, "").want(t, 200, "")
		all = append(all, ids(a, "turns", "id"))
		next, _ := a.body["next_cursor"].(string)
		if next == "" {
			break
		}
		path = "/api/turns?limit=2&cursor=" + url.QueryEscape(next)
	}
	if got := strings.Join(all, "|"); got != "s2:3,s2:1|s1:5,s1:3|s1:1" {
		t.Errorf("pages %s", got)
	}

	for name, q := range map[string]string{
		"limit 0":                   "limit=0",
		"limit text":                "limit=ten",
		"limit too big":             "limit=501",
		"bad cursor":                "cursor=!!!",
		"cursor, time out of range": "cursor=" + base64.RawURLEncoding.EncodeToString([]byte("-9223372036854775808|s1:1")),
		"cursor, no id":             "cursor=" + base64.RawURLEncoding.EncodeToString([]byte("1772359200000000|")),
		"cursor, NUL in id":         "cursor=" + base64.RawURLEncoding.EncodeToString([]byte("1772359200000000|s1\x00:1")),
		"cursor, id not UTF-8":      "cursor=" + base64.RawURLEncoding.EncodeToString([]byte("1772359200000000|s1\xff:1")),
		"bad since":                 "since=yesterday",
		"since ≥ until":             "since=2026-03-02&until=2026-03-01",
		"unknown param":             "sesion=s1",
	} {
		t.Run(name, func(t *testing.T) {
			e.do(http.MethodGet, "/api/turns?"+q, "").want(t, 400, "bad_request")
		})
	}
}

func TestGetTurn(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.do(http.MethodPost, "/api/turns/s1:1/tags", `{"tags":["good"]}`).want(t, 200, "")
	e.do(http.MethodPost, "/api/turns/sessions/s1/tags", `{"tags":["parser work"]}`).want(t, 200, "")
	a := e.do(http.MethodGet, "/api/turns/s1:1", "").want(t, 200, "")
	for k, want := range map[string]any{
		"id": "s1:1", "session_id": "s1", "turn_number": 1.0, "cost": 0.5, "model": "opus", "provider": "agent-sdk",
		"user_prompt": "fix the failing tests in parser", "tool_calls": 2.0, "is_error": false, "project": "/p/one",
		"started_at": "2026-03-01T10:00:00Z", "ended_at": "2026-03-01T10:01:00Z", "duration_ms": 60000.0,
	} {
		if a.body[k] != want {
			t.Errorf("%s = %v, want %v", k, a.body[k], want)
		}
	}
	if got := fmt.Sprint(a.body["tools"], a.body["tags"], a.body["session_tags"]); got != "[map[duration_ms:100 name:Bash outcome:ok] map[duration_ms:20 name:Edit outcome:ok]] [good] [parser work]" {
		t.Errorf("tools, tags, session_tags = %s", got)
	}
	// Escaped ids work too; unknown ones are 404.
	e.do(http.MethodGet, "/api/turns/s1%3A1", "").want(t, 200, "")
	e.do(http.MethodGet, "/api/turns/s1:999", "").want(t, 404, "not_found")
	e.do(http.MethodGet, "/api/turns/"+strings.Repeat("x", 257), "").want(t, 400, "bad_request")
	e.do(http.MethodGet, "/api/turns/a%00b", "").want(t, 400, "bad_request")
	// Running turn: no end.
	if a := e.do(http.MethodGet, "/api/turns/s2:3", "").want(t, 200, ""); a.body["ended_at"] != nil || a.body["duration_ms"] != nil {
		t.Errorf("running turn ended_at %v duration %v, want null", a.body["ended_at"], a.body["duration_ms"])
	}
}

func TestTags(t *testing.T) {
	e := newEnv(t)
	e.seed()
	a := e.do(http.MethodPost, "/api/turns/s1:1/tags", `{"tags":["b","a","b"]}`).want(t, 200, "")
	if got := fmt.Sprint(a.body["tags"]); got != "[a b]" {
		t.Errorf("tags after add = %s, want [a b]", got)
	}
	e.do(http.MethodPost, "/api/turns/s1:1/tags", `{"tags":["c"]}`).want(t, 200, "")
	a = e.do(http.MethodDelete, "/api/turns/s1:1/tags/b", "").want(t, 200, "")
	if got := fmt.Sprint(a.body["tags"]); got != "[a c]" {
		t.Errorf("tags after remove = %s, want [a c]", got)
	}
	if got := fmt.Sprint(e.do(http.MethodGet, "/api/turns/s1:1/tags", "").want(t, 200, "").body["tags"]); got != "[a c]" {
		t.Errorf("GET tags = %s", got)
	}
	e.do(http.MethodPost, "/api/turns/sessions/s2/tags", `{"tags":["needs review"]}`).want(t, 200, "")
	if got := fmt.Sprint(e.do(http.MethodGet, "/api/turns/sessions/s2/tags", "").want(t, 200, "").body["tags"]); got != "[needs review]" {
		t.Errorf("session tags = %s", got)
	}
	// Filtering by tag: the turn's own, and its session's.
	if got := ids(e.do(http.MethodGet, "/api/turns?tag=a", "").want(t, 200, ""), "turns", "id"); got != "s1:1" {
		t.Errorf("tag=a: %s", got)
	}
	if got := ids(e.do(http.MethodGet, "/api/turns?tag=needs+review", "").want(t, 200, ""), "turns", "id"); got != "s2:3,s2:1" {
		t.Errorf("tag=needs review: %s", got)
	}
	all := e.do(http.MethodGet, "/api/turns/tags", "").want(t, 200, "")
	if got := fmt.Sprint(all.body["tags"]); got != "[map[sessions:0 tag:a turns:1] map[sessions:0 tag:c turns:1] map[sessions:1 tag:needs review turns:0]]" {
		t.Errorf("all tags = %s", got)
	}
	e.do(http.MethodDelete, "/api/turns/sessions/s2/tags/needs%20review", "").want(t, 200, "")

	before := e.do(http.MethodGet, "/api/turns/tags", "").raw
	for _, tt := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"unknown turn", "POST", "/api/turns/x:1/tags", `{"tags":["a"]}`, 404, "not_found"},
		{"unknown session", "POST", "/api/turns/sessions/nope/tags", `{"tags":["a"]}`, 404, "not_found"},
		{"list unknown turn", "GET", "/api/turns/x:1/tags", "", 404, "not_found"},
		{"tag not set", "DELETE", "/api/turns/s1:1/tags/zzz", "", 404, "not_found"},
		{"empty list", "POST", "/api/turns/s1:1/tags", `{"tags":[]}`, 400, "bad_request"},
		{"empty tag", "POST", "/api/turns/s1:1/tags", `{"tags":[""]}`, 400, "bad_request"},
		{"long tag", "POST", "/api/turns/s1:1/tags", `{"tags":["` + strings.Repeat("x", 65) + `"]}`, 400, "bad_request"},
		{"control char", "POST", "/api/turns/s1:1/tags", `{"tags":["a\nb"]}`, 400, "bad_request"},
		{"spaces around", "POST", "/api/turns/s1:1/tags", `{"tags":[" a"]}`, 400, "bad_request"},
		{"unknown field", "POST", "/api/turns/s1:1/tags", `{"tags":["a"],"x":1}`, 400, "bad_request"},
		{"not JSON", "POST", "/api/turns/s1:1/tags", `tags=a`, 400, "bad_request"},
		{"trailing data", "POST", "/api/turns/s1:1/tags", `{"tags":["a"]} {}`, 400, "bad_request"},
		{"tags not a list", "POST", "/api/turns/s1:1/tags", `{"tags":"a"}`, 400, "bad_request"},
		{"wrong method", "PUT", "/api/turns/s1:1/tags", `{"tags":["a"]}`, 405, "method_not_allowed"},
		{"unknown query parameter", "POST", "/api/turns/s1:1/tags?force=1", `{"tags":["a"]}`, 400, "bad_request"},
		{"unknown turn, remove", "DELETE", "/api/turns/x:1/tags/a", "", 404, "not_found"},
		{"session tag not set", "DELETE", "/api/turns/sessions/s1/tags/zzz", "", 404, "not_found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e.do(tt.method, tt.path, tt.body).want(t, tt.status, tt.code)
		})
	}
	if after := e.do(http.MethodGet, "/api/turns/tags", "").raw; after != before {
		t.Errorf("bad requests changed the tags:\n%s\n%s", before, after)
	}
	// No JSON content type.
	req := httptest.NewRequest(http.MethodPost, "/api/turns/s1:1/tags", strings.NewReader(`{"tags":["a"]}`))
	req.Header.Set(protocol.HeaderInternal, secret)
	resp, err := e.app.Test(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text body: status %d, want 415", resp.StatusCode)
	}
	// Too many tags on one turn.
	many := make([]string, store.MaxTags)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("t%d", i))
	}
	e.do(http.MethodPost, "/api/turns/s1:3/tags", `{"tags":[`+strings.Join(many, ",")+`]}`).want(t, 200, "")
	e.do(http.MethodPost, "/api/turns/s1:3/tags", `{"tags":["one more"]}`).want(t, 409, "conflict")
}

func TestStatsAndSchema(t *testing.T) {
	e := newEnv(t)
	e.seed()
	a := e.do(http.MethodGet, "/api/shadow-db", "").want(t, 200, "")
	if a.body["turns"] != 5.0 || a.body["sessions"] != 2.0 || a.body["oldest_turn"] != "2026-03-01T10:00:00Z" || a.body["newest_turn"] != "2026-03-03T11:00:00Z" {
		t.Errorf("stats = %s", a.raw)
	}
	tables, _ := a.body["tables"].([]any)
	if len(tables) != len(schema.Tables) {
		t.Fatalf("stats tables = %v, want %v", tables, schema.Tables)
	}
	rows := map[string]float64{}
	for _, x := range tables {
		m := x.(map[string]any)
		rows[m["name"].(string)] = m["rows"].(float64)
	}
	if rows["turns"] != 5 || rows["turn_tools"] != 4 || rows["turn_costs"] != 4 {
		t.Errorf("row counts %v", rows)
	}
	s := e.do(http.MethodGet, "/api/shadow-db/schema", "").want(t, 200, "")
	if got := ids(s, "tables", "name"); got != strings.Join(schema.Tables, ",") {
		t.Errorf("schema tables %s, want %v", got, schema.Tables)
	}
	e.do(http.MethodGet, "/api/shadow-db?x=1", "").want(t, 400, "bad_request")
}

// TestSchemaMatchesDatabase keeps internal/schema equal to the migrated
// tables: every documented column exists with its type and nullability,
// and nothing undocumented exists.
func TestSchemaMatchesDatabase(t *testing.T) {
	e := newEnv(t)
	for _, tab := range schema.Describe() {
		rows, err := e.db.Query(context.Background(), `
SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull
FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, tab.Name)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var name, typ string
			var null bool
			if err := rows.Scan(&name, &typ, &null); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%s %s %v", name, typ, null))
		}
		var want []string
		for _, c := range tab.Columns {
			want = append(want, fmt.Sprintf("%s %s %v", c.Name, c.Type, c.Nullable))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("table %s:\ndatabase:\n%s\nschema package:\n%s", tab.Name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestCosts(t *testing.T) {
	e := newEnv(t)
	e.seed()
	a := e.do(http.MethodGet, "/api/costs", "").want(t, 200, "")
	if a.body["cost"] != 1.875 || a.body["turns"] != 4.0 || a.body["output_tokens"] != 400.0 {
		t.Errorf("summary = %s", a.raw)
	}
	if got := ids(a, "by_model", "model"); got != "sonnet,opus" {
		t.Errorf("by_model = %s", got)
	}
	if got := e.do(http.MethodGet, "/api/costs?project=/p/one", "").want(t, 200, "").body["cost"]; got != 0.875 {
		t.Errorf("project cost = %v", got)
	}
	s := e.do(http.MethodGet, "/api/costs/sessions", "").want(t, 200, "")
	if got := ids(s, "sessions", "session_id") + " " + ids(s, "sessions", "cost"); got != "s2,s1 1,0.875" {
		t.Errorf("sessions = %s", got)
	}
	tools := e.do(http.MethodGet, "/api/costs/tools", "").want(t, 200, "")
	list := tools.body["tools"].([]any)
	bash := list[0].(map[string]any)
	if bash["name"] != "Bash" || bash["calls"] != 2.0 || bash["errors"] != 1.0 || bash["total_duration_ms"] != 400.0 ||
		bash["turns"] != 2.0 || bash["turns_cost"] != 0.75 || bash["attributed_cost"] != 0.5 {
		t.Errorf("Bash = %v", bash)
	}
	var attributed float64
	for _, x := range list {
		attributed += x.(map[string]any)["attributed_cost"].(float64)
	}
	if attributed != 1.75 { // every turn with tools: 0.5 + 0.25 + 1
		t.Errorf("attributed costs add up to %v, want 1.75", attributed)
	}
	tr := e.do(http.MethodGet, "/api/costs/trends?since=2026-03-01", "").want(t, 200, "")
	if got := ids(tr, "trends", "day") + " " + ids(tr, "trends", "model") + " " + ids(tr, "trends", "cost"); got != "2026-03-01,2026-03-02,2026-03-03 opus,sonnet,sonnet 0.75,0.125,1" {
		t.Errorf("trends = %s", got)
	}
	// Default span: the last 30 days, which holds none of the seeded turns
	// unless the clock says March 2026.
	e.do(http.MethodGet, "/api/costs/trends", "").want(t, 200, "")
	for _, p := range []string{"/api/costs?since=x", "/api/costs/sessions?limit=-1", "/api/costs/tools?until=2026-13-01", "/api/costs/trends?bogus=1", "/api/costs/trends?until=2000-01-01"} {
		e.do(http.MethodGet, p, "").want(t, 400, "bad_request")
	}
}

func TestPrompts(t *testing.T) {
	e := newEnv(t)
	e.seed()
	a := e.do(http.MethodGet, "/api/prompts/search?q=parser", "").want(t, 200, "")
	if got := ids(a, "prompts", "turn_id"); got != "s2:1,s1:1" && got != "s1:1,s2:1" {
		t.Errorf("search parser = %s", got)
	}
	// Stemming: "test" finds "tests".
	if got := ids(e.do(http.MethodGet, "/api/prompts/search?q=test&session=s1", "").want(t, 200, ""), "prompts", "turn_id"); len(strings.Split(got, ",")) != 3 {
		t.Errorf("search test in s1 = %s", got)
	}
	if got := ids(e.do(http.MethodGet, "/api/prompts/search?q=%22run+the+tests%22+-parser", "").want(t, 200, ""), "prompts", "turn_id"); got != "s1:5,s1:3" {
		t.Errorf("phrase minus word = %s, want s1:5,s1:3", got)
	}
	first := a.body["prompts"].([]any)[0].(map[string]any)
	if s, _ := first["snippet"].(string); !strings.Contains(s, "[[parser]]") || first["rank"] == nil {
		t.Errorf("search result %v lacks its snippet or rank", first)
	}
	if got := ids(e.do(http.MethodGet, "/api/prompts/recent?limit=2", "").want(t, 200, ""), "prompts", "turn_id"); got != "s2:3,s2:1" {
		t.Errorf("recent = %s", got)
	}
	f := e.do(http.MethodGet, "/api/prompts/frequent", "").want(t, 200, "")
	if got := ids(f, "prompts", "prompt") + " " + ids(f, "prompts", "count"); !strings.HasPrefix(got, "run the tests again,") || !strings.Contains(got, " 2,1,1,1") {
		t.Errorf("frequent = %s", got)
	}
	st := e.do(http.MethodGet, "/api/prompts/stats", "").want(t, 200, "")
	if st.body["prompts"] != 5.0 || st.body["distinct"] != 4.0 || st.body["sessions"] != 2.0 {
		t.Errorf("stats = %s", st.raw)
	}
	for _, p := range []string{"/api/prompts/search", "/api/prompts/search?q=+++", "/api/prompts/search?q=a&limit=0", "/api/prompts/recent?since=bad", "/api/prompts/frequent?foo=bar", "/api/prompts/stats?until=x", "/api/prompts/search?q=" + strings.Repeat("a", 1001)} {
		e.do(http.MethodGet, p, "").want(t, 400, "bad_request")
	}
	e.do(http.MethodGet, "/api/prompts/nope", "").want(t, 404, "not_found")
	// Search syntax PostgreSQL would choke on is just text.
	e.do(http.MethodGet, "/api/prompts/search?q="+url.QueryEscape(`'):* & | !( "`), "").want(t, 200, "")
}
