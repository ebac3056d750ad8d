package app

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/libs/authtoken"
	"github.com/svc-code/svc-code/libs/configfile"
	"github.com/svc-code/svc-code/services/gateway/internal/credential"
)

func TestProxyForwardsAndStrips(t *testing.T) {
	g := startGateway(t)
	tok := g.token()
	r := g.do(req{method: "POST", path: "/api/sessions?cwd=%2Ftmp%2Fa+b&tkn=" + tok + "&x=1", body: `{"title":"t"}`, headers: map[string]string{
		"Authorization":   "Bearer " + tok,
		"Cookie":          "svc_auth=whatever; theme=dark",
		"X-Svc-Internal":  "forged-by-client",
		"X-Svc-Auth-Kind": "cookie",
		"Content-Type":    "application/json",
		"X-Custom":        "kept",
	}})
	wantStatus(t, r, 200, "")
	got := r.json(t)
	if got["method"] != "POST" || got["path"] != "/api/sessions" || got["body"] != `{"title":"t"}` {
		t.Errorf("backend saw %v", got)
	}
	q := got["query"].(string)
	if strings.Contains(q, "tkn") || !strings.Contains(q, "x=1") || !strings.Contains(q, "cwd=") {
		t.Errorf("query forwarded as %q: tkn must go, the rest must stay", q)
	}
	seen := g.backend.last()
	if seen.Header.Get("X-Svc-Internal") != testSecret {
		t.Errorf("backend got internal header %q", seen.Header.Get("X-Svc-Internal"))
	}
	if seen.Header.Get("X-Svc-Auth-Kind") != "bearer" {
		t.Errorf("auth kind = %q, want bearer", seen.Header.Get("X-Svc-Auth-Kind"))
	}
	if seen.Header.Get("Authorization") != "" || strings.Contains(seen.Header.Get("Cookie"), "svc_auth") {
		t.Errorf("credentials forwarded: %v", seen.Header)
	}
	if seen.Header.Get("Cookie") != "theme=dark" || seen.Header.Get("X-Custom") != "kept" {
		t.Errorf("ordinary headers lost: %v", seen.Header)
	}
	if seen.Header.Get("X-Forwarded-For") != "127.0.0.1" || seen.Header.Get("X-Request-Id") == "" {
		t.Errorf("forwarding headers missing: %v", seen.Header)
	}
}

func TestProxyStreamsResponses(t *testing.T) {
	g := startGateway(t)
	hr, _ := http.NewRequest("GET", g.base+"/api/tasks/stream", nil)
	hr.Header.Set("Authorization", "Bearer "+g.token())
	resp, err := noRedirect.Do(hr) // 10 s timeout: a buffering proxy fails, not hangs
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first chunk = %q %v", line, err)
	}
	// The backend holds the second chunk until released: receiving the
	// first proves the gateway did not buffer the whole body.
	close(g.backend.release)
	rest, _ := io.ReadAll(br)
	if string(rest) != "second\n" {
		t.Fatalf("rest = %q", rest)
	}
}

func TestProxyBackendDown(t *testing.T) {
	g := startGateway(t)
	g.backend.srv.Close()
	r := g.do(req{path: "/api/sessions", headers: bearer(g.token())})
	wantStatus(t, r, 502, "unavailable")
	if !strings.Contains(r.body, "chat") || strings.Contains(r.body, "dial") {
		t.Errorf("body should name the service without internals: %s", r.body)
	}
	_, status, err := g.dialWS("/chat", http.Header{"Authorization": {"Bearer " + g.token()}})
	if err == nil || status != 502 {
		t.Fatalf("upgrade with backend down: %d %v, want 502", status, err)
	}
	info := g.do(req{path: "/api/info", headers: bearer(g.token())}).json(t)
	svc := info["services"].(map[string]any)["chat"].(map[string]any)
	if svc["status"] != "unreachable" {
		t.Errorf("info reports chat as %v", svc)
	}
}

func TestInfoReportsBackends(t *testing.T) {
	g := startGateway(t)
	r := g.do(req{path: "/api/info", headers: bearer(g.token())})
	wantStatus(t, r, 200, "")
	m := r.json(t)
	for _, k := range []string{"version", "uptime_s", "started_at", "services"} {
		if _, ok := m[k]; !ok {
			t.Errorf("info lacks %s: %s", k, r.body)
		}
	}
	for _, svc := range []string{"chat", "terminal", "shadow", "analytics"} {
		s, _ := m["services"].(map[string]any)[svc].(map[string]any)
		if s["status"] != "ok" {
			t.Errorf("%s: %v", svc, s)
		}
	}
}

func TestUnknownRoutes(t *testing.T) {
	g := startGateway(t)
	wantStatus(t, g.do(req{path: "/api/nothing-here", headers: bearer(g.token())}), 404, "not_found")
	wantStatus(t, g.do(req{method: "DELETE", path: "/", headers: bearer(g.token())}), 404, "not_found")
	if n := g.backend.hits.Load(); n != 0 {
		t.Errorf("unrouted paths reached the backend %d times", n)
	}
}

func TestPasswordRotationWhileRunning(t *testing.T) {
	g := startGateway(t)
	tok := g.token()
	ck := g.login()
	newPw, newTok, err := credential.Rotate(configfile.New(g.cfgPath), "a brand new password", cheapHash)
	if err != nil || newPw != "a brand new password" {
		t.Fatal(newPw, err)
	}
	waitFor(t, time.Second, "the old token and cookie to be refused", func() bool {
		return g.do(req{path: "/api/info", headers: bearer(tok)}).status == 401 &&
			g.do(req{path: "/api/info", headers: cookie(ck, nil)}).status == 401
	})
	wantStatus(t, g.do(req{path: "/api/info", headers: bearer(newTok)}), 200, "")
	jsonCT := map[string]string{"Content-Type": "application/json"}
	wantStatus(t, g.do(req{method: "POST", path: "/api/login", body: `{"password":"` + testPassword + `"}`, headers: jsonCT}), 401, "invalid_password")
	wantStatus(t, g.do(req{method: "POST", path: "/api/login", body: `{"password":"a brand new password"}`, headers: jsonCT}), 200, "")
	if e := g.do(req{path: "/api/info", headers: bearer(newTok)}).json(t); e["bearer_epoch"] != float64(0) || e["cookie_epoch"] != float64(0) {
		t.Errorf("epochs not reset by rotation: %v", e)
	}
}

func TestOlderConfigGainsAPIToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	hash, err := authtoken.HashPassword(testPassword, cheapHash)
	if err != nil {
		t.Fatal(err)
	}
	old := "# written by an older build\npassword_hash: " + hash + "\ntheme: dark\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, withConfigPath(path))
	b, _ := os.ReadFile(path)
	for _, want := range []string{"api_token: svct_0_", "theme: dark", "# written by an older build", "bearer_epoch: 0", "cookie_epoch: 0"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("config lacks %q:\n%s", want, b)
		}
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("config mode = %v, want 0600", st.Mode().Perm())
	}
	wantStatus(t, g.do(req{path: "/api/info", headers: bearer(g.token())}), 200, "")
	g.login() // the old password still works
}

func TestFirstStartGeneratesPassword(t *testing.T) {
	dir := t.TempDir()
	cfg, out := runFirstStart(t, dir, nil)
	waitFor(t, 5*time.Second, "the generated password to be shown", func() bool { return strings.Contains(out.String(), "your password is: ") })
	pw := strings.Fields(strings.SplitN(out.String(), "your password is: ", 2)[1])[0]
	d, err := configfile.New(cfg.ConfigPath).Read()
	if err != nil {
		t.Fatal(err)
	}
	h, _ := d.String("password_hash")
	if ok, err := authtoken.VerifyPassword(h, pw); !ok || err != nil {
		t.Errorf("shown password %q does not match the stored hash", pw)
	}
	b, _ := os.ReadFile(cfg.ConfigPath)
	if strings.Contains(string(b), pw) {
		t.Error("the config file contains the password in clear")
	}
	if st, _ := os.Stat(filepath.Dir(cfg.ConfigPath)); st.Mode().Perm() != 0o700 {
		t.Errorf("config dir mode = %v, want 0700", st.Mode().Perm())
	}
}

func TestShutdownClosesWebSocketsGoingAway(t *testing.T) {
	g := startGateway(t)
	c, _, err := g.dialWS("/chat", http.Header{"Authorization": {"Bearer " + g.token()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g.stop()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err = c.ReadMessage()
	var ce *websocket.CloseError
	if !asCloseError(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Fatalf("read after shutdown: %v, want close 1001", err)
	}
}

func TestBadConfig(t *testing.T) {
	tests := map[string]map[string]string{
		"bad addr":            {"SVC_ADDR": "nonsense"},
		"bad backend url":     {"CHAT_URL": "ftp://x"},
		"backend url no port": {"SHADOW_URL": "http://host"},
		"short password":      {"SVC_CODE_PASSWORD": "short"},
		"bad duration":        {"SHUTDOWN_TIMEOUT": "soon"},
		"bad body limit":      {"BODY_LIMIT_MB": "0"},
	}
	for name, env := range tests {
		t.Run(name, func(t *testing.T) {
			env["HOME"] = "/tmp"
			if _, err := LoadConfig(func(k string) string { return env[k] }); err == nil {
				t.Error("LoadConfig accepted it")
			}
		})
	}
	_, err := LoadConfig(func(k string) string {
		return map[string]string{"HOME": "/tmp", "SVC_ADDR": "x", "CHAT_URL": "y"}[k]
	})
	if err == nil || !strings.Contains(err.Error(), "SVC_ADDR") || !strings.Contains(err.Error(), "CHAT_URL") {
		t.Errorf("want both problems reported at once, got %v", err)
	}
}

func TestRedisRequired(t *testing.T) {
	env := map[string]string{"HOME": t.TempDir(), "REDIS_URL": "redis://127.0.0.1:1/0", "SVC_INTERNAL_SECRET": testSecret}
	env["SVC_CODE_HOME"] = env["HOME"] + "/h"
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Errorf("Run without Redis = %v, want an error naming REDIS_URL", err)
	}
}
