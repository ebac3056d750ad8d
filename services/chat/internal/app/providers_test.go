package app

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// onPath finds only claude, at path.
func onPath(path string) func(string) (string, error) {
	return func(file string) (string, error) {
		if file == "claude" {
			return path, nil
		}
		return "", exec.ErrNotFound
	}
}

func mustExecutable(t *testing.T, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestProviderCatalog(t *testing.T) {
	claudePath := mustExecutable(t, 0o755)
	c := startChat(t, onPath(claudePath))
	got := c.do(http.MethodGet, "/api/providers", "")
	got.want(t, 200, "")
	list, _ := got.body["providers"].([]any)
	if got.str("default") != "agent-sdk" || len(list) != 2 {
		t.Fatalf("got %s", got.raw)
	}
	tests := []struct {
		name         string
		live         bool
		available    bool
		wantResolved any
	}{
		{"agent-sdk", true, true, claudePath},
		{"app-server", false, false, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := list[i].(map[string]any)
			caps, _ := p["capabilities"].(map[string]any)
			exe, _ := p["executable"].(map[string]any)
			if p["name"] != tt.name || caps["live_controls"] != tt.live || p["available"] != tt.available ||
				exe["resolved"] != tt.wantResolved || (p["reason"] != nil) == tt.available {
				t.Errorf("got %v", p)
			}
		})
	}
}

func TestProviderPath(t *testing.T) {
	exe := mustExecutable(t, 0o755)
	plain := mustExecutable(t, 0o644)
	c := startChat(t, notOnPath)
	path := "/api/app/provider-path/"

	t.Run("unset, not on PATH", func(t *testing.T) {
		got := c.do(http.MethodGet, path+"codex", "")
		got.want(t, 200, "")
		if got.str("name") != "codex" || got.str("provider") != "app-server" || got.body["path"] != nil ||
			got.body["resolved"] != nil || got.body["found"] != false {
			t.Errorf("got %s", got.raw)
		}
	})
	t.Run("set", func(t *testing.T) {
		got := c.do(http.MethodPut, path+"claude", `{"path":`+quote(exe)+`}`)
		got.want(t, 200, "")
		if got.str("path") != exe || got.str("resolved") != exe || got.body["found"] != true {
			t.Errorf("got %s", got.raw)
		}
		// The provider name reaches the same setting; the catalog sees it.
		if again := c.do(http.MethodGet, path+"agent-sdk", ""); again.str("path") != exe {
			t.Errorf("GET by provider name: %s", again.raw)
		}
		catalog := c.do(http.MethodGet, "/api/providers", "")
		first := catalog.body["providers"].([]any)[0].(map[string]any)
		if first["available"] != true {
			t.Errorf("catalog after set: %s", catalog.raw)
		}
	})
	t.Run("configured path removed later", func(t *testing.T) {
		gone := mustExecutable(t, 0o755)
		c.do(http.MethodPut, path+"codex", `{"path":`+quote(gone)+`}`).want(t, 200, "")
		if err := os.Remove(gone); err != nil {
			t.Fatal(err)
		}
		got := c.do(http.MethodGet, path+"codex", "")
		if got.str("path") != gone || got.body["found"] != false || got.str("reason") == "" {
			t.Errorf("got %s", got.raw)
		}
	})
	for _, reset := range []string{`{"path":null}`, `{"path":""}`} {
		t.Run("reset "+reset, func(t *testing.T) {
			c.do(http.MethodPut, path+"claude", `{"path":`+quote(exe)+`}`).want(t, 200, "")
			got := c.do(http.MethodPut, path+"claude", reset)
			got.want(t, 200, "")
			if got.body["path"] != nil || got.body["found"] != false {
				t.Errorf("got %s", got.raw)
			}
		})
	}
	bad := []struct {
		name, method, name2, body string
		status                    int
		code                      string
	}{
		{"missing file", http.MethodPut, "claude", `{"path":"/nonexistent/claude"}`, 400, "bad_request"},
		{"not executable", http.MethodPut, "claude", `{"path":` + quote(plain) + `}`, 400, "bad_request"},
		{"directory", http.MethodPut, "claude", `{"path":` + quote(filepath.Dir(exe)) + `}`, 400, "bad_request"},
		{"relative", http.MethodPut, "claude", `{"path":"bin/claude"}`, 400, "bad_request"},
		{"no path field", http.MethodPut, "claude", `{}`, 400, "bad_request"},
		{"path not a string", http.MethodPut, "claude", `{"path":1}`, 400, "bad_request"},
		{"unknown field", http.MethodPut, "claude", `{"path":null,"x":1}`, 400, "bad_request"},
		{"unknown name GET", http.MethodGet, "gemini", "", 404, "not_found"},
		{"unknown name PUT", http.MethodPut, "gemini", `{"path":null}`, 404, "not_found"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			c.do(tt.method, path+tt.name2, tt.body).want(t, tt.status, tt.code)
		})
	}
	t.Run("wrong content type", func(t *testing.T) {
		c.send(http.MethodPut, path+"claude", `{"path":null}`, "text/plain", testSecret).want(t, 415, "unsupported_media_type")
	})
	t.Run("a refused PUT changes nothing", func(t *testing.T) {
		c.do(http.MethodPut, path+"claude", `{"path":`+quote(exe)+`}`).want(t, 200, "")
		c.do(http.MethodPut, path+"claude", `{"path":"/nonexistent"}`).want(t, 400, "bad_request")
		if got := c.do(http.MethodGet, path+"claude", ""); got.str("path") != exe {
			t.Errorf("got %s", got.raw)
		}
	})
}
