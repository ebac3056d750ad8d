package app

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"go.uber.org/goleak"

	"github.com/svc-code/svc-code/libs/authtoken"
	"github.com/svc-code/svc-code/libs/configfile"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/redisx"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// go-redis keeps a pool reaper per client; pools are closed but the
		// reaper exits on its own tick.
		goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		// fasthttp's janitors sleep on their own timers and exit later.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*TCPDialer).tcpAddrsClean"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*Client).mCleaner"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
	)
}

const (
	testPassword = "correct horse battery"
	testSecret   = "test-internal-secret-0123456789"
)

var cheapHash = authtoken.HashParams{Time: 1, MemoryKiB: 1024, Threads: 1}

func redisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// backend is a stand-in for a backend service: it refuses requests without
// the internal credential, records what it saw, streams on request and
// echoes WebSocket messages.
type backend struct {
	srv      *httptest.Server
	hits     atomic.Int64
	mu       sync.Mutex
	lastReq  *http.Request
	release  chan struct{} // closes to let /api/tasks/stream finish
	upgrader websocket.Upgrader
}

func newBackend(t *testing.T) *backend {
	t.Helper()
	b := &backend{release: make(chan struct{}), upgrader: websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(func() {
		select {
		case <-b.release:
		default:
			close(b.release)
		}
		b.srv.CloseClientConnections()
		b.srv.Close()
	})
	return b
}

func (b *backend) last() *http.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastReq
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(protocol.HeaderInternal) != testSecret {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"unauthorized"}`))
		return
	}
	b.hits.Add(1)
	b.mu.Lock()
	b.lastReq = r.Clone(context.Background())
	b.mu.Unlock()
	switch {
	case r.URL.Path == "/chat" || r.URL.Path == "/api/events" || r.URL.Path == "/ws/terminal":
		c, err := b.upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(mt, msg); err != nil {
				return
			}
		}
	case r.URL.Path == "/api/tasks/stream":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("first\n"))
		w.(http.Flusher).Flush()
		<-b.release
		_, _ = w.Write([]byte("second\n"))
	case r.URL.Path == "/api/file-raw":
		// A viewable answer: the backend's own sandbox policy.
		w.Header().Set("Content-Security-Policy", sandboxCSP)
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<p>hi</p>"))
	case r.URL.Path == "/api/browser/proxy":
		// A backend policy without sandbox: the gateway's own replaces it.
		w.Header().Set("Content-Security-Policy", "frame-ancestors *")
		_, _ = w.Write([]byte("<p>hi</p>"))
	case r.URL.Path == "/api/upload-file":
		// Counts the body without keeping it (the gateway runs in this
		// process, and its memory is measured).
		n, err := io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"bytes": n})
	case strings.HasPrefix(r.URL.Path, "/api/health/"):
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	default:
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"path": r.URL.Path, "query": r.URL.RawQuery, "method": r.Method, "body": string(body)})
	}
}

// gateway is one running gateway instance.
type gateway struct {
	t       *testing.T
	base    string // http://127.0.0.1:port
	origin  string
	cfgPath string
	prefix  string
	stop    context.CancelFunc
	done    chan error
	logs    *syncBuffer
	backend *backend
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type gwOption func(env map[string]string, cfg *Config)

func withConfigPath(p string) gwOption {
	return func(env map[string]string, _ *Config) { env["SVC_CONFIG"] = p }
}

func withPrefix(p string) gwOption {
	return func(env map[string]string, _ *Config) { env["REDIS_PREFIX"] = p }
}

func withEnv(k, v string) gwOption {
	return func(env map[string]string, _ *Config) { env[k] = v }
}

func withBackend(b *backend) gwOption {
	return func(env map[string]string, _ *Config) {
		for _, k := range []string{EnvChatURL, EnvTerminalURL, EnvShadowURL, EnvAnalyticsURL} {
			env[k] = b.srv.URL
		}
	}
}

// runFirstStart runs a gateway in-process as on its first start: no config
// file yet under dir, which is HOME, and the variables of extra. It returns
// its Config and what it writes to the terminal; the gateway stops in
// t.Cleanup.
func runFirstStart(t *testing.T, dir string, extra map[string]string) (Config, *syncBuffer) {
	t.Helper()
	env := map[string]string{
		"HOME": dir, "SVC_CODE_HOME": dir + "/home", "SVC_CONFIG": dir + "/c/config.yaml",
		"SVC_INTERNAL_SECRET": testSecret, "REDIS_URL": redisURL(), "REDIS_PREFIX": "test:" + randomHex(6) + ":",
	}
	for k, v := range extra {
		env[k] = v
	}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	cfg.Listener, cfg.HashParams, cfg.PasswordOut = ln, cheapHash, out
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return cfg, out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startGateway runs a real gateway (Run, over real TCP, with real Redis)
// in front of a fake backend.
func startGateway(t *testing.T, opts ...gwOption) *gateway {
	t.Helper()
	dir := t.TempDir()
	b := newBackend(t)
	env := map[string]string{
		"HOME":                dir,
		"SVC_CODE_HOME":       filepath.Join(dir, "home"),
		"SVC_CONFIG":          filepath.Join(dir, "config", "svc-code", "config.yaml"),
		"SVC_INTERNAL_SECRET": testSecret,
		"REDIS_URL":           redisURL(),
		"REDIS_PREFIX":        "test:" + randomHex(6) + ":",
		"SVC_CODE_PASSWORD":   testPassword,
		"BODY_LIMIT_MB":       "1",
		"SHUTDOWN_TIMEOUT":    "4s",
	}
	withBackend(b)(env, nil)
	for _, o := range opts {
		o(env, nil)
	}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listener = ln
	cfg.HashParams = cheapHash
	cfg.Poll = 100 * time.Millisecond
	cfg.PasswordOut = io.Discard
	for _, o := range opts {
		o(env, &cfg)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	g := &gateway{
		t: t, base: "http://" + ln.Addr().String(), origin: "http://" + ln.Addr().String(),
		cfgPath: cfg.ConfigPath, prefix: env["REDIS_PREFIX"], stop: cancel, done: make(chan error, 1), logs: logs, backend: b,
	}
	go func() { g.done <- Run(ctx, cfg, log) }()
	t.Cleanup(g.shutdown)
	waitFor(t, 10*time.Second, "gateway /health", func() bool {
		resp, err := http.Get(g.base + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return g
}

func (g *gateway) shutdown() {
	g.stop()
	select {
	case err := <-g.done:
		if err != nil {
			g.t.Errorf("Run returned %v", err)
		}
	case <-time.After(10 * time.Second):
		g.t.Errorf("gateway did not stop within 10 s")
	}
	if c, err := redisx.Connect(context.Background(), redisURL()); err == nil {
		keys, _ := c.Keys(context.Background(), g.prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(context.Background(), keys...)
		}
		c.Close()
	}
	if g.t.Failed() {
		g.t.Logf("gateway log:\n%s", g.logs.String())
	}
}

// token reads the current api_token from the config file.
func (g *gateway) token() string {
	g.t.Helper()
	d, err := configfile.New(g.cfgPath).Read()
	if err != nil {
		g.t.Fatal(err)
	}
	tok, ok := d.String("api_token")
	if !ok {
		g.t.Fatal("config has no api_token")
	}
	return tok
}

// req is one request to the gateway.
type req struct {
	method, path string
	body         string
	headers      map[string]string
}

type result struct {
	status int
	header http.Header
	body   string
}

func (r result) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.body), &m); err != nil {
		t.Fatalf("body %q is not JSON: %v", r.body, err)
	}
	return m
}

var noRedirect = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

func (g *gateway) do(r req) result {
	g.t.Helper()
	if r.method == "" {
		r.method = http.MethodGet
	}
	hr, err := http.NewRequest(r.method, g.base+r.path, strings.NewReader(r.body))
	if err != nil {
		g.t.Fatal(err)
	}
	for k, v := range r.headers {
		if k == "Host" {
			hr.Host = v
			continue
		}
		hr.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(hr)
	if err != nil {
		return result{status: -1, body: err.Error()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

// login signs in with JSON and returns the svc_auth cookie value.
func (g *gateway) login() string {
	g.t.Helper()
	r := g.do(req{method: "POST", path: "/api/login", body: `{"password":"` + testPassword + `"}`, headers: map[string]string{"Content-Type": "application/json"}})
	if r.status != 200 {
		g.t.Fatalf("login: %d %s", r.status, r.body)
	}
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == "svc_auth" {
			return c.Value
		}
	}
	g.t.Fatal("login set no svc_auth cookie")
	return ""
}

func cookie(v string, extra map[string]string) map[string]string {
	h := map[string]string{"Cookie": "svc_auth=" + v}
	for k, x := range extra {
		h[k] = x
	}
	return h
}

// dialWS opens a WebSocket through the gateway; status is the handshake
// answer's status code (0 when there was none).
func (g *gateway) dialWS(path string, h http.Header) (c *websocket.Conn, status int, err error) {
	u := "ws" + strings.TrimPrefix(g.base, "http") + path
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	c, resp, err := d.Dial(u, h)
	if resp != nil {
		status = resp.StatusCode
		_ = resp.Body.Close()
	}
	return c, status, err
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func wantStatus(t *testing.T, r result, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d (body %s)", r.status, status, r.body)
	}
	if code != "" {
		if got, _ := r.json(t)["error"].(string); got != code {
			t.Fatalf("error code = %q, want %q (body %s)", got, code, r.body)
		}
	}
}

// raw sends a hand-written request head (and optional body start) over TCP
// and returns the status line and the rest, for requests net/http will not
// send as they are (a body larger than the limit, odd paths).
func (g *gateway) raw(t *testing.T, head string) (status int, rest string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(g.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
