// Package svchttptest is the test kit of the backend services built on
// svchttp. RunContract starts a service in-process on 127.0.0.1:0, against
// the test Redis (TEST_REDIS_URL) and, if it uses one, a PostgreSQL schema
// of its own (TEST_DATABASE_URL), and checks what every backend must do:
// refuse requests without the internal credential, answer health and
// errors with the envelope, enforce the body limit, report a dependency
// that goes away, refuse to start without its dependencies or with a bad
// configuration, and shut down cleanly. RunBinary checks the built command
// the way docker and the gateway's tests run it. Each service calls both
// from its tests with a Service describing it; its own tests cover only
// what is its own.
//
// Redis and PostgreSQL must be reachable: a test fails, never skips, when
// they are not.
package svchttptest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/svchttp"
)

// Service describes a backend service to the kit.
type Service struct {
	// Name is the service's name: its health route, its binary and the
	// prefix of the errors that binary prints ("chat").
	Name string
	// AddrVar is the variable holding its listen address ("CHAT_ADDR").
	AddrVar string
	// Postgres lists the PostgreSQL URL variables the service reads, each
	// with the health check that pings that pool; empty for a service
	// without PostgreSQL. A service with PostgreSQL applies its migrations
	// (component Name) at start.
	Postgres []Postgres
	// Start loads the service's configuration through getenv and runs it
	// until ctx ends, as cmd/<name> does. When ln is not nil it serves ln
	// (and closes it) instead of listening on the address in AddrVar.
	Start func(ctx context.Context, getenv func(string) string, ln net.Listener, log *slog.Logger) error
}

// Postgres is one PostgreSQL URL variable of a service.
type Postgres struct {
	Var   string // "DATABASE_URL"
	Check string // the health check of its pool: "postgres"
}

// VerifyTestMain runs the tests of m, then fails if goroutines are left
// over (goleak), except fasthttp's own, which outlive any one server.
func VerifyTestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// fasthttp refreshes its Date header from one goroutine that it
		// starts once per process and never stops.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		// Each Serve's worker-pool cleaner sleeps MaxIdleWorkerDuration (10 s)
		// between looks at its stop channel, so it outlives a shutdown by
		// up to that long, then exits.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
	)
}

// testSecret is the internal credential of every service the kit starts.
const testSecret = "0123456789abcdef-svchttptest"

func testRedisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// mustRedis fails the test, never skips it, when Redis is unreachable.
func mustRedis(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb, err := redisx.Connect(ctx, testRedisURL())
	if err != nil {
		tb.Fatalf("Redis must be reachable at TEST_REDIS_URL (default redis://127.0.0.1:6379/0): %v", err)
	}
	_ = rdb.Close()
}

// testEnv is a complete environment for one instance of s: its own data
// home and (with PostgreSQL) schema, the test Redis under a prefix of its
// own, a 1 MB body limit.
func testEnv(tb testing.TB, s Service) map[string]string {
	tb.Helper()
	mustRedis(tb)
	env := map[string]string{
		"SVC_CODE_HOME":       tb.TempDir(),
		"SVC_INTERNAL_SECRET": testSecret,
		"REDIS_URL":           testRedisURL(),
		"REDIS_PREFIX":        "test:" + tb.Name() + ":",
		"BODY_LIMIT_MB":       "1",
		"SHUTDOWN_TIMEOUT":    "5s",
	}
	if len(s.Postgres) > 0 {
		// Every variable gets the test's role, which can write; a read-only
		// role's fences are tested with the endpoint that relies on them.
		dbURL := pgmigratetest.MustSchema(tb)
		for _, pg := range s.Postgres {
			env[pg.Var] = dbURL
		}
	}
	return env
}

func getenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// instance is a service started by mustStart.
type instance struct {
	addr string // 127.0.0.1:port
	base string // http://127.0.0.1:port
	stop context.CancelFunc
	done chan struct{} // closed when Start has returned
	err  error         // Start's result, once done is closed
}

// runService starts s on a listener bound to 127.0.0.1:0 and returns at
// once. The test's cleanup stops it and fails if Start does not return
// cleanly.
func runService(tb testing.TB, s Service, env map[string]string) *instance {
	tb.Helper()
	ln := mustListen(tb)
	env = maps.Clone(env)
	env[s.AddrVar] = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	inst := &instance{addr: env[s.AddrVar], base: "http://" + env[s.AddrVar], stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(inst.done)
		inst.err = s.Start(ctx, getenv(env), ln, testLogger(tb))
	}()
	tb.Cleanup(func() {
		if err := inst.wait(tb); err != nil {
			tb.Errorf("Start: %v", err)
		}
	})
	return inst
}

// mustStart runs s and returns once it answers its health route. Until it
// serves, the first request waits in the listen backlog; if Start fails
// first, it closes the listener and the request fails at once.
func mustStart(tb testing.TB, s Service, env map[string]string) *instance {
	tb.Helper()
	inst := runService(tb, s, env)
	got, err := get(inst.base+svchttp.HealthPath(s.Name), testSecret)
	if err != nil || got.status != http.StatusOK {
		inst.stop()
		select {
		case <-inst.done:
			tb.Fatalf("%s did not start: Start: %v (health: %v %+v)", s.Name, inst.err, err, got)
		case <-time.After(10 * time.Second):
			tb.Fatalf("%s did not start: health: %v %+v", s.Name, err, got)
		}
	}
	return inst
}

// wait stops the service and returns Start's error.
func (inst *instance) wait(tb testing.TB) error {
	tb.Helper()
	inst.stop()
	select {
	case <-inst.done:
		return inst.err
	case <-time.After(15 * time.Second):
		tb.Fatal("Start did not return within 15s of its context's end")
		return nil
	}
}

// testClient opens a connection per request, so no idle connection outlives a test.
var testClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

type answer struct {
	status int
	raw    string
	body   map[string]any
}

func get(target, secret string) (answer, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, target, nil)
	if err != nil {
		return answer{}, err
	}
	return send(req, secret)
}

func send(req *http.Request, secret string) (answer, error) {
	if secret != "" {
		req.Header.Set(protocol.HeaderInternal, secret)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: resp.StatusCode, raw: string(raw)}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return a, &answerError{a, "Content-Type " + resp.Header.Get("Content-Type")}
	}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		return a, &answerError{a, err.Error()}
	}
	return a, nil
}

type answerError struct {
	answer
	why string
}

func (e *answerError) Error() string { return "answer is not JSON (" + e.why + "): " + e.raw }
