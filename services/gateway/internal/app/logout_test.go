package app

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/authtoken"
	"github.com/svc-code/svc-code/libs/cutproxy"
	"github.com/svc-code/svc-code/libs/redisx"
)

func withCookieTTL(d time.Duration) gwOption {
	return func(_ map[string]string, cfg *Config) {
		if cfg != nil {
			cfg.CookieTTL = d
		}
	}
}

func withRedisURL(u string) gwOption {
	return func(env map[string]string, _ *Config) { env["REDIS_URL"] = u }
}

// logout posts /api/logout with the cookie v and returns its JSON answer,
// checking that the browser's cookie is cleared whatever happened.
func (g *gateway) logout(t *testing.T, v string) map[string]any {
	t.Helper()
	r := g.do(req{method: "POST", path: "/api/logout", headers: cookie(v, map[string]string{"Origin": g.origin})})
	wantStatus(t, r, 200, "")
	cleared := false
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == "svc_auth" && c.Value == "" && c.MaxAge < 0 {
			cleared = true
		}
	}
	if !cleared {
		t.Errorf("logout did not clear svc_auth: %v", r.header.Values("Set-Cookie"))
	}
	return r.json(t)
}

// signedOutKeys lists the gateway's sign-out records in Redis.
func (g *gateway) signedOutKeys(t *testing.T) []string {
	t.Helper()
	rdb := mustRedis(t)
	keys, err := rdb.Keys(context.Background(), g.prefix+"auth:signedout:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func mustRedis(t *testing.T) *redis.Client {
	t.Helper()
	rdb, err := redisx.Connect(context.Background(), redisURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func (g *gateway) wsStatus(t *testing.T, ck string) int {
	t.Helper()
	c, status, err := g.dialWS("/chat", http.Header{"Cookie": {"svc_auth=" + ck}, "Origin": {g.origin}})
	if err == nil {
		c.Close()
	}
	return status
}

// TestLogoutRevokesTheCookie: the cookie a browser signed out with is
// refused afterwards, on API routes and WebSocket upgrades, even when a
// copy of it is sent; the socket it opened is closed; another browser's
// cookie keeps working.
func TestLogoutRevokesTheCookie(t *testing.T) {
	g := startGateway(t)
	ck, other := g.login(), g.login()
	open, _, err := g.dialWS("/chat", http.Header{"Cookie": {"svc_auth=" + ck}, "Origin": {g.origin}})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()

	if got := g.logout(t, ck); got["revoked"] != true || got["pending"] != nil {
		t.Errorf("logout answer = %v, want revoked true", got)
	}
	wantStatus(t, g.do(req{path: "/api/info", headers: cookie(ck, nil)}), 401, "unauthorized")
	if s := g.wsStatus(t, ck); s != 401 {
		t.Errorf("upgrade with the signed-out cookie: %d, want 401", s)
	}
	_ = open.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, _, err = open.ReadMessage()
	var ce *websocket.CloseError
	if !asCloseError(err, &ce) || ce.Code != 1008 {
		t.Errorf("socket opened with the signed-out cookie: read err = %v, want close 1008", err)
	}

	wantStatus(t, g.do(req{path: "/api/info", headers: cookie(other, nil)}), 200, "")
	if s := g.wsStatus(t, other); s != 101 {
		t.Errorf("upgrade with another browser's cookie: %d, want 101", s)
	}
	// A second logout with the same cookie records nothing more.
	if got := g.logout(t, ck); got["revoked"] != false {
		t.Errorf("second logout answer = %v, want revoked false", got)
	}
	if keys := g.signedOutKeys(t); len(keys) != 2 { // the set and its version
		t.Errorf("sign-out keys in Redis = %v, want the set and its version", keys)
	}
}

// TestLogoutReachesOtherInstances: a second instance sharing the config
// file and Redis, which re-reads Redis only once an hour, refuses the
// cookie within a second (the wake-up); an instance started afterwards
// refuses it from its first request (the set is read at start).
func TestLogoutReachesOtherInstances(t *testing.T) {
	a := startGateway(t)
	b := startGateway(t, withConfigPath(a.cfgPath), withPrefix(a.prefix), withPoll(time.Hour))
	ck, other := a.login(), a.login()
	wantStatus(t, b.do(req{path: "/api/info", headers: cookie(ck, nil)}), 200, "")

	a.logout(t, ck)
	start := time.Now()
	waitFor(t, time.Second, "instance B to refuse the signed-out cookie", func() bool {
		return b.do(req{path: "/api/info", headers: cookie(ck, nil)}).status == 401
	})
	t.Logf("instance B refused the signed-out cookie after %v", time.Since(start))
	if s := b.wsStatus(t, ck); s != 401 {
		t.Errorf("upgrade on B with the signed-out cookie: %d, want 401", s)
	}
	wantStatus(t, b.do(req{path: "/api/info", headers: cookie(other, nil)}), 200, "")

	c := startGateway(t, withConfigPath(a.cfgPath), withPrefix(a.prefix), withPoll(time.Hour))
	wantStatus(t, c.do(req{path: "/api/info", headers: cookie(ck, nil)}), 401, "unauthorized")
	wantStatus(t, c.do(req{path: "/api/info", headers: cookie(other, nil)}), 200, "")
}

// TestLogoutForgedCookieRecordsNothing: only a cookie that verifies is
// recorded, so anonymous logouts cannot grow the record.
func TestLogoutForgedCookieRecordsNothing(t *testing.T) {
	g := startGateway(t)
	ck := g.login()
	otherSecret, _ := authtoken.NewSecret(32)
	expired, err := authtoken.SignCookie(g.configKey("cookie_secret"), 0, time.Now().Add(-2*time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	staleEpoch, err := authtoken.SignCookie(g.configKey("cookie_secret"), 7, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{
		"garbage":          "not-a-jwt",
		"foreign secret":   forgedCookie(t, otherSecret, 0),
		"expired":          expired,
		"another epoch":    staleEpoch,
		"tampered":         ck[:len(ck)-4] + "AAAA",
		"the API token":    g.token(),
		"an over-long one": string(make([]byte, 5000)),
	} {
		if got := g.logout(t, url.QueryEscape(v)); got["revoked"] != false {
			t.Errorf("%s: logout answer = %v, want revoked false", name, got)
		}
	}
	if keys := g.signedOutKeys(t); len(keys) != 0 {
		t.Errorf("forged logouts recorded %v", keys)
	}
	wantStatus(t, g.do(req{path: "/api/info", headers: cookie(ck, nil)}), 200, "")
}

// TestSignedOutRecordExpires: the record of a signed-out cookie is gone
// from Redis once the cookie has expired.
func TestSignedOutRecordExpires(t *testing.T) {
	g := startGateway(t, withCookieTTL(2*time.Second))
	ck := g.login()
	g.logout(t, ck)
	rdb := mustRedis(t)
	keys := g.signedOutKeys(t)
	if len(keys) != 2 {
		t.Fatalf("sign-out keys = %v, want the set and its version", keys)
	}
	ttl, err := rdb.TTL(context.Background(), keys[0]).Result()
	if err != nil || ttl <= 0 || ttl > 4*time.Second {
		t.Errorf("TTL of %s = %v (%v), want the cookie's remaining life", keys[0], ttl, err)
	}
	waitFor(t, 6*time.Second, "the sign-out record to expire", func() bool { return len(g.signedOutKeys(t)) == 0 })
}

// TestLogoutWithRedisDown: with Redis unreachable the logout still clears
// the cookie, this instance refuses it at once, the answer says the
// others do not yet, and the record reaches Redis (and so the other
// instances) once it is back.
func TestLogoutWithRedisDown(t *testing.T) {
	cut, viaCut := cutproxy.ForURL(t, redisURL(), "6379")
	a := startGateway(t, withRedisURL(viaCut))
	b := startGateway(t, withConfigPath(a.cfgPath), withPrefix(a.prefix))
	ck, other := a.login(), a.login()

	cut.Cut()
	got := a.logout(t, ck)
	if got["revoked"] != false || got["pending"] != true || got["message"] == nil {
		t.Errorf("logout answer with Redis down = %v, want revoked false, pending true and a message", got)
	}
	wantStatus(t, a.do(req{path: "/api/info", headers: cookie(ck, nil)}), 401, "unauthorized")
	wantStatus(t, a.do(req{path: "/api/info", headers: cookie(other, nil)}), 200, "")
	// What the answer admits: B has not heard of it.
	wantStatus(t, b.do(req{path: "/api/info", headers: cookie(ck, nil)}), 200, "")

	cut.Heal()
	waitFor(t, 10*time.Second, "instance B to refuse the cookie once Redis is back", func() bool {
		return b.do(req{path: "/api/info", headers: cookie(ck, nil)}).status == 401
	})
	wantStatus(t, b.do(req{path: "/api/info", headers: cookie(other, nil)}), 200, "")
}
