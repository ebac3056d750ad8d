package app

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/configfile"
)

const newPassword = "a brand new passphrase"

// credState is what a password change replaces in the config file.
func (g *gateway) credState() string {
	g.t.Helper()
	d, err := configfile.New(g.cfgPath).Read()
	if err != nil {
		g.t.Fatal(err)
	}
	var b strings.Builder
	for _, k := range []string{"password_hash", "token_key", "cookie_secret", "api_token"} {
		v, _ := d.String(k)
		b.WriteString(k + "=" + v + "\n")
	}
	return b.String()
}

func passwordBody(current, next string) string {
	return `{"current_password":"` + current + `","new_password":"` + next + `"}`
}

// fromPage are the headers a browser sends with a same-origin fetch.
func (g *gateway) fromPage(ck string) map[string]string {
	return cookie(ck, map[string]string{"Content-Type": "application/json", "Origin": g.origin, "Sec-Fetch-Site": "same-origin"})
}

func (g *gateway) loginWith(pw string) result {
	g.t.Helper()
	return g.do(req{method: "POST", path: "/api/login", body: `{"password":"` + pw + `"}`, headers: map[string]string{"Content-Type": "application/json"}})
}

// TestPasswordChangeFromBrowser: the right current password and a good new
// one: every cookie (this browser's included) and the API token are void,
// the answer shows the new token, which works, and only the new password
// signs in.
func TestPasswordChangeFromBrowser(t *testing.T) {
	g := startGateway(t)
	ck, other := g.login(), g.login()
	oldTok := g.token()
	firstPw := filepath.Join(filepath.Dir(g.cfgPath), FirstPasswordFile)
	if err := os.WriteFile(firstPw, []byte("void-soon\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	r := g.do(req{method: "POST", path: "/api/auth/password", body: passwordBody(testPassword, newPassword), headers: g.fromPage(ck)})
	wantStatus(t, r, 200, "")
	body := r.json(t)
	tok, _ := body["api_token"].(string)
	if tok == "" || tok == oldTok || tok != g.token() {
		t.Fatalf("api_token = %q, want the config file's new token (old %q, file %q)", tok, oldTok, g.token())
	}
	if msg, _ := body["message"].(string); !strings.Contains(msg, "signed out") {
		t.Errorf("message %q does not say that browsers are signed out", msg)
	}
	cleared := false
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == "svc_auth" && c.Value == "" && c.MaxAge < 0 {
			cleared = true
		}
	}
	if !cleared {
		t.Errorf("the answer does not clear svc_auth: %v", r.header.Values("Set-Cookie"))
	}
	for name, h := range map[string]map[string]string{"this browser": cookie(ck, nil), "another browser": cookie(other, nil), "old token": bearer(oldTok)} {
		wantStatus(t, g.do(req{path: "/api/info", headers: h}), 401, "unauthorized")
		_ = name
	}
	wantStatus(t, g.do(req{path: "/api/info", headers: bearer(tok)}), 200, "")
	wantStatus(t, g.loginWith(testPassword), 401, "invalid_password")
	wantStatus(t, g.loginWith(newPassword), 200, "")
	if _, err := os.Stat(firstPw); !os.IsNotExist(err) {
		t.Errorf("the void first password's file is still there (stat: %v)", err)
	}
}

// TestPasswordChangeAttacks: each refusal leaves the password, the keys
// and the token as they were, and the browser signed in.
func TestPasswordChangeAttacks(t *testing.T) {
	g := startGateway(t)
	ck := g.login()
	tok := g.token()
	before := g.credState()
	jsonBearer := map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
	tests := []struct {
		name    string
		body    string
		headers map[string]string
		status  int
		code    string
	}{
		{"wrong current password", passwordBody("not the password", newPassword), g.fromPage(ck), 403, "invalid_password"},
		{"no credential, right password", passwordBody(testPassword, newPassword), map[string]string{"Content-Type": "application/json", "Origin": g.origin}, 401, "unauthorized"},
		{"cross-site post", passwordBody(testPassword, newPassword), cookie(ck, map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}), 403, "origin_forbidden"},
		{"look-alike origin", passwordBody(testPassword, newPassword), cookie(ck, map[string]string{"Content-Type": "application/json", "Origin": g.origin + ".evil.example"}), 403, "origin_forbidden"},
		{"Sec-Fetch-Site cross-site", passwordBody(testPassword, newPassword), cookie(ck, map[string]string{"Content-Type": "application/json", "Origin": g.origin, "Sec-Fetch-Site": "cross-site"}), 403, "origin_forbidden"},
		{"cookie without Origin", passwordBody(testPassword, newPassword), cookie(ck, map[string]string{"Content-Type": "application/json"}), 403, "origin_forbidden"},
		{"tkn link from another site", passwordBody(testPassword, newPassword), map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403, "origin_forbidden"},
		{"bearer token alone", `{"new_password":"` + newPassword + `"}`, jsonBearer, 400, "bad_request"},
		{"bearer token, wrong password", passwordBody("guess-guess", newPassword), jsonBearer, 403, "invalid_password"},
		{"new password too short", passwordBody(testPassword, "short"), g.fromPage(ck), 400, "bad_request"},
		{"new password too long", passwordBody(testPassword, strings.Repeat("x", 1025)), g.fromPage(ck), 400, "bad_request"},
		{"new password with a line break", passwordBody(testPassword, `first line\nsecond`), g.fromPage(ck), 400, "bad_request"},
		{"empty current password", passwordBody("", newPassword), g.fromPage(ck), 400, "bad_request"},
		{"unknown field", `{"current_password":"` + testPassword + `","new_password":"` + newPassword + `","user":"x"}`, g.fromPage(ck), 400, "bad_request"},
		{"not JSON", "current_password=" + testPassword, cookie(ck, map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": g.origin}), 415, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := "/api/auth/password"
			if strings.HasPrefix(tt.name, "tkn") {
				path += "?tkn=" + tok
			}
			r := g.do(req{method: "POST", path: path, body: tt.body, headers: tt.headers})
			wantStatus(t, r, tt.status, tt.code)
			if got := g.credState(); got != before {
				t.Fatalf("a refused change changed the config file")
			}
			if sc := r.header.Get("Set-Cookie"); sc != "" {
				t.Errorf("a refused change set a cookie: %s", sc)
			}
			wantStatus(t, g.do(req{path: "/api/info", headers: cookie(ck, nil)}), 200, "")
			wantStatus(t, g.do(req{path: "/api/info", headers: bearer(tok)}), 200, "")
		})
	}
}

// TestPasswordChangeThrottledLikeLogin: wrong current passwords count as
// failed logins of the client (one limiter): after six, even the right
// password waits, here and at the login.
func TestPasswordChangeThrottledLikeLogin(t *testing.T) {
	g := startGateway(t)
	ck := g.login()
	before := g.credState()
	for range 6 {
		wantStatus(t, g.do(req{method: "POST", path: "/api/auth/password", body: passwordBody("wrong-guess", newPassword), headers: g.fromPage(ck)}), 403, "invalid_password")
	}
	r := g.do(req{method: "POST", path: "/api/auth/password", body: passwordBody(testPassword, newPassword), headers: g.fromPage(ck)})
	wantStatus(t, r, 429, "too_many_attempts")
	if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After = %q", ra)
	}
	wantStatus(t, g.loginWith(testPassword), 429, "too_many_attempts")
	if g.credState() != before {
		t.Fatal("a throttled change changed the config file")
	}
	// The wait over, the right password goes through.
	waitFor(t, 5*time.Second, "the throttle to let the right password through", func() bool {
		return g.do(req{method: "POST", path: "/api/auth/password", body: passwordBody(testPassword, newPassword), headers: g.fromPage(ck)}).status == 200
	})
}

// TestPasswordChangeReachesOtherInstances: a second instance that polls
// the config file once an hour refuses the old credentials at once (the
// old keys are retired in Redis) and takes the new token.
func TestPasswordChangeReachesOtherInstances(t *testing.T) {
	a := startGateway(t)
	b := startGateway(t, withConfigPath(a.cfgPath), withPrefix(a.prefix), withPoll(time.Hour))
	ck := a.login()
	oldTok := a.token()
	wantStatus(t, b.do(req{path: "/api/info", headers: cookie(ck, nil)}), 200, "")
	r := a.do(req{method: "POST", path: "/api/auth/password", body: passwordBody(testPassword, newPassword), headers: a.fromPage(ck)})
	wantStatus(t, r, 200, "")
	tok, _ := r.json(t)["api_token"].(string)
	waitFor(t, time.Second, "instance B to refuse the old cookie and token", func() bool {
		return b.do(req{path: "/api/info", headers: cookie(ck, nil)}).status == 401 &&
			b.do(req{path: "/api/info", headers: bearer(oldTok)}).status == 401
	})
	waitFor(t, time.Second, "instance B to take the new token", func() bool {
		return b.do(req{path: "/api/info", headers: bearer(tok)}).status == 200
	})
	wantStatus(t, b.loginWith(newPassword), 200, "")
}

// TestRevokeScriptsAnswersNewToken: a browser cannot read the config file,
// so revoking scripts from it answers the new token; revoking browsers
// answers none.
func TestRevokeScriptsAnswersNewToken(t *testing.T) {
	g := startGateway(t)
	ck := g.login()
	oldTok := g.token()
	r := g.do(req{method: "POST", path: "/api/auth/revoke", body: `{"scope":"scripts"}`, headers: g.fromPage(ck)})
	wantStatus(t, r, 200, "")
	tok, _ := r.json(t)["api_token"].(string)
	if tok == "" || tok == oldTok || tok != g.token() {
		t.Fatalf("api_token = %q, want the config file's new token %q (old %q)", tok, g.token(), oldTok)
	}
	wantStatus(t, g.do(req{path: "/api/info", headers: bearer(oldTok)}), 401, "unauthorized")
	wantStatus(t, g.do(req{path: "/api/info", headers: bearer(tok)}), 200, "")
	r = g.do(req{method: "POST", path: "/api/auth/revoke", body: `{"scope":"browsers"}`, headers: map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}})
	wantStatus(t, r, 200, "")
	if _, ok := r.json(t)["api_token"]; ok {
		t.Errorf("revoke browsers answered a token: %s", r.body)
	}
}
