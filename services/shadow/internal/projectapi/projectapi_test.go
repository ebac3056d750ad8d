package projectapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/shadow/internal/project"
	"github.com/svc-code/svc-code/services/shadow/internal/projectapi"
)

const testSecret = "0123456789abcdef-projectapi-tests"

func setup(t *testing.T) (*fiber.App, string, string) {
	t.Helper()
	home := t.TempDir()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	app := svchttp.New(svchttp.Config{
		Service: "shadow", Secret: internalauth.FromString(testSecret), BodyLimit: 1 << 20,
		Log: slog.New(slog.DiscardHandler),
	})
	projectapi.Register(app, projectapi.Deps{
		Store:     project.NewStore(home, nil),
		MaxFileMB: func(context.Context) int { return 50 },
	})
	return app, home, dir
}

func call(t *testing.T, app *fiber.App, method, path, cwd, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path+"?"+url.Values{"cwd": {cwd}}.Encode(), rd)
	req.Header.Set(protocol.HeaderInternal, testSecret)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestConfigRoundTrip(t *testing.T) {
	app, home, dir := setup(t)
	var cfg projectapi.Config
	code, body := call(t, app, "GET", "/api/project/config", dir, "")
	_ = json.Unmarshal(body, &cfg)
	if code != 200 || cfg.Journal || cfg.Name != filepath.Base(dir) || cfg.EffectiveMaxFileSizeMB != 50 || len(cfg.DefaultIgnore) == 0 {
		t.Fatalf("GET before any write: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(home, "projects")); !os.IsNotExist(err) {
		t.Error("GET created the project's directory")
	}

	code, body = call(t, app, "PUT", "/api/project/config", dir, `{"ignore":["dist/","*.tmp"],"max_file_size_mb":0}`)
	cfg = projectapi.Config{}
	_ = json.Unmarshal(body, &cfg)
	if code != 200 || !cfg.Journal || len(cfg.Ignore) != 2 || cfg.MaxFileSizeMB == nil || *cfg.MaxFileSizeMB != 0 || cfg.EffectiveMaxFileSizeMB != 0 {
		t.Fatalf("PUT: %d %s", code, body)
	}
	code, body = call(t, app, "POST", "/api/project/rename", dir, `{"name":"  Shiny  "}`)
	if code != 200 || !strings.Contains(string(body), `"name":"Shiny"`) || !strings.Contains(string(body), `"dist/"`) {
		t.Fatalf("rename: %d %s", code, body)
	}
	code, body = call(t, app, "PUT", "/api/project/config", dir, `{"max_file_size_mb":null}`)
	cfg = projectapi.Config{}
	_ = json.Unmarshal(body, &cfg)
	if code != 200 || cfg.MaxFileSizeMB != nil || cfg.EffectiveMaxFileSizeMB != 50 || cfg.Name != "Shiny" {
		t.Fatalf("PUT null size: %d %s", code, body)
	}
	raw, err := os.ReadFile(filepath.Join(home, "projects", project.Hash(dir), "project.json"))
	if err != nil || !strings.Contains(string(raw), `"name": "Shiny"`) || !strings.Contains(string(raw), `"path": "`+dir+`"`) {
		t.Errorf("project.json = %s, %v", raw, err)
	}
}

func TestConfigBadInput(t *testing.T) {
	app, home, dir := setup(t)
	tests := []struct {
		name, method, path, cwd, body string
		status                        int
		code                          string
	}{
		{"no cwd", "GET", "/api/project/config", "", "", 400, "bad_request"},
		{"missing cwd", "GET", "/api/project/config", dir + "/nope", "", 404, "not_found"},
		{"unknown field", "PUT", "/api/project/config", dir, `{"colour":"red"}`, 400, "bad_request"},
		{"negative size", "PUT", "/api/project/config", dir, `{"max_file_size_mb":-1}`, 400, "bad_request"},
		{"fractional size", "PUT", "/api/project/config", dir, `{"max_file_size_mb":1.5}`, 400, "bad_request"},
		{"negation pattern", "PUT", "/api/project/config", dir, `{"ignore":["!keep"]}`, 400, "bad_request"},
		{"blank name", "POST", "/api/project/rename", dir, `{"name":"  "}`, 400, "bad_request"},
		{"two-line name", "POST", "/api/project/rename", dir, `{"name":"a\nb"}`, 400, "bad_request"},
		{"long name", "POST", "/api/project/rename", dir, `{"name":"` + strings.Repeat("n", 201) + `"}`, 400, "bad_request"},
		{"not json", "POST", "/api/project/rename", dir, `name=x`, 400, "bad_request"},
		{"trailing data", "POST", "/api/project/rename", dir, `{"name":"x"}{}`, 400, "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := call(t, app, tt.method, tt.path, tt.cwd, tt.body)
			var eb protocol.ErrorBody
			_ = json.Unmarshal(body, &eb)
			if code != tt.status || eb.Error != tt.code {
				t.Errorf("%d %s, want %d %s", code, body, tt.status, tt.code)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(home, "projects")); !os.IsNotExist(err) {
		t.Error("refused requests created the project's directory")
	}
}
