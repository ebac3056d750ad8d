package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/services/shadow/internal/httpapi"
)

const testSecret = "0123456789abcdef-shadow-test"

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

// testEnv is a complete environment for one app: its own data home, the
// test Redis under a prefix of its own, a 1 MB body limit.
func testEnv(tb testing.TB) map[string]string {
	tb.Helper()
	mustRedis(tb)
	return map[string]string{
		"SVC_CODE_HOME":       tb.TempDir(),
		"SVC_INTERNAL_SECRET": testSecret,
		"REDIS_URL":           testRedisURL(),
		"REDIS_PREFIX":        "test:" + tb.Name() + ":",
		"BODY_LIMIT_MB":       "1",
		"SHUTDOWN_TIMEOUT":    "5s",
	}
}

func mustConfig(tb testing.TB, env map[string]string) Config {
	tb.Helper()
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		tb.Fatalf("LoadConfig: %v", err)
	}
	return cfg
}

// instance is an app started by mustStart.
type instance struct {
	base string // http://127.0.0.1:port
	stop context.CancelFunc
	done chan struct{} // closed when Run has returned
	err  error         // Run's result, once done is closed
}

// runApp starts Run on a listener bound to 127.0.0.1:0 and returns at once.
// The test's cleanup stops it and fails if Run does not return cleanly.
func runApp(tb testing.TB, cfg Config) *instance {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Listener = ln
	cfg.Addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	inst := &instance{base: "http://" + cfg.Addr, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(inst.done)
		inst.err = Run(ctx, cfg, testLogger(tb))
	}()
	tb.Cleanup(func() {
		if err := inst.wait(tb); err != nil {
			tb.Errorf("Run: %v", err)
		}
	})
	return inst
}

// mustStart runs the app and returns once it answers its health route.
// Until Run serves, the first request waits in the listen backlog; if Run
// fails first, it closes the listener and the request fails at once.
func mustStart(tb testing.TB, cfg Config) *instance {
	tb.Helper()
	inst := runApp(tb, cfg)
	got, err := get(inst.base+httpapi.HealthPath, testSecret)
	if err != nil || got.status != http.StatusOK {
		inst.stop()
		select {
		case <-inst.done:
			tb.Fatalf("app did not start: Run: %v (health: %v %+v)", inst.err, err, got)
		case <-time.After(10 * time.Second):
			tb.Fatalf("app did not start: health: %v %+v", err, got)
		}
	}
	return inst
}

// wait stops the app and returns Run's error.
func (inst *instance) wait(tb testing.TB) error {
	tb.Helper()
	inst.stop()
	select {
	case <-inst.done:
		return inst.err
	case <-time.After(15 * time.Second):
		tb.Fatal("Run did not return within 15s of its context's end")
		return nil
	}
}

func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testClient opens a connection per request, so no idle connection outlives a test.
var testClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

type answer struct {
	status int
	raw    string
	body   map[string]any
}

func get(target, secret string) (answer, error) {
	req, err := http.NewRequest(http.MethodGet, target, nil)
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

// tcpProxy forwards connections to a dependency until Close, which also
// cuts the connections it carries: the dependency going away under a
// running app.
type tcpProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func mustProxy(tb testing.TB, target string) *tcpProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	tb.Cleanup(p.Close)
	return p
}

func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) accept() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = down.Close()
			continue
		}
		if !p.track(down, up) {
			return
		}
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			_ = dst.Close()
			_ = src.Close()
		}
		p.wg.Go(func() { pipe(up, down) })
		p.wg.Go(func() { pipe(down, up) })
	}
}

func (p *tcpProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// Close stops accepting, cuts every connection and waits for its goroutines.
func (p *tcpProxy) Close() {
	p.mu.Lock()
	p.closed = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// proxyFor starts a proxy to the host of rawURL (a redis:// URL) and returns rawURL pointing at the proxy instead.
func proxyFor(tb testing.TB, rawURL, defaultPort string) (*tcpProxy, string) {
	tb.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		tb.Fatal(err)
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), defaultPort)
	}
	p := mustProxy(tb, target)
	u.Host = p.Addr()
	return p, u.String()
}

// closedAddr is an address on which nothing listens.
func closedAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}
