package workspace_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/workspace"
)

func TestTabs(t *testing.T) {
	e := mustEnv(t)
	empty := e.do(http.MethodGet, "/api/app/tabs", "").want(t, http.StatusOK, "")
	if empty.str("profile") != "default" || len(empty.list("tabs")) != 0 || empty.body["active"] != nil || empty.body["updated_at"] != nil {
		t.Fatalf("unsaved tabs %s", empty.raw)
	}
	body := `{"tabs":[
		{"id":"t1","kind":"chat","session_id":"S1","title":"Chat"},
		{"id":"t2","kind":"file","path":"/srv/a/main.go","pinned":true,"state":{"scroll":12}},
		{"id":"t3","kind":"browser","url":"http://localhost:3000/"}
	],"active":"t2"}`
	saved := e.do(http.MethodPost, "/api/app/tabs", body).want(t, http.StatusOK, "")
	read := e.do(http.MethodGet, "/api/app/tabs", "").want(t, http.StatusOK, "")
	if read.raw != saved.raw || read.str("active") != "t2" || len(read.list("tabs")) != 3 || read.str("updated_at") == "" {
		t.Fatalf("saved %s, read %s", saved.raw, read.raw)
	}
	tab := read.list("tabs")[1].(map[string]any)
	if tab["pinned"] != true || tab["state"].(map[string]any)["scroll"] != 12.0 {
		t.Errorf("tab %v", tab)
	}

	t.Run("profiles are separate", func(t *testing.T) {
		e.do(http.MethodPost, "/api/app/tabs?profile=laptop", `{"tabs":[],"active":null}`).want(t, http.StatusOK, "")
		if got := e.do(http.MethodGet, "/api/app/tabs?profile=laptop", ""); got.str("profile") != "laptop" || len(got.list("tabs")) != 0 {
			t.Errorf("laptop %s", got.raw)
		}
		if got := e.do(http.MethodGet, "/api/app/tabs", ""); len(got.list("tabs")) != 3 {
			t.Errorf("default after saving laptop %s", got.raw)
		}
	})

	many := make([]string, workspace.MaxTabs+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"id":"t%d","kind":"chat"}`, i)
	}
	bad := []struct {
		name, path, contentType, body string
		status                        int
		code                          string
	}{
		{"no tabs", "/api/app/tabs", "application/json", `{"active":null}`, 400, "bad_request"},
		{"active not a tab", "/api/app/tabs", "application/json", `{"tabs":[{"id":"a","kind":"chat"}],"active":"b"}`, 400, "bad_request"},
		{"duplicate ids", "/api/app/tabs", "application/json", `{"tabs":[{"id":"a","kind":"chat"},{"id":"a","kind":"file"}]}`, 400, "bad_request"},
		{"no id", "/api/app/tabs", "application/json", `{"tabs":[{"kind":"chat"}]}`, 400, "bad_request"},
		{"bad id", "/api/app/tabs", "application/json", `{"tabs":[{"id":"a b","kind":"chat"}]}`, 400, "bad_request"},
		{"no kind", "/api/app/tabs", "application/json", `{"tabs":[{"id":"a"}]}`, 400, "bad_request"},
		{"bad kind", "/api/app/tabs", "application/json", `{"tabs":[{"id":"a","kind":"Chat!"}]}`, 400, "bad_request"},
		{"relative path", "/api/app/tabs", "application/json", `{"tabs":[{"id":"a","kind":"file","path":"x.go"}]}`, 400, "bad_request"},
		{"bad url", "/api/app/tabs", "application/json", `{"tabs":[{"id":"a","kind":"browser","url":"javascript:alert(1)"}]}`, 400, "bad_request"},
		{"state not an object", "/api/app/tabs", "application/json", `{"tabs":[{"id":"a","kind":"chat","state":[1]}]}`, 400, "bad_request"},
		{"state too large", "/api/app/tabs", "application/json", `{"tabs":[{"id":"a","kind":"chat","state":{"x":"` + strings.Repeat("x", workspace.MaxTabStateBytes) + `"}}]}`, 400, "bad_request"},
		{"too many tabs", "/api/app/tabs", "application/json", `{"tabs":[` + strings.Join(many, ",") + `]}`, 400, "bad_request"},
		{"unknown tab field", "/api/app/tabs", "application/json", `{"tabs":[{"id":"a","kind":"chat","color":"red"}]}`, 400, "bad_request"},
		{"unknown field", "/api/app/tabs", "application/json", `{"tabs":[],"window":1}`, 400, "bad_request"},
		{"bad profile", "/api/app/tabs?profile=a/b", "application/json", `{"tabs":[]}`, 400, "bad_request"},
		{"malformed", "/api/app/tabs", "application/json", `{"tabs":[`, 400, "bad_request"},
		{"empty body", "/api/app/tabs", "application/json", ``, 400, "bad_request"},
		{"wrong content type", "/api/app/tabs", "text/plain", `{"tabs":[]}`, 415, "unsupported_media_type"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			e.send(http.MethodPost, tt.path, tt.body, tt.contentType).want(t, tt.status, tt.code)
			if got := e.do(http.MethodGet, "/api/app/tabs", ""); got.raw != read.raw {
				t.Errorf("tabs changed by a refused request: %s", got.raw)
			}
		})
	}
	e.do(http.MethodGet, "/api/app/tabs?profile=%20", "").want(t, http.StatusBadRequest, "bad_request")
}

func TestPresets(t *testing.T) {
	e := mustEnv(t)
	got := e.do(http.MethodGet, "/api/app/presets", "").want(t, http.StatusOK, "")
	if got.str("default") != workspace.DefaultPreset || len(got.list("presets")) != len(workspace.Presets) {
		t.Fatalf("presets %s", got.raw)
	}
	for _, p := range workspace.Presets {
		sum := 0
		for _, pane := range p.Panes {
			sum += pane.Size
		}
		if sum != 100 {
			t.Errorf("preset %s: pane sizes add up to %d, want 100", p.ID, sum)
		}
	}
	e.do(http.MethodPut, "/api/app/config", `{"layout.default_preset":"review"}`).want(t, http.StatusOK, "")
	if got := e.do(http.MethodGet, "/api/app/presets", ""); got.str("default") != "review" {
		t.Errorf("default after setting it: %s", got.raw)
	}
}

func TestConfig(t *testing.T) {
	e := mustEnv(t)
	got := e.do(http.MethodGet, "/api/app/config", "").want(t, http.StatusOK, "")
	cfg := got.body["config"].(map[string]any)
	if len(cfg) != len(workspace.Keys) || cfg["shadow_git.max_file_size_mb"] != 50.0 || cfg["shadow_db.sql_timeout_s"] != 30.0 ||
		len(cfg["extra_dirs"].([]any)) != 0 || cfg["ui.theme"] != "system" {
		t.Fatalf("defaults %s", got.raw)
	}
	for _, k := range got.list("keys") {
		k := k.(map[string]any)
		if k["key"] == "" || k["type"] == "" || k["description"] == "" || k["set"] != false {
			t.Errorf("key %v", k)
		}
	}

	set := e.do(http.MethodPut, "/api/app/config",
		`{"extra_dirs":["/srv/data/","/srv/data","/opt/x/../y"],"shadow_git.max_file_size_mb":0,"shadow_db.sql_timeout_s":5}`).
		want(t, http.StatusOK, "")
	cfg = set.body["config"].(map[string]any)
	if fmt.Sprint(cfg["extra_dirs"]) != "[/srv/data /opt/y]" || cfg["shadow_git.max_file_size_mb"] != 0.0 || cfg["shadow_db.sql_timeout_s"] != 5.0 {
		t.Fatalf("after PUT %s", set.raw)
	}
	// What other services read: app_settings, key config/<name>, a JSON value.
	var raw []byte
	if err := e.db.QueryRow(t.Context(), `SELECT value FROM app_settings WHERE key = 'config/extra_dirs'`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	if err := json.Unmarshal(raw, &dirs); err != nil || len(dirs) != 2 || dirs[1] != "/opt/y" {
		t.Errorf("stored extra_dirs %s (%v)", raw, err)
	}
	var timeout int
	if err := e.db.QueryRow(t.Context(), `SELECT (value #>> '{}')::int FROM app_settings WHERE key = 'config/shadow_db.sql_timeout_s'`).Scan(&timeout); err != nil || timeout != 5 {
		t.Errorf("stored sql timeout %d (%v)", timeout, err)
	}

	bad := []struct{ name, contentType, body, want string }{
		{"unknown key", "application/json", `{"extra_dirs":[],"colour":"red"}`, `unknown key "colour"`},
		{"relative dir", "application/json", `{"extra_dirs":["srv"]}`, "absolute"},
		{"root dir", "application/json", `{"extra_dirs":["/"]}`, "whole file system"},
		{"proc", "application/json", `{"extra_dirs":["/proc/1"]}`, "/proc"},
		{"dev", "application/json", `{"extra_dirs":["/dev"]}`, "/dev"},
		{"dirs not a list", "application/json", `{"extra_dirs":"/srv"}`, "list"},
		{"dir not a string", "application/json", `{"extra_dirs":[1]}`, "list"},
		{"negative size", "application/json", `{"shadow_git.max_file_size_mb":-1}`, "integer from 0"},
		{"fractional size", "application/json", `{"shadow_git.max_file_size_mb":1.5}`, "integer"},
		{"size as a string", "application/json", `{"shadow_git.max_file_size_mb":"50"}`, "integer"},
		{"timeout zero", "application/json", `{"shadow_db.sql_timeout_s":0}`, "integer from 1"},
		{"timeout too long", "application/json", `{"shadow_db.sql_timeout_s":3601}`, "3600"},
		{"unknown preset", "application/json", `{"layout.default_preset":"grid"}`, "one of"},
		{"bad theme", "application/json", `{"ui.theme":"blue"}`, "one of"},
		{"font too small", "application/json", `{"ui.font_size":2}`, "integer from 10"},
		{"nothing", "application/json", `{}`, "nothing to change"},
		{"empty body", "application/json", ``, "malformed"},
		{"not an object", "application/json", `[]`, "malformed"},
		{"malformed", "application/json", `{"ui.theme":`, "malformed"},
		{"trailing data", "application/json", `{"ui.theme":"dark"} x`, "malformed"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			got := e.send(http.MethodPut, "/api/app/config", tt.body, tt.contentType).want(t, http.StatusBadRequest, "bad_request")
			if !strings.Contains(got.str("message"), tt.want) {
				t.Errorf("message %q, want it to say %q", got.str("message"), tt.want)
			}
			after := e.do(http.MethodGet, "/api/app/config", "")
			if fmt.Sprint(after.body["config"]) != fmt.Sprint(set.body["config"]) {
				t.Errorf("config changed by a refused request: %s", after.raw)
			}
		})
	}
	e.send(http.MethodPut, "/api/app/config", `{"ui.theme":"dark"}`, "text/plain").want(t, http.StatusUnsupportedMediaType, "unsupported_media_type")

	t.Run("null resets a key", func(t *testing.T) {
		got := e.do(http.MethodPut, "/api/app/config", `{"extra_dirs":null,"ui.font_size":16}`).want(t, http.StatusOK, "")
		cfg := got.body["config"].(map[string]any)
		if len(cfg["extra_dirs"].([]any)) != 0 || cfg["ui.font_size"] != 16.0 {
			t.Errorf("after reset %s", got.raw)
		}
		if n := e.count(`SELECT count(*) FROM app_settings WHERE key = 'config/extra_dirs'`); n != 0 {
			t.Error("a reset key is still stored")
		}
		for _, k := range got.list("keys") {
			k := k.(map[string]any)
			if wantSet := k["key"] != "extra_dirs" && k["key"] != "layout.default_preset" && k["key"] != "ui.theme" && k["key"] != "push_turn_seconds"; k["set"] != wantSet {
				t.Errorf("key %v: set = %v, want %v", k["key"], k["set"], wantSet)
			}
		}
	})

	t.Run("other settings, secrets among them, are never answered", func(t *testing.T) {
		if _, err := e.db.Exec(t.Context(), `INSERT INTO app_settings (key, value)
			VALUES ('provider_auth/codex', '{"api_key":"sk-secret-value"}'), ('config/unknown', '"sk-secret-too"')`); err != nil {
			t.Fatal(err)
		}
		got := e.do(http.MethodGet, "/api/app/config", "").want(t, http.StatusOK, "")
		if strings.Contains(got.raw, "sk-secret") || len(got.body["config"].(map[string]any)) != len(workspace.Keys) {
			t.Errorf("config answers another setting: %s", got.raw)
		}
	})

	t.Run("a stored value that is no longer valid counts as unset", func(t *testing.T) {
		if _, err := e.db.Exec(t.Context(), `UPDATE app_settings SET value = '"x"' WHERE key = 'config/ui.font_size'`); err != nil {
			t.Fatal(err)
		}
		got := e.do(http.MethodGet, "/api/app/config", "").want(t, http.StatusOK, "")
		if got.body["config"].(map[string]any)["ui.font_size"] != 14.0 {
			t.Errorf("config %s", got.raw)
		}
	})
}

func FuzzParseValue(f *testing.F) {
	for _, k := range workspace.Keys {
		f.Add(k.Name, `null`)
	}
	f.Add("extra_dirs", `["/a","/proc/x"]`)
	f.Add("shadow_git.max_file_size_mb", `1e3`)
	f.Fuzz(func(t *testing.T, key, raw string) {
		v, err := workspace.ParseValue(key, json.RawMessage(raw))
		if err != nil {
			return
		}
		// An accepted value encodes and is accepted again unchanged.
		enc, merr := json.Marshal(v)
		if merr != nil {
			t.Fatalf("ParseValue(%q, %q) = %v: %v", key, raw, v, merr)
		}
		again, err := workspace.ParseValue(key, enc)
		if err != nil || fmt.Sprint(again) != fmt.Sprint(v) {
			t.Errorf("ParseValue(%q, %s) = %v, %v; want %v", key, enc, again, err, v)
		}
	})
}
