package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/redisx/redistest"
)

// TestPasswordProtectedRedis runs two gateways on one config file against
// a redis-server of the test's own that requires a password, given as
// REDIS_PASSWORD_FILE to one and inside REDIS_URL to the other: both
// start, a revocation on one reaches the other (the epochs' mirror and
// its pub/sub), and Redis refused none of their calls for want of
// authentication. Without the password the gateway does not start.
func TestPasswordProtectedRedis(t *testing.T) {
	const password = "gateway-pw-5d0c"
	srv := redistest.Start(t, redis.Options{Password: password}, "--requirepass", password)
	pwFile := filepath.Join(t.TempDir(), "redis.password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Checked once both gateways have stopped (cleanups run last first).
	t.Cleanup(func() {
		admin := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: password})
		defer admin.Close()
		if n, err := redistest.AuthErrors(context.Background(), admin); err != nil || n != 0 {
			t.Errorf("Redis refused %d of the gateways' calls for want of authentication (%v)", n, err)
		}
	})
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	prefix := "test:" + randomHex(6) + ":"
	shared := func(env map[string]string, _ *Config) {
		env["SVC_CONFIG"] = cfgPath
		env["REDIS_PREFIX"] = prefix
	}
	a := startGateway(t, shared, func(env map[string]string, _ *Config) {
		env["REDIS_URL"] = "redis://" + srv.Addr + "/0"
		env["REDIS_PASSWORD_FILE"] = pwFile
	})
	b := startGateway(t, shared, func(env map[string]string, _ *Config) {
		env["REDIS_URL"] = "redis://:" + password + "@" + srv.Addr + "/0"
	})
	tok := a.token()
	wantStatus(t, b.do(req{path: "/api/info", headers: bearer(tok)}), 200, "")
	wantStatus(t, a.do(req{
		method: "POST", path: "/api/auth/revoke", body: `{"scope":"scripts"}`,
		headers: map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"},
	}), 200, "")
	waitFor(t, 5*time.Second, "the other gateway to refuse the revoked token", func() bool {
		return b.do(req{path: "/api/info", headers: bearer(tok)}).status == 401
	})

	other := redistest.Start(t, redis.Options{Password: password}, "--requirepass", password)
	env := map[string]string{
		"HOME": t.TempDir(), "SVC_CONFIG": filepath.Join(t.TempDir(), "c.yaml"), "SVC_INTERNAL_SECRET": testSecret,
		"REDIS_URL": "redis://" + other.Addr + "/0", "SVC_CODE_PASSWORD": testPassword,
	}
	env["SVC_CODE_HOME"] = filepath.Join(env["HOME"], "home")
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), cfg, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("Run without the Redis password: %v, want a NOAUTH error", err)
	}
}
