package helpersapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/deploy/helpers"
	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
)

const secret = "0123456789abcdef-helpers-tests"

func newApp(t *testing.T) (*fiber.App, helpers.Targets) {
	t.Helper()
	home := t.TempDir()
	targets := helpers.DefaultTargets(home, func(string) string { return "" })
	app := svchttp.New(svchttp.Config{
		Service: "shadow", Secret: internalauth.FromString(secret), BodyLimit: 1 << 20,
		Log: slog.New(slog.DiscardHandler),
	})
	Register(app, Deps{Targets: targets, Log: slog.New(slog.DiscardHandler)})
	return app, targets
}

func call(t *testing.T, app *fiber.App, method, path, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set(protocol.HeaderInternal, secret)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s %s: body %q: %v", method, path, raw, err)
	}
	return resp.StatusCode, v
}

func TestStatusInstallStale(t *testing.T) {
	app, targets := newApp(t)
	code, st := call(t, app, http.MethodGet, "/api/app/helpers/status", "")
	if code != 200 || st["all_current"] != false {
		t.Fatalf("fresh status: %d %v", code, st)
	}
	files := st["files"].([]any)
	if len(files) != 3 {
		t.Fatalf("files: %v", files)
	}
	for _, f := range files {
		f := f.(map[string]any)
		for _, k := range []string{"name", "target", "installed", "up_to_date", "hash", "installed_hash"} {
			if _, ok := f[k]; !ok {
				t.Errorf("file %v lacks %q", f, k)
			}
		}
		if f["installed"] != false || f["installed_hash"] != nil {
			t.Errorf("fresh: %v", f)
		}
	}

	code, st = call(t, app, http.MethodPost, "/api/app/helpers/install", "")
	if code != 200 || st["all_current"] != true {
		t.Fatalf("install: %d %v", code, st)
	}
	git := targets.Target(helpers.Installed[0])
	if info, err := os.Stat(git); err != nil || info.Mode().Perm()&0o100 == 0 {
		t.Fatalf("shadow-git not installed executable: %v %v", info, err)
	}

	// A local edit is reported stale, and the install replaces it.
	if err := os.WriteFile(git, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, st = call(t, app, http.MethodGet, "/api/app/helpers/status", "")
	f0 := st["files"].([]any)[0].(map[string]any)
	if st["all_current"] != false || f0["up_to_date"] != false || f0["installed"] != true || f0["installed_hash"] == f0["hash"] {
		t.Errorf("edited copy: %v", st)
	}
	if code, st = call(t, app, http.MethodPost, "/api/app/helpers/install", "{}"); code != 200 || st["all_current"] != true {
		t.Errorf("reinstall: %d %v", code, st)
	}
	b, _ := os.ReadFile(git)
	packaged, _ := helpers.Files.ReadFile("shadow-git")
	if string(b) != string(packaged) {
		t.Error("install kept the local edit")
	}
}

func TestInstallRefusesABody(t *testing.T) {
	app, targets := newApp(t)
	code, body := call(t, app, http.MethodPost, "/api/app/helpers/install", `{"mode":"skip"}`)
	if code != 400 || body["error"] != "bad_request" {
		t.Errorf("install with options: %d %v", code, body)
	}
	if _, err := os.Stat(filepath.Dir(targets.Target(helpers.Installed[0]))); err == nil {
		t.Error("a refused install wrote files")
	}
}
