package svchttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
)

const (
	testSecret  = "0123456789abcdef-svchttp"
	testService = "backend"
)

var healthPath = svchttp.HealthPath(testService)

// newTestApp returns the app with extra routes that fail in each way, and
// the buffer its log goes to.
func newTestApp(t *testing.T, checks ...svchttp.Check) (*fiber.App, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	app := svchttp.New(svchttp.Config{
		Service:       testService,
		Secret:        internalauth.FromString(testSecret),
		BodyLimit:     1 << 10,
		Checks:        checks,
		HealthTimeout: 50 * time.Millisecond,
		Log:           slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	app.Get("/public", func(*fiber.Ctx) error { return protocol.Errorf(protocol.CodeConflict, "session is busy") })
	app.Get("/internal", func(*fiber.Ctx) error { return errors.New("dial tcp 10.0.0.7:5432: secret detail") })
	app.Get("/panic", func(*fiber.Ctx) error { panic("boom") })
	app.Post("/echo", func(c *fiber.Ctx) error { return c.Send(c.Body()) })
	return app, &logs
}

type answer struct {
	status int
	body   map[string]any
	raw    string
}

func do(t *testing.T, app *fiber.App, req *http.Request) answer {
	t.Helper()
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, raw: string(raw)}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want JSON", ct)
	}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Errorf("body %q is not JSON: %v", raw, err)
	}
	return a
}

func request(method, path, secret string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, path, body)
	if secret != "" {
		req.Header.Set(protocol.HeaderInternal, secret)
	}
	return req
}

// TestErrors covers the envelope in memory; svchttptest's contract covers
// an oversized body, which fiber's in-memory Test cannot answer, over TCP
// for every service.
func TestErrors(t *testing.T) {
	tests := []struct {
		name        string
		req         *http.Request
		wantStatus  int
		wantCode    string
		wantMessage string
		wantLogged  bool
	}{
		{"no credential", request("GET", healthPath, "", nil), 401, "unauthorized", "requests must come through the gateway", false},
		{"wrong credential", request("GET", healthPath, testSecret+"x", nil), 401, "unauthorized", "requests must come through the gateway", false},
		{"unknown route without credential", request("GET", "/nope", "", nil), 401, "unauthorized", "requests must come through the gateway", false},
		{"unknown route", request("GET", "/nope", testSecret, nil), 404, "not_found", "", false},
		{"wrong method", request("DELETE", healthPath, testSecret, nil), 405, "method_not_allowed", "", false},
		{"public error", request("GET", "/public", testSecret, nil), 409, "conflict", "session is busy", false},
		{"internal error", request("GET", "/internal", testSecret, nil), 500, "internal", "internal error", true},
		{"panic", request("GET", "/panic", testSecret, nil), 500, "internal", "internal error", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app, logs := newTestApp(t)
			got := do(t, app, tt.req)
			if got.status != tt.wantStatus || got.body["error"] != tt.wantCode {
				t.Errorf("got %d %s, want %d with error %q", got.status, got.raw, tt.wantStatus, tt.wantCode)
			}
			if msg, _ := got.body["message"].(string); msg != tt.wantMessage {
				t.Errorf("got message %q, want %q", msg, tt.wantMessage)
			}
			if strings.Contains(got.raw, "secret detail") || strings.Contains(got.raw, "boom") {
				t.Errorf("body %s leaks the internal error", got.raw)
			}
			lines := strings.Count(logs.String(), `"msg":"request failed"`)
			if want := map[bool]int{true: 1, false: 0}[tt.wantLogged]; lines != want {
				t.Errorf("logged %d request failures, want %d:\n%s", lines, want, logs)
			}
		})
	}
}

func TestPanicIsLoggedWithStack(t *testing.T) {
	app, logs := newTestApp(t)
	do(t, app, request("GET", "/panic", testSecret, nil))
	var entry map[string]any
	if err := json.Unmarshal(logs.Bytes(), &entry); err != nil {
		t.Fatalf("log %q: %v", logs, err)
	}
	if stack, _ := entry["stack"].(string); entry["err"] != "boom" || !strings.Contains(stack, "svchttp") {
		t.Errorf("log entry %v: want err boom and a stack", entry)
	}
}

func TestBodyWithinLimitPasses(t *testing.T) {
	app, _ := newTestApp(t)
	resp, err := app.Test(request("POST", "/echo", testSecret, strings.NewReader("small")), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("got %d, want 200", resp.StatusCode)
	}
}

func TestHealth(t *testing.T) {
	ok := svchttp.Check{Name: "redis", Ping: func(context.Context) error { return nil }}
	refused := svchttp.Check{Name: "postgres", Ping: func(context.Context) error { return errors.New("connection refused") }}
	hangs := svchttp.Check{Name: "postgres", Ping: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}
	tests := []struct {
		name       string
		checks     []svchttp.Check
		wantStatus int
		want       map[string]any
	}{
		{"all answer", []svchttp.Check{ok, {Name: "postgres", Ping: ok.Ping}}, 200, map[string]any{
			"service": testService, "status": "ok", "checks": map[string]any{"redis": "ok", "postgres": "ok"},
		}},
		{"one refuses", []svchttp.Check{ok, refused}, 503, map[string]any{
			"error": "unavailable", "message": "postgres not answering",
			"service": testService, "status": "degraded", "checks": map[string]any{"redis": "ok", "postgres": "connection refused"},
		}},
		{"one hangs", []svchttp.Check{ok, hangs}, 503, map[string]any{
			"error": "unavailable", "message": "postgres not answering",
			"service": testService, "status": "degraded", "checks": map[string]any{"redis": "ok", "postgres": "no answer within 50ms"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app, _ := newTestApp(t, tt.checks...)
			got := do(t, app, request("GET", healthPath, testSecret, nil))
			wantJSON, _ := json.Marshal(tt.want)
			gotJSON, _ := json.Marshal(got.body)
			if got.status != tt.wantStatus || string(gotJSON) != string(wantJSON) {
				t.Errorf("got %d %s, want %d %s", got.status, gotJSON, tt.wantStatus, wantJSON)
			}
		})
	}
}

func TestHealthPath(t *testing.T) {
	if got, want := svchttp.HealthPath("chat"), "/api/health/chat"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
