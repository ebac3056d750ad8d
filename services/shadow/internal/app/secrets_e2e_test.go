package app

import (
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

	sh := startShadow(t, map[string]string{"HOME": home, "SHADOW_CONSUMER": "secrets-test"}, home, slog.New(slog.DiscardHandler))
	do := sh.do

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
