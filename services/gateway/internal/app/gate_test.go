package app

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
)

func TestOriginGate(t *testing.T) {
	g := startGateway(t)
	ck := g.login()
	tok := g.token()
	own := g.origin
	port := strings.TrimPrefix(own, "http://127.0.0.1:")
	tests := []struct {
		name    string
		method  string
		headers map[string]string
		want    int
	}{
		{"cookie, own origin", "POST", cookie(ck, map[string]string{"Origin": own}), 200},
		{"cookie, same-origin fetch site, no origin", "POST", cookie(ck, map[string]string{"Sec-Fetch-Site": "same-origin"}), 200},
		{"cookie, no origin headers at all", "POST", cookie(ck, nil), 403},
		{"cookie, look-alike host", "POST", cookie(ck, map[string]string{"Origin": own + ".evil.com"}), 403},
		{"cookie, scheme changed", "PUT", cookie(ck, map[string]string{"Origin": "https://127.0.0.1:" + port}), 403},
		{"cookie, port changed", "DELETE", cookie(ck, map[string]string{"Origin": "http://127.0.0.1:1"}), 403},
		{"cookie, null origin", "PATCH", cookie(ck, map[string]string{"Origin": "null"}), 403},
		{"cookie, own origin but cross-site", "POST", cookie(ck, map[string]string{"Origin": own, "Sec-Fetch-Site": "cross-site"}), 403},
		{"cookie, cross-site without origin", "POST", cookie(ck, map[string]string{"Sec-Fetch-Site": "cross-site"}), 403},
		{"cookie GET from a foreign origin is fine", "GET", cookie(ck, map[string]string{"Origin": "https://evil.example"}), 200},
		{"tkn POST without origin", "POST:tkn", nil, 403},
		{"tkn POST with own origin", "POST:tkn", map[string]string{"Origin": own}, 200},
		{"bearer POST without origin is exempt", "POST", bearer(tok), 200},
		{"bearer POST with a foreign origin is exempt", "POST", map[string]string{"Authorization": "Bearer " + tok, "Origin": "https://evil.example"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := "/api/sessions"
			method := tt.method
			if m, ok := strings.CutSuffix(method, ":tkn"); ok {
				method, path = m, path+"?tkn="+tok
			}
			before := g.backend.hits.Load()
			r := g.do(req{method: method, path: path, body: `{}`, headers: tt.headers})
			if r.status != tt.want {
				t.Fatalf("status = %d, want %d (%s)", r.status, tt.want, r.body)
			}
			after := g.backend.hits.Load()
			if tt.want == 403 {
				wantStatus(t, r, 403, "origin_forbidden")
				if after != before {
					t.Error("a refused request reached the backend")
				}
			} else if after != before+1 {
				t.Error("an allowed request did not reach the backend")
			}
		})
	}
}

func TestRevokeScripts(t *testing.T) {
	g := startGateway(t)
	tok := g.token()
	ck := g.login()
	r := g.do(req{method: "POST", path: "/api/auth/revoke", body: `{"scope":"scripts"}`, headers: map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}})
	wantStatus(t, r, 200, "")
	m := r.json(t)
	if m["ok"] != true || m["scope"] != "scripts" || m["bearer_epoch"] != float64(1) || m["cookie_epoch"] != float64(0) {
		t.Fatalf("response = %s", r.body)
	}
	if len(m) != 5 || m["api_token"] != g.token() {
		t.Errorf("response is not the four fields and the new api_token: %s", r.body)
	}
	wantStatus(t, g.do(req{path: "/api/info", headers: bearer(tok)}), 401, "unauthorized")
	wantStatus(t, g.do(req{path: "/api/info?tkn=" + tok}), 401, "unauthorized")
	wantStatus(t, g.do(req{path: "/api/info", headers: cookie(ck, nil)}), 200, "")
	newTok := g.token()
	if newTok == tok || !strings.HasPrefix(newTok, "svct_1_") {
		t.Fatalf("config api_token = %q after revocation", newTok)
	}
	wantStatus(t, g.do(req{path: "/api/info", headers: bearer(newTok)}), 200, "")
}

func TestRevokeBrowsers(t *testing.T) {
	g := startGateway(t)
	tok := g.token()
	ck := g.login()
	r := g.do(req{
		method: "POST", path: "/api/auth/revoke", body: `{"scope":"browsers"}`,
		headers: cookie(ck, map[string]string{"Origin": g.origin, "Content-Type": "application/json"}),
	})
	wantStatus(t, r, 200, "")
	if m := r.json(t); m["cookie_epoch"] != float64(1) || m["bearer_epoch"] != float64(0) {
		t.Fatalf("response = %s", r.body)
	}
	wantStatus(t, g.do(req{path: "/api/info", headers: cookie(ck, nil)}), 401, "unauthorized")
	wantStatus(t, g.do(req{path: "/api/info", headers: bearer(tok)}), 200, "")
	wantStatus(t, g.do(req{path: "/api/info?tkn=" + tok}), 200, "")
	if g.token() != tok {
		t.Error("revoking browsers changed the api token")
	}
	wantStatus(t, g.do(req{path: "/api/info", headers: cookie(g.login(), nil)}), 200, "")
}

func TestRevokeBadInputChangesNothing(t *testing.T) {
	g := startGateway(t)
	tok := g.token()
	ck := g.login()
	before, err := os.ReadFile(g.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	jsonBearer := map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
	tests := []struct {
		name    string
		body    string
		headers map[string]string
		status  int
		code    string
	}{
		{"unknown scope", `{"scope":"everything"}`, jsonBearer, 400, "bad_request"},
		{"missing scope", `{}`, jsonBearer, 400, "bad_request"},
		{"scope not a string", `{"scope":1}`, jsonBearer, 400, "bad_request"},
		{"malformed JSON", `{"scope":`, jsonBearer, 400, "bad_request"},
		{"wrong content type", `{"scope":"scripts"}`, bearer(tok), 415, "unsupported_media_type"},
		{"cookie without origin", `{"scope":"scripts"}`, cookie(ck, map[string]string{"Content-Type": "application/json"}), 403, "origin_forbidden"},
		{"no credential", `{"scope":"scripts"}`, map[string]string{"Content-Type": "application/json"}, 401, "unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantStatus(t, g.do(req{method: "POST", path: "/api/auth/revoke", body: tt.body, headers: tt.headers}), tt.status, tt.code)
		})
	}
	after, _ := os.ReadFile(g.cfgPath)
	if !bytes.Equal(before, after) {
		t.Errorf("bad revocations changed the config file:\n%s\n---\n%s", before, after)
	}
	wantStatus(t, g.do(req{path: "/api/info", headers: bearer(tok)}), 200, "")
}

func TestHandEditedEpochTakesEffect(t *testing.T) {
	g := startGateway(t)
	tok := g.token()
	ck := g.login()
	b, err := os.ReadFile(g.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), "bearer_epoch: 0", "bearer_epoch: 5", 1)
	if edited == string(b) {
		t.Fatalf("config has no bearer_epoch: 0 line:\n%s", b)
	}
	if err := os.WriteFile(g.cfgPath, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Second, "the old token to be refused", func() bool {
		return g.do(req{path: "/api/info", headers: bearer(tok)}).status == 401
	})
	wantStatus(t, g.do(req{path: "/api/info", headers: cookie(ck, nil)}), 200, "")
	waitFor(t, 2*time.Second, "api_token to be rewritten for epoch 5", func() bool {
		return strings.HasPrefix(g.token(), "svct_5_")
	})
	wantStatus(t, g.do(req{path: "/api/info", headers: bearer(g.token())}), 200, "")
}

// TestSecondInstanceRefusesWithinASecond runs two gateways sharing Redis
// but not the config file (each has its own copy), so only the Redis
// mirror can carry the revocation.
func TestSecondInstanceRefusesWithinASecond(t *testing.T) {
	a := startGateway(t)
	cfgB := t.TempDir() + "/config.yaml"
	orig, err := os.ReadFile(a.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgB, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	b := startGateway(t, withConfigPath(cfgB), withPrefix(a.prefix))
	tok := a.token()
	ck := a.login()
	wantStatus(t, b.do(req{path: "/api/info", headers: bearer(tok)}), 200, "")
	wantStatus(t, b.do(req{path: "/api/info", headers: cookie(ck, nil)}), 200, "")

	r := a.do(req{method: "POST", path: "/api/auth/revoke", body: `{"scope":"scripts"}`, headers: map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}})
	wantStatus(t, r, 200, "")
	start := time.Now()
	waitFor(t, time.Second, "instance B to refuse the old token", func() bool {
		return b.do(req{path: "/api/info", headers: bearer(tok)}).status == 401
	})
	t.Logf("instance B refused the revoked token after %v", time.Since(start))
	wantStatus(t, b.do(req{path: "/api/info", headers: cookie(ck, nil)}), 200, "")

	wantStatus(t, a.do(req{
		method: "POST", path: "/api/auth/revoke", body: `{"scope":"browsers"}`,
		headers: cookie(ck, map[string]string{"Origin": a.origin, "Content-Type": "application/json"}),
	}), 200, "")
	waitFor(t, time.Second, "instance B to refuse the old cookie", func() bool {
		return b.do(req{path: "/api/info", headers: cookie(ck, nil)}).status == 401
	})
	// B never sees A's new keys (they live in A's file only): instances
	// must share the config file to accept the credentials issued after a
	// revocation (TestOtherInstanceAdoptsNewKeysAtOnce). What Redis carries
	// alone is the refusal.
}

func TestWebSocketAuth(t *testing.T) {
	g := startGateway(t)
	tok := g.token()
	ck := g.login()
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name string
		path string
		h    http.Header
		want int
	}{
		{"no credential", "/chat", nil, 401},
		{"bad bearer", "/chat", hdr("Authorization", "Bearer nope"), 401},
		{"cookie without origin", "/chat", hdr("Cookie", "svc_auth="+ck), 403},
		{"cookie, cross-site origin", "/chat", hdr("Cookie", "svc_auth="+ck, "Origin", "https://evil.example"), 403},
		{"cookie, look-alike origin", "/chat", hdr("Cookie", "svc_auth="+ck, "Origin", g.origin+".evil.com"), 403},
		{"tkn without origin", "/chat?tkn=" + tok, nil, 403},
		{"cookie, own origin", "/chat", hdr("Cookie", "svc_auth="+ck, "Origin", g.origin), 101},
		{"tkn, own origin", "/chat?tkn=" + tok, hdr("Origin", g.origin), 101},
		{"bearer, no origin", "/chat", hdr("Authorization", "Bearer "+tok), 101},
		{"events: no credential", "/api/events", nil, 401},
		{"events: cookie without origin", "/api/events", hdr("Cookie", "svc_auth="+ck), 403},
		{"events: cookie, cross-site origin", "/api/events", hdr("Cookie", "svc_auth="+ck, "Origin", "https://evil.example"), 403},
		{"events: tkn without origin", "/api/events?tkn=" + tok, nil, 403},
		{"events: cookie, own origin", "/api/events", hdr("Cookie", "svc_auth="+ck, "Origin", g.origin), 101},
		{"events: bearer, no origin", "/api/events", hdr("Authorization", "Bearer "+tok), 101},
		{"bearer, terminal route", "/ws/terminal?session=s1", hdr("Authorization", "Bearer "+tok), 101},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := g.backend.hits.Load()
			c, status, err := g.dialWS(tt.path, tt.h)
			if tt.want != 101 {
				if err == nil {
					c.Close()
					t.Fatal("upgrade accepted")
				}
				if status != tt.want {
					t.Fatalf("handshake answer = %d, want %d", status, tt.want)
				}
				if g.backend.hits.Load() != before {
					t.Error("a refused upgrade reached the backend")
				}
				return
			}
			if err != nil {
				t.Fatalf("dial: %v (status %d)", err, status)
			}
			defer c.Close()
			if err := c.WriteMessage(websocket.TextMessage, []byte("hello")); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			mt, msg, err := c.ReadMessage()
			if err != nil || mt != websocket.TextMessage || string(msg) != "hello" {
				t.Fatalf("echo = %d %q %v", mt, msg, err)
			}
			seen := g.backend.last()
			if seen.Header.Get("Authorization") != "" || strings.Contains(seen.Header.Get("Cookie"), "svc_auth") || seen.URL.Query().Has("tkn") {
				t.Errorf("credentials reached the backend: %v %q", seen.Header, seen.URL.RawQuery)
			}
		})
	}
}

func TestRevocationClosesWebSockets(t *testing.T) {
	g := startGateway(t)
	tok := g.token()
	ck := g.login()
	byToken, _, err := g.dialWS("/chat", http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		t.Fatal(err)
	}
	defer byToken.Close()
	byCookie, _, err := g.dialWS("/chat", http.Header{"Cookie": {"svc_auth=" + ck}, "Origin": {g.origin}})
	if err != nil {
		t.Fatal(err)
	}
	defer byCookie.Close()

	wantStatus(t, g.do(req{
		method: "POST", path: "/api/auth/revoke", body: `{"scope":"scripts"}`,
		headers: cookie(ck, map[string]string{"Origin": g.origin, "Content-Type": "application/json"}),
	}), 200, "")

	_ = byToken.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, _, err = byToken.ReadMessage()
	var ce *websocket.CloseError
	if !asCloseError(err, &ce) || ce.Code != 1008 || ce.Text != "credential revoked" {
		t.Fatalf("token socket: read err = %v, want close 1008 credential revoked", err)
	}
	// The cookie socket is untouched by a scripts revocation.
	if err := byCookie.WriteMessage(websocket.TextMessage, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	_ = byCookie.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, msg, err := byCookie.ReadMessage(); err != nil || string(msg) != "still here" {
		t.Fatalf("cookie socket after scripts revocation: %q %v", msg, err)
	}
	wantStatus(t, g.do(req{
		method: "POST", path: "/api/auth/revoke", body: `{"scope":"browsers"}`,
		headers: map[string]string{"Authorization": "Bearer " + g.token(), "Content-Type": "application/json"},
	}), 200, "")
	_, _, err = byCookie.ReadMessage()
	if !asCloseError(err, &ce) || ce.Code != 1008 {
		t.Fatalf("cookie socket: read err = %v, want close 1008", err)
	}
	waitFor(t, 2*time.Second, "tunnels to be released", func() bool { return strings.Contains(g.logs.String(), "websockets_closed") })
}

func asCloseError(err error, target **websocket.CloseError) bool {
	return errors.As(err, target)
}
