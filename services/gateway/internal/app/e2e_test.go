package app

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svc-code/svc-code/services/gateway/internal/route"
)

// TestEndToEndWithRealBackends builds the four backend binaries, runs them
// as make run does (environment only), puts this gateway in front, and
// proves the routing and the internal credential end to end.
func TestEndToEndWithRealBackends(t *testing.T) {
	root := repoRoot(t)
	bin := t.TempDir()
	args := []string{"build", "-o", bin + "/"}
	for _, svc := range route.Services {
		args = append(args, "./services/"+svc+"/cmd/"+svc)
	}
	build := exec.Command("go", args...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	dbURL := testSchemaURL(t)
	home := t.TempDir()
	prefix := "test:" + randomHex(6) + ":"
	env := append(os.Environ(),
		"SVC_CODE_HOME="+home, "SVC_INTERNAL_SECRET="+testSecret, "SVC_INTERNAL_SECRET_FILE=",
		"REDIS_URL="+redisURL(), "REDIS_PREFIX="+prefix, "LOG_FORMAT=json",
		"DATABASE_URL="+dbURL, "READONLY_DATABASE_URL="+dbURL,
		"CHAT_ADDR=127.0.0.1:0", "TERMINAL_ADDR=127.0.0.1:0", "SHADOW_ADDR=127.0.0.1:0", "ANALYTICS_ADDR=127.0.0.1:0",
	)
	addrs := map[string]string{}
	for _, svc := range route.Services {
		addrs[svc] = startBinary(t, filepath.Join(bin, svc), env)
	}

	g := startGateway(t, func(env map[string]string, _ *Config) {
		env[EnvChatURL] = "http://" + addrs[route.Chat]
		env[EnvTerminalURL] = "http://" + addrs[route.Terminal]
		env[EnvShadowURL] = "http://" + addrs[route.Shadow]
		env[EnvAnalyticsURL] = "http://" + addrs[route.Analytics]
		env["REDIS_PREFIX"] = prefix
	})
	tok := g.token()

	info := g.do(req{path: "/api/info", headers: bearer(tok)})
	wantStatus(t, info, 200, "")
	for svc, s := range info.json(t)["services"].(map[string]any) {
		if s.(map[string]any)["status"] != "ok" {
			t.Errorf("/api/info: %s is %v", svc, s)
		}
	}
	for _, svc := range route.Services {
		t.Run(svc, func(t *testing.T) {
			r := g.do(req{path: "/api/health/" + svc, headers: bearer(tok)})
			wantStatus(t, r, 200, "")
			if r.json(t)["service"] != svc {
				t.Errorf("health through the gateway answered %s", r.body)
			}
			wantStatus(t, g.do(req{path: "/api/health/" + svc}), 401, "unauthorized")

			// Around the gateway: the backend's own port refuses.
			direct := "http://" + addrs[svc] + "/api/health/" + svc
			for name, h := range map[string]map[string]string{
				"no internal credential":     nil,
				"forged internal credential": {"X-Svc-Internal": "guess-guess-guess-guess"},
				"api token instead":          {"Authorization": "Bearer " + tok},
			} {
				hr, _ := http.NewRequest("GET", direct, nil)
				for k, v := range h {
					hr.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(hr)
				if err != nil {
					t.Fatal(err)
				}
				var body map[string]any
				_ = json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				if resp.StatusCode != 401 || body["error"] != "unauthorized" {
					t.Errorf("%s straight to %s: %d %v, want 401 unauthorized", name, svc, resp.StatusCode, body)
				}
			}
		})
	}
	// A routed path its backend does not serve: the backend's 404 envelope
	// comes back through the gateway.
	wantStatus(t, g.do(req{path: "/api/prompts/no-such-route", headers: bearer(tok)}), 404, "not_found")
	// And routes they serve answer through the gateway.
	for _, path := range []string{"/api/sessions", "/api/drafts", "/api/turns", "/api/app/helpers/status", "/api/terminals"} {
		wantStatus(t, g.do(req{path: path, headers: bearer(tok)}), 200, "")
	}

	// The events socket reaches chat: a snapshot first, then a session
	// created through the gateway.
	ev, status, err := g.dialWS("/api/events", http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		t.Fatalf("dial /api/events: %v (status %d)", err, status)
	}
	defer ev.Close()
	readEvent := func() map[string]any {
		t.Helper()
		_ = ev.SetReadDeadline(time.Now().Add(10 * time.Second))
		var f map[string]any
		if err := ev.ReadJSON(&f); err != nil {
			t.Fatalf("read an event: %v", err)
		}
		return f
	}
	if f := readEvent(); f["type"] != "snapshot" {
		t.Fatalf("first event %v, want snapshot", f)
	}
	created := g.do(req{
		method: "POST", path: "/api/sessions", body: `{"cwd":` + strconvQuote(t.TempDir()) + `}`,
		headers: map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"},
	})
	wantStatus(t, created, 201, "")
	id, _ := created.json(t)["session_id"].(string)
	for {
		f := readEvent()
		if s, _ := f["session"].(map[string]any); f["type"] == "session" && s["session_id"] == id {
			break
		}
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env GOWORK: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// testSchemaURL creates a schema of its own in the test database and
// returns a URL whose connections use it; the schema is dropped after.
func testSchemaURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("PostgreSQL must be reachable for the tests (TEST_DATABASE_URL): %v", err)
	}
	defer conn.Close(ctx)
	schema := "e2e_" + randomHex(6)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// startBinary runs a backend and returns the address from its "listening"
// log line; it is stopped with SIGTERM and must exit 0.
func startBinary(t *testing.T, path string, env []string) string {
	t.Helper()
	cmd := exec.Command(path)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(path)
	addr := make(chan string, 1)
	exited := make(chan struct{})
	var mu sync.Mutex
	var log []string
	var waitErr error
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log = append(log, sc.Text())
			mu.Unlock()
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				if _, _, err := net.SplitHostPort(line.Addr); err == nil {
					addr <- line.Addr
				}
			}
		}
		waitErr = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			if waitErr != nil {
				t.Errorf("%s exited with %v", name, waitErr)
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("%s did not stop within 15 s of SIGTERM", name)
		}
		if t.Failed() {
			mu.Lock()
			t.Logf("%s log:\n%s", name, strings.Join(log, "\n"))
			mu.Unlock()
		}
	})
	select {
	case a := <-addr:
		return a
	case <-exited:
		t.Fatalf("%s exited before listening: %v\n%s", name, waitErr, strings.Join(log, "\n"))
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not listen within 30 s", name)
	}
	return ""
}
