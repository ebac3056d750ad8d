package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/libs/svchttp/svchttptest"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" { // faults_test.go: this process is a chat to kill
		os.Exit(runChild())
	}
	svchttptest.VerifyTestMain(m)
}

const testSecret = "0123456789abcdef-chat-tests"

func testRedisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// newTestRedis is a client of the test Redis, closed when the test ends.
func newTestRedis(t *testing.T) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(testRedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// chat is one chat instance started by startChat, with a Store on the same
// schema for arranging what the routes do not create (messages, turns).
type chat struct {
	t     *testing.T
	base  string
	addr  string
	store *store.Store
	// db is a pool on the instance's schema, dbURL its URL.
	db    *pgxpool.Pool
	dbURL string
	// stop ends Run and waits for it (also done when the test ends).
	stop func()
	// sweeps counts the instance's sweeps for the turns of dead instances.
	sweeps *atomic.Int64
}

// startChat runs Run in-process on 127.0.0.1:0 against a PostgreSQL schema
// of the test's own and the test Redis. lookPath stands for the lookup of
// the providers' programs on PATH. It is stopped, and checked to stop
// cleanly, when the test ends.
func startChat(t *testing.T, lookPath func(string) (string, error)) *chat {
	t.Helper()
	return startChatEnv(t, lookPath, nil)
}

// startChatEnv is startChat with agentEnv added to the environment of the
// agent processes chat starts.
func startChatEnv(t *testing.T, lookPath func(string) (string, error), agentEnv []string) *chat {
	t.Helper()
	return startChatWith(t, lookPath, agentEnv, nil)
}

// startChatWith is startChatEnv with newProvider, when not nil, making the
// sessions' providers.
func startChatWith(t *testing.T, lookPath func(string) (string, error), agentEnv []string, newProvider func(agent.Options) agent.Provider) *chat {
	t.Helper()
	return startInstance(t, pgmigratetest.MustSchema(t), nil, lookPath, agentEnv, newProvider)
}

// startInstance starts one chat instance on the PostgreSQL schema dbURL,
// with the variables extra added to its environment; instances of one test
// share the Redis prefix.
func startInstance(t *testing.T, dbURL string, extra map[string]string, lookPath func(string) (string, error), agentEnv []string, newProvider func(agent.Options) agent.Provider) *chat {
	t.Helper()
	env := map[string]string{
		"SVC_CODE_HOME":       t.TempDir(),
		"SVC_INTERNAL_SECRET": testSecret,
		"REDIS_URL":           testRedisURL(),
		"REDIS_PREFIX":        "test:" + t.Name() + ":",
		"DATABASE_URL":        dbURL,
		"SHUTDOWN_TIMEOUT":    "5s",
	}
	for k, v := range extra {
		env[k] = v
	}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listener = ln
	cfg.lookPath = lookPath
	cfg.agentEnv = agentEnv
	cfg.newProvider = newProvider
	sweeps := new(atomic.Int64)
	cfg.afterRecover = func() { sweeps.Add(1) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	go func() { done <- Run(ctx, cfg, log) }()
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Error("Run did not return within 15s of its context's end")
			}
		})
	}
	t.Cleanup(stop)
	c := &chat{t: t, base: "http://" + ln.Addr().String(), addr: ln.Addr().String(), stop: stop, sweeps: sweeps}
	// Until Run serves, this request waits in the listen backlog; if Run
	// fails first, it closes the listener and the request fails at once.
	if got := c.do(http.MethodGet, svchttp.HealthPath(Service), ""); got.status != http.StatusOK {
		cancel()
		t.Fatalf("chat did not start: %d %s (Run: %v)", got.status, got.raw, <-done)
	}
	db, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	c.store, c.db, c.dbURL = store.New(db), db, dbURL
	return c
}

// testClient opens a connection per request, so none outlives a test.
var testClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// answer is a response, its body read and, when JSON, decoded.
type answer struct {
	status int
	header http.Header
	raw    string
	body   map[string]any
}

// str returns the string field key of the body.
func (a answer) str(key string) string {
	s, _ := a.body[key].(string)
	return s
}

// do sends body (JSON, when not empty) with the internal credential, as
// the gateway forwards a request.
func (c *chat) do(method, path, body string) answer {
	c.t.Helper()
	return c.send(method, path, body, "application/json", testSecret)
}

func (c *chat) send(method, path, body, contentType, secret string) answer {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" && contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if secret != "" {
		req.Header.Set(protocol.HeaderInternal, secret)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &a.body); err != nil {
			c.t.Fatalf("%s %s: answer is not a JSON object: %v: %s", method, path, err, raw)
		}
	}
	return a
}

// want fails the test unless a has status and, for an error, code.
func (a answer) want(t *testing.T, status int, code string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("got %d %s, want %d", a.status, a.raw, status)
	}
	if code != "" && a.str("error") != code {
		t.Fatalf("got error %q (%s), want %q", a.str("error"), a.raw, code)
	}
}

// mustSession creates a session in cwd and returns its id.
func (c *chat) mustSession(cwd string) string {
	c.t.Helper()
	got := c.do(http.MethodPost, "/api/sessions", `{"cwd":`+quote(cwd)+`}`)
	got.want(c.t, http.StatusCreated, "")
	return got.str("session_id")
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
