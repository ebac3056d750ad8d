package workspace_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/libs/svchttp/svchttptest"
	"github.com/svc-code/svc-code/services/chat/internal/store"
	"github.com/svc-code/svc-code/services/chat/internal/workspace"
)

func TestMain(m *testing.M) { svchttptest.VerifyTestMain(m) }

const testSecret = "0123456789abcdef-workspace-tests"

// env is the workspace routes on a fiber app, as chat serves them, over a
// PostgreSQL schema of the test's own with chat's tables.
type env struct {
	t     *testing.T
	app   *fiber.App
	db    *pgxpool.Pool
	store *store.Store
}

// mustEnv applies chat's migrations (every file of internal/app/migrations,
// in order) to a new schema and registers the routes on a new app.
func mustEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	db, err := pgxpool.New(ctx, pgmigratetest.MustSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	files, err := filepath.Glob("../app/migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations: %v %v", files, err)
	}
	sort.Strings(files)
	for _, f := range files {
		sql, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, string(sql)); err != nil {
			t.Fatalf("apply %s: %v", f, err)
		}
	}
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	app := svchttp.New(svchttp.Config{
		Service: "chat", Secret: internalauth.FromString(testSecret), BodyLimit: 4 << 20, Log: log,
	})
	workspace.Register(app, workspace.Deps{DB: db, Log: log})
	return &env{t: t, app: app, db: db, store: store.New(db)}
}

// answer is a response, its body read and decoded.
type answer struct {
	status int
	raw    string
	body   map[string]any
}

func (a answer) str(key string) string {
	s, _ := a.body[key].(string)
	return s
}

func (a answer) list(key string) []any {
	l, _ := a.body[key].([]any)
	return l
}

// want fails the test unless a has status and, for an error, code.
func (a answer) want(t *testing.T, status int, code string) answer {
	t.Helper()
	if a.status != status {
		t.Fatalf("got %d %s, want %d", a.status, a.raw, status)
	}
	if code != "" && a.str("error") != code {
		t.Fatalf("got error %q (%s), want %q", a.str("error"), a.raw, code)
	}
	return a
}

// do sends a JSON body (when not empty) with the internal credential.
func (e *env) do(method, path, body string) answer {
	e.t.Helper()
	return e.send(method, path, body, "application/json")
}

func (e *env) send(method, path, body, contentType string) answer {
	e.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set(protocol.HeaderInternal, testSecret)
	resp, err := e.app.Test(req, -1)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, raw: string(raw)}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		e.t.Fatalf("%s %s: answer is not JSON: %d %s", method, path, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		e.t.Fatalf("%s %s: answer is not a JSON object: %v: %s", method, path, err, raw)
	}
	return a
}

// mustSession stores a session in cwd and returns its id.
func (e *env) mustSession(cwd, title string) string {
	e.t.Helper()
	s, err := e.store.Create(context.Background(), store.NewSession{Cwd: cwd, Provider: "agent-sdk", Title: title})
	if err != nil {
		e.t.Fatal(err)
	}
	return s.ID
}

// mustAppend stores a message in the session's log and returns it.
func (e *env) mustAppend(id, kind, payload string) store.Message {
	e.t.Helper()
	m, err := e.store.AppendMessage(context.Background(), id, kind, json.RawMessage(payload))
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// mustPrompt stores a user prompt as chat does and returns its prompt id.
func (e *env) mustPrompt(id, text string) store.Message {
	e.t.Helper()
	payload, _ := json.Marshal(map[string]any{"role": "user", "content": text})
	return e.mustAppend(id, store.KindUserPrompt, string(payload))
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// count returns the number of rows of a query.
func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}
