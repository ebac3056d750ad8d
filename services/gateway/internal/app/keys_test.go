package app

import (
	"context"
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/authtoken"
	"github.com/svc-code/svc-code/libs/configfile"
)

// configKey reads one base64 key from the gateway's config file.
func (g *gateway) configKey(name string) []byte {
	g.t.Helper()
	d, err := configfile.New(g.cfgPath).Read()
	if err != nil {
		g.t.Fatal(err)
	}
	v, ok := d.String(name)
	if !ok {
		g.t.Fatalf("config has no %s", name)
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		g.t.Fatal(err)
	}
	return b
}

// forged are credentials made with a stolen key for a given epoch, as
// someone who read the config file once could make them.
func forgedCookie(t *testing.T, secret []byte, epoch int64) string {
	t.Helper()
	v, err := authtoken.SignCookie(secret, epoch, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func withPoll(d time.Duration) gwOption {
	return func(_ map[string]string, cfg *Config) {
		if cfg != nil {
			cfg.Poll = d
		}
	}
}

// TestRevocationReplacesSigningKeys is issue 15's item 2: with the keys
// read from the config file, credentials minted for the new epoch must
// still fail after the revocation of their scope.
func TestRevocationReplacesSigningKeys(t *testing.T) {
	g := startGateway(t)
	ck := g.login()
	oldCookieSecret := g.configKey("cookie_secret")
	oldTokenKey := g.configKey("token_key")
	jsonBearer := func() map[string]string {
		return map[string]string{"Authorization": "Bearer " + g.token(), "Content-Type": "application/json"}
	}

	wantStatus(t, g.do(req{method: "POST", path: "/api/auth/revoke", body: `{"scope":"browsers"}`, headers: jsonBearer()}), 200, "")
	if string(g.configKey("cookie_secret")) == string(oldCookieSecret) {
		t.Fatal("revoke browsers kept cookie_secret")
	}
	if string(g.configKey("token_key")) != string(oldTokenKey) {
		t.Error("revoke browsers replaced token_key")
	}
	for epoch := range int64(3) {
		wantStatus(t, g.do(req{path: "/api/info", headers: cookie(forgedCookie(t, oldCookieSecret, epoch), nil)}), 401, "unauthorized")
	}
	wantStatus(t, g.do(req{path: "/api/info", headers: cookie(ck, nil)}), 401, "unauthorized")
	wantStatus(t, g.do(req{path: "/api/info", headers: cookie(g.login(), nil)}), 200, "")

	tok := g.token()
	wantStatus(t, g.do(req{method: "POST", path: "/api/auth/revoke", body: `{"scope":"scripts"}`, headers: jsonBearer()}), 200, "")
	if string(g.configKey("token_key")) == string(oldTokenKey) {
		t.Fatal("revoke scripts kept token_key")
	}
	for epoch := range int64(3) {
		forged := authtoken.APIToken(oldTokenKey, epoch)
		wantStatus(t, g.do(req{path: "/api/info", headers: bearer(forged)}), 401, "unauthorized")
		wantStatus(t, g.do(req{path: "/api/info?tkn=" + forged}), 401, "unauthorized")
	}
	wantStatus(t, g.do(req{path: "/api/info", headers: bearer(tok)}), 401, "unauthorized")
	newTok := g.token()
	if !strings.HasPrefix(newTok, "svct_1_") {
		t.Fatalf("api_token after revoke scripts = %q, want epoch 1", newTok)
	}
	wantStatus(t, g.do(req{path: "/api/info", headers: bearer(newTok)}), 200, "")
	wantStatus(t, g.do(req{path: "/api/info", headers: cookie(g.login(), nil)}), 200, "")
}

// TestOtherInstanceAdoptsNewKeysAtOnce: two instances share the config
// file and Redis; the second polls the file only once an hour, so only the
// published change can make it refuse at once a credential minted with
// the old key for the new epoch.
func TestOtherInstanceAdoptsNewKeysAtOnce(t *testing.T) {
	a := startGateway(t)
	b := startGateway(t, withConfigPath(a.cfgPath), withPrefix(a.prefix), withPoll(time.Hour))
	oldCookieSecret := a.configKey("cookie_secret")
	oldTokenKey := a.configKey("token_key")
	tok := a.token()
	wantStatus(t, b.do(req{path: "/api/info", headers: bearer(tok)}), 200, "")

	wantStatus(t, a.do(req{method: "POST", path: "/api/auth/revoke", body: `{"scope":"scripts"}`, headers: map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}}), 200, "")
	// B refused the forged token even before it heard of the change (its
	// epoch was still 0): wait until it takes the new token, then the
	// forged one must still be refused.
	forged := authtoken.APIToken(oldTokenKey, 1)
	waitFor(t, time.Second, "instance B to take the new API token", func() bool {
		return b.do(req{path: "/api/info", headers: bearer(a.token())}).status == 200
	})
	wantStatus(t, b.do(req{path: "/api/info", headers: bearer(forged)}), 401, "unauthorized")

	wantStatus(t, a.do(req{method: "POST", path: "/api/auth/revoke", body: `{"scope":"browsers"}`, headers: map[string]string{"Authorization": "Bearer " + a.token(), "Content-Type": "application/json"}}), 200, "")
	forgedCk := forgedCookie(t, oldCookieSecret, 1)
	fresh := a.login()
	waitFor(t, time.Second, "instance B to take a cookie of the new epoch", func() bool {
		return b.do(req{path: "/api/info", headers: cookie(fresh, nil)}).status == 200
	})
	wantStatus(t, b.do(req{path: "/api/info", headers: cookie(forgedCk, nil)}), 401, "unauthorized")
}

// TestPasswdTellsRunningGateways: `gateway passwd` replaces both keys and
// announces it through Redis, so a gateway that polls its config file only
// once an hour refuses the old credentials at once.
func TestPasswdTellsRunningGateways(t *testing.T) {
	g := startGateway(t, withPoll(time.Hour))
	tok := g.token()
	ck := g.login()
	oldCookieSecret := g.configKey("cookie_secret")
	oldTokenKey := g.configKey("token_key")
	cfg, err := LoadConfig(func(k string) string {
		return map[string]string{"SVC_CONFIG": g.cfgPath, "HOME": t.TempDir(), "REDIS_URL": redisURL(), "REDIS_PREFIX": g.prefix}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.HashParams = cheapHash
	in, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	_, _ = w.WriteString("another good password\n")
	_ = w.Close()
	var out syncBuffer
	if err := Passwd(context.Background(), cfg, in, &out); err != nil {
		t.Fatalf("Passwd: %v (%s)", err, out.String())
	}
	if string(g.configKey("cookie_secret")) == string(oldCookieSecret) || string(g.configKey("token_key")) == string(oldTokenKey) {
		t.Fatal("passwd kept a signing key")
	}
	waitFor(t, time.Second, "the running gateway to refuse the old token and cookie", func() bool {
		return g.do(req{path: "/api/info", headers: bearer(tok)}).status == 401 &&
			g.do(req{path: "/api/info", headers: cookie(ck, nil)}).status == 401
	})
	wantStatus(t, g.do(req{path: "/api/info", headers: bearer(authtoken.APIToken(oldTokenKey, 1))}), 401, "unauthorized")
	wantStatus(t, g.do(req{path: "/api/info", headers: cookie(forgedCookie(t, oldCookieSecret, 1), nil)}), 401, "unauthorized")
	wantStatus(t, g.do(req{path: "/api/info", headers: bearer(g.token())}), 200, "")
	if strings.Contains(out.String(), "could not tell") {
		t.Errorf("passwd did not reach Redis: %s", out.String())
	}
}
