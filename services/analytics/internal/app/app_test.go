package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/services/analytics/internal/httpapi"
)

// TestHTTP drives a real app over TCP.
func TestHTTP(t *testing.T) {
	inst := mustStart(t, mustConfig(t, testEnv(t)))
	tests := []struct {
		name        string
		method      string
		path        string
		secret      string
		wantStatus  int
		wantError   string
		wantMessage string
	}{
		{"no credential", "GET", httpapi.HealthPath, "", 401, "unauthorized", "requests must come through the gateway"},
		{"wrong credential", "GET", httpapi.HealthPath, "0123456789abcdef-wrong", 401, "unauthorized", "requests must come through the gateway"},
		{"unknown route without credential", "GET", "/api/nope", "", 401, "unauthorized", "requests must come through the gateway"},
		{"health", "GET", httpapi.HealthPath, testSecret, 200, "", ""},
		{"unknown route", "GET", "/api/nope", testSecret, 404, "not_found", ""},
		{"wrong method", "POST", httpapi.HealthPath, testSecret, 405, "method_not_allowed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, inst.base+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := send(req, tt.secret)
			if err != nil {
				t.Fatal(err)
			}
			if got.status != tt.wantStatus {
				t.Errorf("got %d %s, want %d", got.status, got.raw, tt.wantStatus)
			}
			if e, _ := got.body["error"].(string); e != tt.wantError {
				t.Errorf("got error %q, want %q", e, tt.wantError)
			}
			if m, _ := got.body["message"].(string); m != tt.wantMessage {
				t.Errorf("got message %q, want %q", m, tt.wantMessage)
			}
		})
	}
	t.Run("health body", func(t *testing.T) {
		got, err := get(inst.base+httpapi.HealthPath, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		const want = `{"service":"analytics","status":"ok","checks":{"postgres":"ok","postgres_readonly":"ok","redis":"ok"}}`
		if got.raw != want {
			t.Errorf("got %s, want %s", got.raw, want)
		}
	})
	t.Run("oversized body", func(t *testing.T) {
		// The body never comes: the limit is enforced on Content-Length,
		// before reading, and the answer arrives while the client waits.
		body, feed := io.Pipe()
		defer feed.Close()
		req, err := http.NewRequest("POST", inst.base+httpapi.HealthPath, body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = 1<<20 + 1
		got, err := send(req, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		if got.status != http.StatusRequestEntityTooLarge || got.body["error"] != "payload_too_large" {
			t.Errorf("got %d %s, want 413 payload_too_large", got.status, got.raw)
		}
	})
}

// TestHealthDegradedWhenDependencyGoesAway starts analytics through a proxy to
// each dependency, then cuts the proxy.
func TestHealthDegradedWhenDependencyGoesAway(t *testing.T) {
	tests := []struct {
		check, envVar, defaultPort string
	}{
		{"redis", "REDIS_URL", "6379"},
		{"postgres", "DATABASE_URL", "5432"},
		{"postgres_readonly", "READONLY_DATABASE_URL", "5432"},
	}
	for _, tt := range tests {
		t.Run(tt.check, func(t *testing.T) {
			env := testEnv(t)
			proxy, proxied := proxyFor(t, env[tt.envVar], tt.defaultPort)
			env[tt.envVar] = proxied
			inst := mustStart(t, mustConfig(t, env))

			proxy.Close()
			got, err := get(inst.base+httpapi.HealthPath, testSecret)
			if err != nil {
				t.Fatal(err)
			}
			checks, _ := got.body["checks"].(map[string]any)
			if got.status != http.StatusServiceUnavailable || got.body["status"] != "degraded" || got.body["error"] != "unavailable" {
				t.Errorf("got %d %s, want 503 degraded unavailable", got.status, got.raw)
			}
			for name, v := range checks {
				if failing := name == tt.check; failing == (v == "ok") {
					t.Errorf("check %s = %q, want ok only for the dependency still there", name, v)
				}
			}
			if len(checks) != 3 {
				t.Errorf("checks = %v, want redis, postgres and postgres_readonly", checks)
			}
		})
	}
}

// TestRunRefusesToStart: analytics starts only when its dependencies answer.
func TestRunRefusesToStart(t *testing.T) {
	tests := []struct {
		name    string
		change  func(t *testing.T, env map[string]string)
		wantErr []string
	}{
		{"redis unreachable", func(t *testing.T, env map[string]string) {
			env["REDIS_URL"] = "redis://" + closedAddr(t) + "/0"
		}, []string{"redis", "refused"}},
		{"postgres unreachable", func(t *testing.T, env map[string]string) {
			env["DATABASE_URL"] = withHost(t, env["DATABASE_URL"], closedAddr(t))
		}, []string{"postgres", "DATABASE_URL", "refused"}},
		{"read-only postgres unreachable", func(t *testing.T, env map[string]string) {
			env["READONLY_DATABASE_URL"] = withHost(t, env["READONLY_DATABASE_URL"], closedAddr(t))
		}, []string{"postgres", "READONLY_DATABASE_URL", "refused"}},
		{"no database URL anywhere", func(_ *testing.T, env map[string]string) {
			delete(env, "DATABASE_URL")
		}, []string{"DATABASE_URL is not set", "postgres.env", "provision.sh"}},
		{"no read-only database URL anywhere", func(_ *testing.T, env map[string]string) {
			delete(env, "READONLY_DATABASE_URL")
		}, []string{"READONLY_DATABASE_URL is not set", "postgres.env", "provision.sh"}},
		{"short internal secret", func(_ *testing.T, env map[string]string) {
			env["SVC_INTERNAL_SECRET"] = "short"
		}, []string{"SVC_INTERNAL_SECRET"}},
		{"address in use", func(t *testing.T, env map[string]string) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			env["ANALYTICS_ADDR"] = ln.Addr().String()
		}, []string{"listen", "in use"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t)
			tt.change(t, env)
			err := Run(context.Background(), mustConfig(t, env), testLogger(t))
			if err == nil {
				t.Fatal("Run succeeded")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// TestDatabaseURLFromDataHome: with DATABASE_URL and READONLY_DATABASE_URL
// unset, analytics uses those provisioning wrote to <data home>/postgres.env,
// and applies its migrations.
func TestDatabaseURLFromDataHome(t *testing.T) {
	env := testEnv(t)
	dbURL := env["DATABASE_URL"]
	delete(env, "DATABASE_URL")
	delete(env, "READONLY_DATABASE_URL")
	file := "# Written by deploy/scripts/provision.sh\nDATABASE_URL=" + dbURL + "\nREADONLY_DATABASE_URL=" + dbURL + "\n"
	if err := os.WriteFile(filepath.Join(env["SVC_CODE_HOME"], "postgres.env"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	mustStart(t, mustConfig(t, env))

	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE component = 'analytics'`).Scan(&n); err != nil {
		t.Errorf("schema_migrations in the app's schema: %v", err)
	}
}

func TestShutdown(t *testing.T) {
	inst := mustStart(t, mustConfig(t, testEnv(t)))
	if err := inst.wait(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := get(inst.base+httpapi.HealthPath, testSecret); err == nil {
		t.Error("the app still answers after Run returned")
	}
}

func TestHealthcheck(t *testing.T) {
	env := testEnv(t)
	inst := mustStart(t, mustConfig(t, env))
	env["ANALYTICS_ADDR"] = strings.TrimPrefix(inst.base, "http://")
	cfg := mustConfig(t, env)
	if err := Healthcheck(context.Background(), cfg); err != nil {
		t.Errorf("Healthcheck of a running app: %v", err)
	}
	if err := inst.wait(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := Healthcheck(context.Background(), cfg); err == nil {
		t.Error("Healthcheck of a stopped app succeeded")
	}
}
