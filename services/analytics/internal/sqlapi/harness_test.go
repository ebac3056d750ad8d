package sqlapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
)

const testSecret = "sqlapi-test-internal-secret"

// testTables are the tables the test role may read, like schema.Tables.
var testTables = []string{"probe_turns", "probe_tags"}

// setupSQL creates the test tables: probe_turns and probe_tags are
// granted to the read-only role, probe_secret is not.
const setupSQL = `
CREATE TABLE probe_turns (
	id bigserial PRIMARY KEY,
	session_id text NOT NULL,
	cost numeric(20,10) NOT NULL,
	started_at timestamptz NOT NULL,
	is_error boolean NOT NULL,
	tags text[],
	meta jsonb,
	note text
);
CREATE TABLE probe_tags (turn_id bigint NOT NULL, tag text NOT NULL);
CREATE TABLE probe_secret (secret text NOT NULL);
INSERT INTO probe_turns (session_id, cost, started_at, is_error, tags, meta, note) VALUES
	('s1', 0.0123, '2024-05-01 12:00:00.5+02', false, '{a,"b c"}', '{"k": [1, "x"]}', 'plain'),
	('s1', 1.5, '2024-05-02 00:00:00+00', true, NULL, NULL, E'tab\there\nnew line\\back\rcr'),
	('s2', 0, '2024-05-03 08:30:00+00', false, '{}', '"str"', NULL);
INSERT INTO probe_tags VALUES (1, 'red'), (1, 'blue'), (2, 'red');
INSERT INTO probe_secret VALUES ('do not read');
`

// roleSettings are the read-only role's settings, as provision.sh sets them.
var roleSettings = []string{
	"default_transaction_read_only = on", "statement_timeout = '30s'",
	"idle_in_transaction_session_timeout = '60s'", "temp_file_limit = '1GB'",
}

// env is one test's world: a schema with the probe tables, a read-only
// role of its own that may SELECT them, the endpoint on a real listener.
type env struct {
	admin   *pgxpool.Pool // superuser, search_path = the schema
	ro      *pgxpool.Pool // the test role
	schema  string
	role    string
	h       *Handler
	baseURL string
}

type envOptions struct {
	timeout  time.Duration // zero: 10 s
	maxConns int           // zero: 2
	// maxResponse is Config.MaxResponseBytes (zero: the default).
	maxResponse int64
	// beforeHandler runs as the superuser after the role is created and
	// before the handler checks it.
	beforeHandler func(t *testing.T, e *env)
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	ctx := context.Background()
	schemaURL := pgmigratetest.MustSchema(t)
	u, err := url.Parse(schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{schema: u.Query().Get("search_path")}
	e.admin, err = pgxpool.New(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.admin.Close)
	mustExec(t, e.admin, setupSQL)

	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	e.role = "ro_" + hex.EncodeToString(suffix)
	mustExec(t, e.admin, "CREATE ROLE "+e.role+" LOGIN NOINHERIT")
	t.Cleanup(func() { dropRole(t, e.admin, e.role) }) // after the pools close (cleanups run last-in first-out)
	mustExec(t, e.admin, "GRANT USAGE ON SCHEMA "+e.schema+" TO "+e.role)
	mustExec(t, e.admin, "GRANT SELECT ON probe_turns, probe_tags TO "+e.role)
	// The settings provision.sh gives svc_readonly, which CheckRole wants.
	for _, set := range roleSettings {
		mustExec(t, e.admin, "ALTER ROLE "+e.role+" SET "+set)
	}

	maxConns := o.maxConns
	if maxConns == 0 {
		maxConns = 2
	}
	ru := *u
	ru.User = url.User(e.role)
	q := ru.Query()
	q.Set("pool_max_conns", strconv.Itoa(maxConns))
	ru.RawQuery = q.Encode()
	e.ro, err = pgxpool.New(ctx, ru.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.ro.Close)

	if o.beforeHandler != nil {
		o.beforeHandler(t, e)
	}
	timeout := o.timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	log := slog.New(slog.DiscardHandler)
	e.h = New(ctx, Config{
		Pool: e.ro, Tables: testTables, Timeout: FixedTimeout(timeout), MaxConcurrent: maxConns,
		MaxResponseBytes: o.maxResponse, Log: log,
	})
	app := svchttp.New(svchttp.Config{
		Service: "analytics", Secret: internalauth.FromString(testSecret), BodyLimit: 1 << 20, Log: log,
	})
	e.h.Register(app)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
	e.baseURL = "http://" + ln.Addr().String()
	return e
}

func mustExec(t testing.TB, db *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := db.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// dropRole ends the role's sessions, then drops its grants and the role.
func dropRole(t testing.TB, admin *pgxpool.Pool, role string) {
	ctx := context.Background()
	_, _ = admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, role)
	for _, sql := range []string{"DROP OWNED BY " + role, "DROP ROLE " + role} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
}

// post sends a query to the endpoint. format "" sends none.
func (e *env) post(t testing.TB, contentType, body, format string) *http.Response {
	t.Helper()
	target := e.baseURL + Path
	if format != "" {
		target += "?format=" + url.QueryEscape(format)
	}
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set(protocol.HeaderInternal, testSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// jsonResult is the JSON answer, with the members a cut result adds.
type jsonResult struct {
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	Count   int64      `json:"count"`
	Error   string     `json:"error"`
	Message string     `json:"message"`
}

// query runs sql as text/plain and decodes the JSON answer, failing the
// test unless it is 200.
func (e *env) query(t testing.TB, sql string) jsonResult {
	t.Helper()
	resp := e.post(t, "text/plain", sql, "")
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d, body %s", sql, resp.StatusCode, body)
	}
	var r jsonResult
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s: answer is not JSON: %v: %s", sql, err, body)
	}
	return r
}

// postError posts like post and reads an error answer: its status and
// envelope.
func (e *env) postError(t testing.TB, contentType, body, format string) (int, protocol.ErrorBody) {
	t.Helper()
	resp := e.post(t, contentType, body, format)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var eb protocol.ErrorBody
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&eb); err != nil {
		t.Fatalf("status %d: body is not an error envelope: %v: %s", resp.StatusCode, err, raw)
	}
	return resp.StatusCode, eb
}
