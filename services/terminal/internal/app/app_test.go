package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/services/terminal/internal/httpapi"
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
		const want = `{"service":"terminal","status":"ok","checks":{"redis":"ok"}}`
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

// TestHealthDegradedWhenRedisGoesAway starts terminal through a proxy to
// Redis, then cuts the proxy.
func TestHealthDegradedWhenRedisGoesAway(t *testing.T) {
	env := testEnv(t)
	proxy, proxied := proxyFor(t, env["REDIS_URL"], "6379")
	env["REDIS_URL"] = proxied
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
	if v, _ := checks["redis"].(string); v == "" || v == "ok" || len(checks) != 1 {
		t.Errorf("checks = %v, want only redis, with its error", checks)
	}
}

// TestRunRefusesToStart: terminal starts only when Redis answers.
func TestRunRefusesToStart(t *testing.T) {
	tests := []struct {
		name    string
		change  func(t *testing.T, env map[string]string)
		wantErr []string
	}{
		{"redis unreachable", func(t *testing.T, env map[string]string) {
			env["REDIS_URL"] = "redis://" + closedAddr(t) + "/0"
		}, []string{"redis", "refused"}},
		{"short internal secret", func(_ *testing.T, env map[string]string) {
			env["SVC_INTERNAL_SECRET"] = "short"
		}, []string{"SVC_INTERNAL_SECRET"}},
		{"address in use", func(t *testing.T, env map[string]string) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			env["TERMINAL_ADDR"] = ln.Addr().String()
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
	env["TERMINAL_ADDR"] = strings.TrimPrefix(inst.base, "http://")
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
