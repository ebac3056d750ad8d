package files_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/secretpaths"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/shadow/internal/browser"
	"github.com/svc-code/svc-code/services/shadow/internal/files"
	"github.com/svc-code/svc-code/services/shadow/internal/roots"
	"github.com/svc-code/svc-code/services/shadow/internal/search"
)

const testSecret = "files-test-secret-0123456789"

// secretText is in every file outside the root: no answer may ever hold it.
const secretText = "TOP SECRET outside the roots"

// env is shadow's file routes on an in-memory fiber app, with
//
//	base/home          the only allowed root
//	base/outside       files the routes must never reach
//	base/home-sibling  a sibling whose name extends the root's
type env struct {
	app      *fiber.App
	home     string
	outside  string
	searcher *search.Searcher
}

// Where svc-code keeps its secrets in this environment: HOME is home, the
// data home ~/.svc-code, XDG_CONFIG_HOME ~/xdg, and REDIS_PASSWORD_FILE
// ~/run/redis.pass (files the tests of private_test.go create).
func (e *env) vars() map[string]string {
	return map[string]string{
		"HOME":                e.home,
		"XDG_CONFIG_HOME":     filepath.Join(e.home, "xdg"),
		"REDIS_PASSWORD_FILE": filepath.Join(e.home, "run", "redis.pass"),
	}
}

func (e *env) private() secretpaths.Set {
	vars := e.vars()
	return secretpaths.For(func(k string) string { return vars[k] }, nil)
}

func mustEnv(t *testing.T, fetcher *browser.Fetcher) *env {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{home: filepath.Join(base, "home"), outside: filepath.Join(base, "outside"), searcher: search.New()}
	for _, d := range []string{e.home + "/dir/sub", e.outside, base + "/home-sibling"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, map[string]string{
		e.home + "/a.txt":                  "hello\nworld\n",
		e.home + "/.hidden":                "hidden\n",
		e.home + "/dir/b.go":               "package b\n",
		e.outside + "/secret.txt":          secretText,
		base + "/home-sibling/secret.txt":  secretText,
		e.outside + "/page.html":           "<p>" + secretText + "</p>",
		e.home + "/%2e%2e/placeholder.txt": "a directory literally named %2e%2e",
	})
	for link, target := range map[string]string{
		e.home + "/link_out":     "../outside",
		e.home + "/link_in":      "dir",
		e.home + "/dangling_out": e.outside + "/new.txt",
		e.home + "/broken":       "nowhere",
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	if fetcher == nil {
		fetcher = browser.NewFetcher(browser.Options{})
	}
	e.app = svchttp.New(svchttp.Config{
		Service:   "shadow",
		Secret:    internalauth.FromString(testSecret),
		BodyLimit: 32 << 20,
		Log:       slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	files.Register(e.app, files.Deps{
		Roots:    roots.New(0, roots.Static(e.home)).Private(e.private()).ExpandHome(e.home),
		Searcher: e.searcher,
		Fetcher:  fetcher,
		Log:      slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	return e
}

func writeFiles(t *testing.T, fs map[string]string) {
	t.Helper()
	for p, content := range fs {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) errorBody(t *testing.T) protocol.ErrorBody {
	t.Helper()
	var eb protocol.ErrorBody
	if err := json.Unmarshal(a.body, &eb); err != nil || eb.Error == "" {
		t.Fatalf("status %d: not an error envelope: %s", a.status, a.body)
	}
	return eb
}

// do sends a request whose target is written as is (percent-encoding
// included) and returns the answer.
func (e *env) do(t *testing.T, method, target string, body []byte, header map[string]string) answer {
	t.Helper()
	// The target goes on the wire as written (RequestURI is kept raw).
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	req.Header.Set(protocol.HeaderInternal, testSecret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.app.Test(req, -1)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: data}
}

func (e *env) get(t *testing.T, target string) answer {
	t.Helper()
	return e.do(t, http.MethodGet, target, nil, nil)
}

func (e *env) write(t *testing.T, req map[string]any) answer {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return e.do(t, http.MethodPost, "/api/file/write", body, nil)
}

func decode[T any](t *testing.T, a answer) T {
	t.Helper()
	var v T
	if a.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", a.status, a.body)
	}
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
	return v
}

func wantError(t *testing.T, a answer, status int, code string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.body)
	}
	if got := a.errorBody(t).Error; got != code {
		t.Fatalf("error %q, want %q: %s", got, code, a.body)
	}
}

// testPolicy lets the loopback test site through; everything else is
// judged by the production policy.
func testPolicy(ip netip.Addr) error {
	if ip == netip.MustParseAddr("127.0.0.1") {
		return nil
	}
	return browser.PublicOnly(ip)
}
