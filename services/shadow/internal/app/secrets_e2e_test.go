package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/libs/protocol"
)

// TestRunRefusesTheServersSecrets runs shadow in-process with HOME pointed
// at a test directory holding a config file and a data home, as make run
// leaves them, and asks the file routes for them: every spelling is 403
// forbidden and no answer holds a secret.
func TestRunRefusesTheServersSecrets(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(tmp, "home")
	const secret = "SERVER-SECRET-e2e"
	for p, content := range map[string]string{
		home + "/.config/svc-code/config.yaml": "cookie_secret: " + secret + "\ntoken_key: " + secret + "\n",
		home + "/.svc-code/internal.key":       secret + "\n",
		home + "/.svc-code/postgres.env":       "DATABASE_URL=postgres://svc_code:" + secret + "@127.0.0.1/svc_code\n",
		home + "/proj/notes.txt":               "not a " + secret[:6] + " here\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(".config/svc-code", home+"/cfg"); err != nil {
		t.Fatal(err)
	}

	b := make([]byte, 4)
	_, _ = rand.Read(b)
	redisURL := os.Getenv("TEST_REDIS_URL")
	if redisURL == "" {
		redisURL = "redis://127.0.0.1:6379/0"
	}
	vars := map[string]string{
		"HOME": home, "SVC_INTERNAL_SECRET": filesTestSecret, "REDIS_URL": redisURL,
		"REDIS_PREFIX": "test:" + hex.EncodeToString(b) + ":", "DATABASE_URL": pgmigratetest.MustSchema(t),
		"SHADOW_CONSUMER": "secrets-test",
	}
	cfg, err := LoadConfig(func(k string) string { return vars[k] })
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
	go func() { done <- Run(ctx, cfg, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+ln.Addr().String()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(protocol.HeaderInternal, filesTestSecret)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	waitReady(t, func() bool {
		status, _ := do(http.MethodGet, "/api/health/shadow", "")
		return status == http.StatusOK
	})

	refused := func(what string, status int, body string) {
		t.Helper()
		if status != http.StatusForbidden || !strings.Contains(body, `"error":"forbidden"`) || strings.Contains(body, secret) {
			t.Errorf("%s: %d %.300s; want 403 forbidden without the secret", what, status, body)
		}
	}
	for _, p := range []string{
		"~/.config/svc-code/config.yaml",
		home + "/.config/svc-code/config.yaml",
		home + "/proj/../.config//svc-code/config.yaml",
		home + "/cfg/config.yaml",
		"~/.svc-code/internal.key",
		home + "/.svc-code/postgres.env",
	} {
		for _, route := range []string{"/api/file", "/api/file-raw", "/view"} {
			status, body := do(http.MethodGet, route+"?path="+url.QueryEscape(p), "")
			refused(route+" "+p, status, body)
		}
		status, body := do(http.MethodPost, "/api/file/write", `{"path":"`+p+`","content":"overwritten\n"}`)
		refused("write "+p, status, body)
	}
	for _, dir := range []string{"~/.config/svc-code", home + "/.svc-code"} {
		status, body := do(http.MethodGet, "/api/files?path="+url.QueryEscape(dir), "")
		refused("list "+dir, status, body)
	}
	for _, engine := range []string{"go", "rg"} {
		status, body := do(http.MethodGet, "/api/search?engine="+engine+"&q="+secret[:6]+"&path="+url.QueryEscape(home), "")
		if status == http.StatusBadRequest && engine == "rg" {
			continue // ripgrep is not installed
		}
		if status != http.StatusOK || strings.Contains(body, secret) || !strings.Contains(body, "notes.txt") {
			t.Errorf("%s search of home: %d %.500s; want the public note only", engine, status, body)
		}
	}
	if data, err := os.ReadFile(home + "/.config/svc-code/config.yaml"); err != nil || !strings.Contains(string(data), secret) {
		t.Errorf("config.yaml after the writes: %q, %v", data, err)
	}
}
