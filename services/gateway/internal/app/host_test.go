package app

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestHostAllowList is issue 15's item 7: a DNS-rebinding page reaches the
// gateway under its own name, and the Origin it sends matches that Host.
// Only configured names are answered.
func TestHostAllowList(t *testing.T) {
	g := startGateway(t, withEnv("SVC_HOSTS", "code.example"))
	ck := g.login()
	port := g.base[strings.LastIndex(g.base, ":")+1:]
	rebound := "attacker.example:" + port
	before := g.backend.hits.Load()
	r := g.do(req{method: "POST", path: "/api/sessions", body: `{}`, headers: cookie(ck, map[string]string{
		"Host": rebound, "Origin": "http://" + rebound, "Content-Type": "application/json",
	})})
	wantStatus(t, r, 421, "unknown_host")
	if !strings.Contains(r.body, "SVC_HOSTS") {
		t.Errorf("the refusal does not say how to allow a name: %s", r.body)
	}
	wantStatus(t, g.do(req{path: "/api/info", headers: cookie(ck, map[string]string{"Host": rebound})}), 421, "unknown_host")
	wantStatus(t, g.do(req{method: "POST", path: "/api/login", body: `{"password":"` + testPassword + `"}`, headers: map[string]string{"Host": rebound, "Content-Type": "application/json"}}), 421, "unknown_host")
	if g.backend.hits.Load() != before {
		t.Error("a request to an unknown host reached the backend")
	}

	for _, host := range []string{"localhost:" + port, "[::1]:" + port, "127.0.0.1:" + port, "code.example:" + port, "CODE.example"} {
		t.Run(host, func(t *testing.T) {
			origin := "http://" + strings.ToLower(host)
			wantStatus(t, g.do(req{method: "POST", path: "/api/sessions", body: `{}`, headers: cookie(ck, map[string]string{
				"Host": host, "Origin": origin, "Content-Type": "application/json",
			})}), 200, "")
		})
	}

	// The config file's allowed_hosts applies without a restart.
	b, err := os.ReadFile(g.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g.cfgPath, append(b, []byte("allowed_hosts:\n  - box.lan\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "allowed_hosts to apply", func() bool {
		return g.do(req{path: "/api/info", headers: cookie(ck, map[string]string{"Host": "box.lan:" + port})}).status == 200
	})
}

// TestForwardedHeadersFromUntrustedPeer: with no trusted proxy, a client's
// X-Forwarded-Proto changes neither the origin the gate compares with nor
// the cookie's Secure flag, and X-Forwarded-Host cannot bring in a name.
func TestForwardedHeadersFromUntrustedPeer(t *testing.T) {
	g := startGateway(t)
	ck := g.login()
	port := g.base[strings.LastIndex(g.base, ":")+1:]
	forged := map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "attacker.example", "X-Forwarded-For": "203.0.113.7"}

	r := g.do(req{method: "POST", path: "/api/login", body: `{"password":"` + testPassword + `"}`, headers: merge(forged, map[string]string{"Content-Type": "application/json"})})
	wantStatus(t, r, 200, "")
	if sc := strings.ToLower(r.header.Get("Set-Cookie")); strings.Contains(sc, "secure") {
		t.Errorf("a client's X-Forwarded-Proto made the cookie Secure: %q", sc)
	}
	wantStatus(t, g.do(req{method: "POST", path: "/api/sessions", body: `{}`, headers: cookie(ck, merge(forged, map[string]string{"Origin": "https://127.0.0.1:" + port}))}), 403, "origin_forbidden")
	wantStatus(t, g.do(req{method: "POST", path: "/api/sessions", body: `{}`, headers: cookie(ck, merge(forged, map[string]string{"Origin": "http://attacker.example"}))}), 403, "origin_forbidden")
	r = g.do(req{method: "POST", path: "/api/sessions", body: `{}`, headers: cookie(ck, merge(forged, map[string]string{"Origin": g.origin}))})
	wantStatus(t, r, 200, "")
	seen := g.backend.last()
	if got := seen.Header.Get("X-Forwarded-Proto"); got != "http" {
		t.Errorf("backend saw X-Forwarded-Proto %q, want http", got)
	}
	if got := seen.Header.Values("X-Forwarded-For"); len(got) != 1 || got[0] != "127.0.0.1" {
		t.Errorf("backend saw X-Forwarded-For %q, want the TCP peer", got)
	}
	if got := seen.Header.Get("X-Forwarded-Host"); got != "127.0.0.1:"+port {
		t.Errorf("backend saw X-Forwarded-Host %q", got)
	}
}

// TestTrustedProxy: behind a configured proxy, its X-Forwarded-* headers
// set the scheme (Secure cookie, origin compared), the host (checked
// against the list) and the client address.
func TestTrustedProxy(t *testing.T) {
	g := startGateway(t, withEnv("SVC_TRUSTED_PROXIES", "127.0.0.1/32"), withEnv("SVC_HOSTS", "code.example.com"))
	viaProxy := map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "code.example.com", "X-Forwarded-For": "198.51.100.4, 203.0.113.9"}

	r := g.do(req{method: "POST", path: "/api/login", body: `{"password":"` + testPassword + `"}`, headers: merge(viaProxy, map[string]string{"Content-Type": "application/json"})})
	wantStatus(t, r, 200, "")
	if sc := strings.ToLower(r.header.Get("Set-Cookie")); !strings.Contains(sc, "secure") {
		t.Errorf("cookie behind a TLS proxy lacks Secure: %q", sc)
	}
	ck := g.login()
	wantStatus(t, g.do(req{method: "POST", path: "/api/sessions", body: `{}`, headers: cookie(ck, merge(viaProxy, map[string]string{"Origin": "https://code.example.com"}))}), 200, "")
	seen := g.backend.last()
	if got := seen.Header.Get("X-Forwarded-For"); got != "203.0.113.9" {
		t.Errorf("backend saw X-Forwarded-For %q, want the proxy's client", got)
	}
	if got := seen.Header.Get("X-Forwarded-Proto"); got != "https" {
		t.Errorf("backend saw X-Forwarded-Proto %q", got)
	}
	// The plain-HTTP origin no longer matches what the proxy says.
	wantStatus(t, g.do(req{method: "POST", path: "/api/sessions", body: `{}`, headers: cookie(ck, merge(viaProxy, map[string]string{"Origin": "http://code.example.com"}))}), 403, "origin_forbidden")
	// A forwarded host is checked like Host.
	wantStatus(t, g.do(req{path: "/api/info", headers: cookie(ck, merge(viaProxy, map[string]string{"X-Forwarded-Host": "attacker.example"}))}), 421, "unknown_host")
	wantStatus(t, g.do(req{path: "/api/info", headers: cookie(ck, map[string]string{"X-Forwarded-Proto": "gopher"})}), 400, "bad_request")
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
