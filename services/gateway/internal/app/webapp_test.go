package app

import (
	"compress/gzip"
	"io"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/web"
)

// The browser app is served at its paths after sign-in, its assets and the
// service worker from the embedded build, and nothing of it reaches a
// backend.
func TestWebApp(t *testing.T) {
	g := startGateway(t)
	c := g.login()
	index, err := fs.ReadFile(web.App, "dist/index.html")
	if err != nil {
		t.Fatalf("the embedded build has no index.html (run make ui): %v", err)
	}
	pages := []string{
		"/", "/new", "/s/K7QZ3XH2M4A5B6C7D2E3F4G5H6", "/s/K7QZ3XH2M4A5B6C7D2E3F4G5H6/terminal",
		"/s/K7QZ3XH2M4A5B6C7D2E3F4G5H6/files", "/s/K7QZ3XH2M4A5B6C7D2E3F4G5H6/changes", "/s/K7QZ3XH2M4A5B6C7D2E3F4G5H6/git/",
		"/costs", "/sql", "/settings",
		"/cli", "/cli/claude/3f2b9c1e-8d7a-4e21-9b0c-2a1d5e6f7a8b", "/cli/codex/0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
	}
	for _, p := range pages {
		r := g.do(req{path: p, headers: cookie(c, nil)})
		if r.status != 200 || r.body != string(index) {
			t.Fatalf("GET %s = %d, want the app page", p, r.status)
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("GET %s: Content-Type %q", p, ct)
		}
		csp := r.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'self'") {
			t.Errorf("GET %s: CSP %q lacks script-src 'self' or frame-ancestors", p, csp)
		}
		if r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", p, r.header.Get("Cache-Control"))
		}
	}
	// The page names its assets; each is served, cached for good.
	m := regexp.MustCompile(`/assets/[\w.-]+\.js`).FindString(string(index))
	if m == "" {
		t.Fatal("index.html names no script under /assets/")
	}
	r := g.do(req{path: m, headers: cookie(c, nil)})
	if r.status != 200 || !strings.Contains(r.header.Get("Content-Type"), "javascript") {
		t.Fatalf("GET %s = %d %q", m, r.status, r.header.Get("Content-Type"))
	}
	if !strings.Contains(r.header.Get("Cache-Control"), "immutable") {
		t.Errorf("asset Cache-Control %q, want immutable", r.header.Get("Cache-Control"))
	}
	// Compressed for a browser that takes gzip; the same bytes once unzipped.
	gz := g.do(req{path: m, headers: cookie(c, map[string]string{"Accept-Encoding": "gzip, br"})})
	if gz.header.Get("Content-Encoding") != "gzip" || len(gz.body) >= len(r.body) {
		t.Fatalf("asset with Accept-Encoding gzip: encoding %q, %d bytes (plain %d)", gz.header.Get("Content-Encoding"), len(gz.body), len(r.body))
	}
	zr, err := gzip.NewReader(strings.NewReader(gz.body))
	if err != nil {
		t.Fatal(err)
	}
	if plain, _ := io.ReadAll(zr); string(plain) != r.body {
		t.Fatal("the gzipped asset does not unzip to the asset")
	}
	if no := g.do(req{path: m, headers: cookie(c, map[string]string{"Accept-Encoding": "gzip;q=0"})}); no.header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 still got %q", no.header.Get("Content-Encoding"))
	}
	// The service worker is public, comes from the build, and caches no API.
	r = g.do(req{path: "/sw.js"})
	if r.status != 200 || !strings.Contains(r.body, "svc-code-shell-") || strings.Contains(r.body, "__VERSION__") {
		t.Fatalf("GET /sw.js = %d, want the built service worker", r.status)
	}
	// Paths that are not the app's are 404, and none reaches a backend.
	for _, p := range []string{"/s/lowercase", "/s/K7QZ3XH2M4A5B6C7D2E3F4G5H6/x", "/s/K7QZ3XH2M4A5B6C7D2E3F4G5H6/settings", "/costs/x", "/sqlx", "/cli/gemini/abc", "/cli/claude/", "/cli/claude/a/b", "/cli/claude/..", "/cli/claude/.hidden", "/clix", "/assets/missing.js", "/assets/../web.go", "/dist/index.html", "/index.html"} {
		wantStatus(t, g.do(req{path: p, headers: cookie(c, nil)}), 404, "not_found")
	}
	// Without a credential the app's page and assets are refused.
	for _, p := range []string{"/", "/new", "/s/K7QZ3XH2M4A5B6C7D2E3F4G5H6", m} {
		wantStatus(t, g.do(req{path: p}), 401, "unauthorized")
	}
	if n := g.backend.hits.Load(); n != 0 {
		t.Errorf("the app's paths reached a backend %d times", n)
	}
}
