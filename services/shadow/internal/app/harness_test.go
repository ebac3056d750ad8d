package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/libs/protocol"
)

// testSecret is the internal secret of every shadow a test runs.
const testSecret = "0123456789abcdef-shadow-app-tests"

func testRedisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// testShadow is shadow run in-process by a test.
type testShadow struct {
	t      *testing.T
	base   string // http://127.0.0.1:port
	prefix string // its REDIS_PREFIX
}

// startShadow runs shadow in-process on a loopback port, home being the
// user's home directory. To vars it adds testSecret, the test Redis with a
// fresh prefix and, unless vars has a DATABASE_URL, a schema of its own. It
// returns once shadow answers its health route and stops it in t.Cleanup.
func startShadow(t *testing.T, vars map[string]string, home string, log *slog.Logger) *testShadow {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	prefix := "test:" + hex.EncodeToString(b) + ":"
	all := map[string]string{
		"SVC_INTERNAL_SECRET": testSecret, "REDIS_URL": testRedisURL(), "REDIS_PREFIX": prefix,
	}
	for k, v := range vars {
		all[k] = v
	}
	if all["DATABASE_URL"] == "" {
		all["DATABASE_URL"] = pgmigratetest.MustSchema(t)
	}
	cfg, err := LoadConfig(func(k string) string { return all[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Home = home
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listener = ln
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	s := &testShadow{t: t, base: "http://" + ln.Addr().String(), prefix: prefix}
	waitReady(t, func() bool {
		status, _ := s.do(http.MethodGet, "/api/health/shadow", "")
		return status == http.StatusOK
	})
	return s
}

// do sends a request with the internal key (a JSON body unless body is
// empty) and returns the answer's status and body.
func (s *testShadow) do(method, path, body string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set(protocol.HeaderInternal, testSecret)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: read the answer: %v", method, path, err)
	}
	return resp.StatusCode, string(data)
}

// messageHandler is a slog handler that tells seen each time msg is logged.
type messageHandler struct {
	msg  string
	seen chan<- struct{}
}

func (h messageHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h messageHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.seen <- struct{}{}:
		default:
		}
	}
	return nil
}
func (h messageHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h messageHandler) WithGroup(string) slog.Handler      { return h }

// waitReady polls ready until it holds, failing the test after 30 s.
func waitReady(t *testing.T, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ready() {
		if time.Now().After(deadline) {
			t.Fatal("shadow did not become ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
