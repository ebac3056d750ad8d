package app

import (
	"net/http"
	"testing"
)

// POST /api/push/answer is the one /api/push route reachable without a
// credential (its body's token is one), from this server's origin only;
// every other /api/push route, and other methods on it, need a credential.
func TestPushAnswerPublic(t *testing.T) {
	g := startGateway(t)
	own := g.origin
	body := `{"token":"t","decision":"allow"}`
	json := map[string]string{"Content-Type": "application/json"}
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}

	// Same origin (the service worker's fetch): forwarded to chat, with
	// the internal credential (the stand-in refuses requests without it).
	for name, h := range map[string]map[string]string{
		"Origin":                        with(map[string]string{"Origin": own}),
		"Sec-Fetch-Site without Origin": with(map[string]string{"Sec-Fetch-Site": "same-origin"}),
	} {
		hits := g.backend.hits.Load()
		r := g.do(req{method: "POST", path: "/api/push/answer", body: body, headers: h})
		if r.status != 200 || g.backend.hits.Load() != hits+1 {
			t.Errorf("%s: POST /api/push/answer without credential = %d %s (backend hits %d -> %d), want it forwarded", name, r.status, r.body, hits, g.backend.hits.Load())
			continue
		}
		if m := r.json(t); m["path"] != "/api/push/answer" || m["body"] != body {
			t.Errorf("%s: forwarded as %v", name, m)
		}
	}

	hits := g.backend.hits.Load()
	// Cross-site, or with no sign of coming from the page: refused.
	for name, h := range map[string]map[string]string{
		"foreign origin":               with(map[string]string{"Origin": "https://evil.example"}),
		"own origin, cross-site":       with(map[string]string{"Origin": own, "Sec-Fetch-Site": "cross-site"}),
		"null origin":                  with(map[string]string{"Origin": "null"}),
		"look-alike origin":            with(map[string]string{"Origin": own + ".evil.com"}),
		"no Origin, no Sec-Fetch-Site": json,
	} {
		t.Run(name, func(t *testing.T) {
			wantStatus(t, g.do(req{method: "POST", path: "/api/push/answer", body: body, headers: h}), 403, "origin_forbidden")
		})
	}
	// Every other /api/push route and method needs a credential.
	for _, r := range []req{
		{method: "GET", path: "/api/push/answer"},
		{method: "PUT", path: "/api/push/answer", body: body, headers: with(map[string]string{"Origin": own})},
		{method: "GET", path: "/api/push/key"},
		{method: "GET", path: "/api/push/pending"},
		{method: "GET", path: "/api/push/subscriptions"},
		{method: "POST", path: "/api/push/subscriptions", body: `{}`, headers: with(map[string]string{"Origin": own})},
		{method: "DELETE", path: "/api/push/subscriptions/ps_x", headers: map[string]string{"Origin": own}},
		{method: "POST", path: "/api/push/test", body: `{"id":"x"}`, headers: with(map[string]string{"Origin": own})},
		{method: "POST", path: "/api/push/answer/", body: body, headers: with(map[string]string{"Origin": own})},
		{method: "POST", path: "/api/push/answer/../test", body: body, headers: with(map[string]string{"Origin": own})},
		{method: "POST", path: "/api/push/answer%2f..%2ftest", body: body, headers: with(map[string]string{"Origin": own})},
	} {
		if got := g.do(r); got.status != 401 {
			t.Errorf("%s %s without credential = %d %s, want 401", r.method, r.path, got.status, got.body)
		}
	}
	if n := g.backend.hits.Load(); n != hits {
		t.Errorf("the backend was reached %d times by refused requests", n-hits)
	}
	// With a credential the other routes reach chat.
	tok := g.token()
	if r := g.do(req{method: "GET", path: "/api/push/subscriptions", headers: bearer(tok)}); r.status != http.StatusOK || r.json(t)["path"] != "/api/push/subscriptions" {
		t.Errorf("GET /api/push/subscriptions with a token = %d %s", r.status, r.body)
	}
}
