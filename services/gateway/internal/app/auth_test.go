package app

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestPublicAllowlist(t *testing.T) {
	g := startGateway(t)
	public := []string{"/login", "/health", "/sw.js", "/manifest.json", "/static/css/login.css", "/instance-icons/default.svg"}
	for _, p := range public {
		t.Run("public "+p, func(t *testing.T) {
			r := g.do(req{path: p})
			if r.status != 200 {
				t.Errorf("GET %s without credential = %d, want 200", p, r.status)
			}
		})
	}
	t.Run("logout is public", func(t *testing.T) {
		wantStatus(t, g.do(req{method: "POST", path: "/api/logout"}), 200, "")
	})
	t.Run("login is public", func(t *testing.T) {
		r := g.do(req{method: "POST", path: "/api/login", body: `{"password":"nope-nope"}`, headers: map[string]string{"Content-Type": "application/json"}})
		wantStatus(t, r, 401, "invalid_password")
	})
	t.Run("unknown icon under the public prefix is a 404, not a 401", func(t *testing.T) {
		wantStatus(t, g.do(req{path: "/instance-icons/missing.png"}), 404, "not_found")
	})
	private := []string{
		"/api/info", "/api/sessions", "/chat", "/api/events", "/api/auth/revoke", "/",
		"/health/", "/login/", "/HEALTH", "/sw.js/x", "/manifest.json.bak",
		"/static/css/other.css", "/static/css/login.css/", "/instance-icons", "/instance-icons/",
		"/instance-icons/../api/info", "/instance-icons/%2e%2e/api/info", "//api/info",
		"/api/login/../info", "/static/css/../../api/info",
	}
	for _, p := range private {
		t.Run("private "+p, func(t *testing.T) {
			wantStatus(t, g.do(req{path: p}), 401, "unauthorized")
		})
	}
	if n := g.backend.hits.Load(); n != 0 {
		t.Errorf("backend reached %d times by unauthenticated requests", n)
	}
}

func TestOptionsBypassesAuth(t *testing.T) {
	g := startGateway(t)
	r := g.do(req{method: "OPTIONS", path: "/api/sessions", headers: map[string]string{"Origin": "https://elsewhere.example", "Access-Control-Request-Method": "POST"}})
	if r.status != 204 {
		t.Fatalf("OPTIONS = %d, want 204", r.status)
	}
	if r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("an origin that is not in allowed_origins got CORS permission")
	}
	if g.backend.hits.Load() != 0 {
		t.Error("preflight reached the backend")
	}
}

func TestCredentialsInTheirPlaces(t *testing.T) {
	g := startGateway(t)
	tok := g.token()
	ck := g.login()
	tests := []struct {
		name    string
		path    string
		headers map[string]string
		want    int
	}{
		{"bearer token", "/api/info", bearer(tok), 200},
		{"bearer scheme is case-insensitive", "/api/info", map[string]string{"Authorization": "bearer " + tok}, 200},
		{"tkn link", "/api/info?tkn=" + tok, nil, 200},
		{"cookie", "/api/info", cookie(ck, nil), 200},
		{"password as bearer", "/api/info", bearer(testPassword), 401},
		{"password as tkn", "/api/info?tkn=correct+horse+battery", nil, 401},
		{"cookie value as bearer", "/api/info", bearer(ck), 401},
		{"cookie value as tkn", "/api/info?tkn=" + ck, nil, 401},
		{"api token as cookie", "/api/info", cookie(tok, nil), 401},
		{"basic scheme", "/api/info", map[string]string{"Authorization": "Basic " + tok}, 401},
		{"bad bearer does not fall back to a good cookie", "/api/info", cookie(ck, bearer("svct_0_x")), 401},
		{"truncated token", "/api/info", bearer(tok[:len(tok)-1]), 401},
		{"garbage cookie", "/api/info", cookie("a.b.c", nil), 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := g.do(req{path: tt.path, headers: tt.headers})
			if r.status != tt.want {
				t.Fatalf("status = %d, want %d (%s)", r.status, tt.want, r.body)
			}
			if tt.want == 401 {
				wantStatus(t, r, 401, "unauthorized")
			}
		})
	}
}

func TestBrowserPagesRedirectToLogin(t *testing.T) {
	g := startGateway(t)
	html := map[string]string{"Accept": "text/html,application/xhtml+xml"}
	r := g.do(req{path: "/some/page?x=1&tkn=stale", headers: html})
	if r.status != 302 {
		t.Fatalf("status = %d, want 302", r.status)
	}
	if loc := r.header.Get("Location"); loc != "/login?next=%2Fsome%2Fpage%3Fx%3D1" {
		t.Errorf("Location = %q (tkn must be dropped from next)", loc)
	}
	// API routes and WebSocket-ish requests get 401, never a redirect.
	wantStatus(t, g.do(req{path: "/api/sessions", headers: html}), 401, "unauthorized")
	wantStatus(t, g.do(req{method: "POST", path: "/x", headers: html}), 401, "unauthorized")
}

func TestLogin(t *testing.T) {
	g := startGateway(t)
	jsonCT := map[string]string{"Content-Type": "application/json"}

	t.Run("success sets the cookie", func(t *testing.T) {
		r := g.do(req{method: "POST", path: "/api/login", body: `{"password":"` + testPassword + `"}`, headers: jsonCT})
		wantStatus(t, r, 200, "")
		if r.json(t)["ok"] != true {
			t.Errorf("body = %s", r.body)
		}
		sc := r.header.Get("Set-Cookie")
		for _, want := range []string{"svc_auth=", "httponly", "samesite=lax", "path=/", "max-age=2592000"} {
			if !strings.Contains(strings.ToLower(sc), want) {
				t.Errorf("Set-Cookie %q lacks %q", sc, want)
			}
		}
		if strings.Contains(strings.ToLower(sc), "secure") {
			t.Errorf("Secure set on plain HTTP: %q", sc)
		}
	})
	t.Run("the api token does not open the login", func(t *testing.T) {
		r := g.do(req{method: "POST", path: "/api/login", body: `{"password":"` + g.token() + `"}`, headers: jsonCT})
		wantStatus(t, r, 401, "invalid_password")
	})
	bad := []struct {
		name, body, ct string
		status         int
		code           string
	}{
		{"malformed JSON", `{"password":`, "application/json", 400, "bad_request"},
		{"missing password", `{}`, "application/json", 400, "bad_request"},
		{"unknown field", `{"password":"x","admin":true}`, "application/json", 400, "bad_request"},
		{"not an object", `["x"]`, "application/json", 400, "bad_request"},
		{"trailing data", `{"password":"x"} {}`, "application/json", 400, "bad_request"},
		{"wrong content type", `{"password":"x"}`, "text/plain", 415, "unsupported_media_type"},
		{"empty password", `{"password":""}`, "application/json", 400, "bad_request"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			r := g.do(req{method: "POST", path: "/api/login", body: tt.body, headers: map[string]string{"Content-Type": tt.ct}})
			wantStatus(t, r, tt.status, tt.code)
			if r.header.Get("Set-Cookie") != "" {
				t.Error("a failed login set a cookie")
			}
		})
	}
}

func TestHugeBodyRefused(t *testing.T) {
	g := startGateway(t)
	// The start of the body only (the server reads at most 8 KiB ahead of
	// the handler), then the answer must come without the rest.
	start := strings.Repeat(" ", 16<<10)
	head := "POST /api/login HTTP/1.1\r\nHost: " + strings.TrimPrefix(g.base, "http://") + "\r\nContent-Type: application/json\r\nContent-Length: 2097152\r\n\r\n" + start
	status, body := g.raw(t, head)
	if status != 413 || !strings.Contains(body, `"error":"payload_too_large"`) {
		t.Errorf("got %d %s, want 413 payload_too_large", status, body)
	}
	tok := g.token()
	head = "POST /api/sessions HTTP/1.1\r\nHost: " + strings.TrimPrefix(g.base, "http://") + "\r\nAuthorization: Bearer " + tok + "\r\nContent-Type: application/json\r\nContent-Length: 2097152\r\n\r\n" + start
	status, body = g.raw(t, head)
	if status != 413 || !strings.Contains(body, `"error":"payload_too_large"`) {
		t.Errorf("proxied route: got %d %s, want 413 payload_too_large", status, body)
	}
	if g.backend.hits.Load() != 0 {
		t.Error("an oversized body reached the backend")
	}
}

func TestLoginForm(t *testing.T) {
	g := startGateway(t)
	page := g.do(req{path: "/login?next=/projects"})
	for _, want := range []string{`<form method="post" action="/api/login">`, `name="password"`, `value="/projects"`, `/static/css/login.css`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("login page lacks %q", want)
		}
	}
	if strings.Contains(page.body, "<script") {
		t.Error("login page needs JavaScript")
	}
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	tests := []struct {
		name, body, wantLoc string
		status              int
	}{
		{"success goes to next", "password=correct+horse+battery&next=%2Fprojects%3Fa%3D1", "/projects?a=1", 303},
		{"open redirect refused", "password=correct+horse+battery&next=%2F%2Fevil.example", "/", 303},
		{"backslash redirect refused", "password=correct+horse+battery&next=%2F%5Cevil.example", "/", 303},
		{"absolute URL refused", "password=correct+horse+battery&next=https%3A%2F%2Fevil.example", "/", 303},
		{"wrong password re-renders", "password=wrong-one&next=%2Fx", "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := g.do(req{method: "POST", path: "/api/login", body: tt.body, headers: form})
			if r.status != tt.status {
				t.Fatalf("status = %d, want %d (%s)", r.status, tt.status, r.body)
			}
			if loc := r.header.Get("Location"); loc != tt.wantLoc {
				t.Errorf("Location = %q, want %q", loc, tt.wantLoc)
			}
			if tt.status == 401 && !strings.Contains(r.body, "Wrong password") {
				t.Errorf("wrong-password page lacks the message: %s", r.body)
			}
		})
	}
}

func TestLoginThrottled(t *testing.T) {
	g := startGateway(t)
	jsonCT := map[string]string{"Content-Type": "application/json"}
	for i := range 6 {
		r := g.do(req{method: "POST", path: "/api/login", body: `{"password":"wrong-guess"}`, headers: jsonCT})
		wantStatus(t, r, 401, "invalid_password")
		_ = i
	}
	// The sixth failure imposed a delay: even the right password waits.
	r := g.do(req{method: "POST", path: "/api/login", body: `{"password":"` + testPassword + `"}`, headers: jsonCT})
	wantStatus(t, r, 429, "too_many_attempts")
	if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After = %q", ra)
	}
	if r.header.Get("Set-Cookie") != "" {
		t.Error("a throttled login set a cookie")
	}
}

// Failed attempts from different loopback addresses (any local process
// can send from 127.0.0.2, 127.0.0.3, ...) count against one client.
func TestLoginThrottleCountsLoopbackAsOneClient(t *testing.T) {
	g := startGateway(t)
	from := func(i int) *http.Client {
		src := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i))}
		return &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: src}).DialContext}}
	}
	// try answers the status of one sign-in from 127.0.0.(2+i).
	try := func(i int, password string) int {
		t.Helper()
		hr, _ := http.NewRequest(http.MethodPost, g.base+"/api/login", strings.NewReader(`{"password":"`+password+`"}`))
		hr.Header.Set("Content-Type", "application/json")
		resp, err := from(i).Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	for i := range 6 {
		if got := try(i, "wrong-guess"); got != http.StatusUnauthorized {
			t.Fatalf("guess %d from 127.0.0.%d: %d, want 401", i+1, 2+i, got)
		}
	}
	if got := try(6, testPassword); got != http.StatusTooManyRequests {
		t.Errorf("after six failures from six loopback addresses, a seventh from another: %d, want 429", got)
	}
}

// A form sign-out lands on the sign-in page, which says the browser is
// signed out (or that the record is pending, when Redis could not take it).
func TestSignInPageAfterSignOut(t *testing.T) {
	g := startGateway(t)
	r := g.do(req{method: "POST", path: "/api/logout", headers: cookie(g.login(), map[string]string{
		"Content-Type": "application/x-www-form-urlencoded", "Origin": g.origin,
	})})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/login?signed_out=1" {
		t.Fatalf("form logout: %d to %q, want 303 to /login?signed_out=1", r.status, r.header.Get("Location"))
	}
	for query, want := range map[string]string{
		"?signed_out=1":       "You are signed out. A copy of this browser&#39;s cookie no longer works.",
		"?signed_out=pending": "The sign-out could not be recorded in Redis yet",
	} {
		page := g.do(req{path: "/login" + query})
		if page.status != 200 || !strings.Contains(page.body, `role="status"`) || !strings.Contains(page.body, want) {
			t.Errorf("/login%s: %d, the notice %q missing:\n%s", query, page.status, want, page.body)
		}
	}
	if page := g.do(req{path: "/login"}); strings.Contains(page.body, `role="status"`) {
		t.Error("the plain sign-in page shows a sign-out notice")
	}
}

func TestLogoutClearsCookie(t *testing.T) {
	g := startGateway(t)
	r := g.do(req{method: "POST", path: "/api/logout", headers: cookie(g.login(), nil)})
	wantStatus(t, r, 200, "")
	var cleared bool
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == "svc_auth" && c.Value == "" && c.MaxAge < 0 {
			cleared = true
		}
	}
	if !cleared {
		t.Errorf("logout did not clear svc_auth: %v", r.header.Values("Set-Cookie"))
	}
}

func TestSecurityHeadersEverywhere(t *testing.T) {
	g := startGateway(t)
	tok := g.token()
	for _, r := range []req{
		{path: "/health"},
		{path: "/login"},
		{path: "/api/info"},
		{path: "/api/info", headers: bearer(tok)},
		{path: "/api/sessions", headers: bearer(tok)},
		{path: "/api/nope", headers: bearer(tok)},
		{method: "POST", path: "/api/login", body: "{", headers: map[string]string{"Content-Type": "application/json"}},
	} {
		res := g.do(r)
		if res.header.Get("X-Content-Type-Options") != "nosniff" || res.header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s %s: missing nosniff/no-referrer: %v", r.method, r.path, res.header)
		}
		csp := res.header.Get("Content-Security-Policy")
		if strings.HasPrefix(r.path, "/api/") && (!strings.Contains(csp, "frame-ancestors 'none'") || res.header.Get("X-Frame-Options") != "DENY") {
			t.Errorf("%s: CSP %q lacks frame-ancestors 'none'", r.path, csp)
		}
		if !strings.Contains(csp, "frame-ancestors") {
			t.Errorf("%s: CSP %q lacks frame-ancestors", r.path, csp)
		}
	}
}

// sandboxCSP is a backend's policy for content the UI shows in a frame.
const sandboxCSP = "sandbox; default-src 'none'; img-src data:; frame-ancestors 'self'"

// TestBackendSandboxPolicyKept: an /api/ answer whose backend set a
// sandboxing Content-Security-Policy (files, rendered HTML, proxied pages)
// keeps it and may be framed by the UI's own origin; any other policy a
// backend sets on /api/ is replaced by the gateway's frame-ancestors 'none'.
func TestBackendSandboxPolicyKept(t *testing.T) {
	g := startGateway(t)
	tok := g.token()
	res := g.do(req{path: "/api/file-raw?path=/x.html", headers: bearer(tok)})
	wantStatus(t, res, 200, "")
	if csp := res.header.Get("Content-Security-Policy"); csp != sandboxCSP {
		t.Errorf("CSP %q, want the backend's %q", csp, sandboxCSP)
	}
	if xfo := res.header.Get("X-Frame-Options"); xfo != "SAMEORIGIN" {
		t.Errorf("X-Frame-Options %q, want SAMEORIGIN", xfo)
	}
	if res.header.Get("X-Content-Type-Options") != "nosniff" || res.header.Get("Cache-Control") != "no-store" {
		t.Errorf("headers: %v", res.header)
	}
	res = g.do(req{path: "/api/browser/proxy?url=x", headers: bearer(tok)})
	if csp := res.header.Get("Content-Security-Policy"); csp != "frame-ancestors 'none'" || res.header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("a policy without sandbox kept: CSP %q, XFO %q", csp, res.header.Get("X-Frame-Options"))
	}
}
