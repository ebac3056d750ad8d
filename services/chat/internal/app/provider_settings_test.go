package app

import (
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
)

func TestProviderSettingsDefaults(t *testing.T) {
	db := pgmigratetest.MustSchema(t)
	c := startInstance(t, db, nil, notFound, nil, nil)
	got := c.do(http.MethodGet, "/api/app/provider-defaults/app-server", "")
	got.want(t, http.StatusOK, "")
	if got.body["model"] != nil || got.str("permission_mode") != "default" || got.str("approval_policy") != "untrusted" || got.str("sandbox") != "workspace-write" {
		t.Errorf("initial defaults %s", got.raw)
	}
	got = c.do(http.MethodPut, "/api/app/provider-defaults/codex", `{"model":"gpt-5","permission_mode":"acceptEdits","sandbox":"read-only"}`)
	got.want(t, http.StatusOK, "")
	pol, _ := got.body["mode_policies"].(map[string]any)
	def, _ := pol["default"].(map[string]any)
	if got.str("model") != "gpt-5" || got.str("permission_mode") != "acceptEdits" || got.str("sandbox") != "read-only" || def["sandbox"] != "read-only" {
		t.Errorf("after PUT %s", got.raw)
	}
	// A field left out keeps its value; null resets it.
	got = c.do(http.MethodPut, "/api/app/provider-defaults/app-server", `{"sandbox":null}`)
	if got.str("model") != "gpt-5" || got.str("sandbox") != "workspace-write" {
		t.Errorf("after resetting sandbox %s", got.raw)
	}
	// Another instance on the same database sees the settings.
	other := startInstance(t, db, nil, notFound, nil, nil)
	if got := other.do(http.MethodGet, "/api/app/provider-defaults/app-server", ""); got.str("model") != "gpt-5" {
		t.Errorf("second instance %s", got.raw)
	}
	// New sessions of the provider use them; the default provider too.
	c.do(http.MethodPut, "/api/app/default-provider", `{"provider":"app-server"}`).want(t, http.StatusOK, "")
	if got := other.do(http.MethodGet, "/api/app/default-provider", ""); got.str("provider") != "app-server" {
		t.Errorf("default provider on the second instance %s", got.raw)
	}
	sess := c.do(http.MethodPost, "/api/sessions", `{"cwd":`+quote(t.TempDir())+`}`)
	sess.want(t, http.StatusCreated, "")
	if sess.str("provider") != "app-server" || sess.str("model") != "gpt-5" || sess.str("permission_mode") != "acceptEdits" {
		t.Errorf("new session %s, want app-server, gpt-5, acceptEdits", sess.raw)
	}
	conn := c.dial(map[string][]string{"cwd": {t.TempDir()}}).next()
	if conn.str("provider") != "app-server" || conn.str("permission_mode") != "acceptEdits" {
		t.Errorf("socket-created session %v", conn)
	}
	// An explicit provider keeps its own defaults.
	sess = c.do(http.MethodPost, "/api/sessions", `{"cwd":`+quote(t.TempDir())+`,"provider":"agent-sdk"}`)
	if sess.str("provider") != "agent-sdk" || sess.str("model") != "" || sess.str("permission_mode") != "default" {
		t.Errorf("agent-sdk session %s", sess.raw)
	}
	cat := c.do(http.MethodGet, "/api/providers", "")
	if cat.str("default") != "app-server" || !strings.Contains(cat.raw, `"display_name":"Codex"`) {
		t.Errorf("catalog %s", cat.raw)
	}
}

func TestProviderSettingsModels(t *testing.T) {
	c := startChat(t, notFound)
	got := c.do(http.MethodGet, "/api/app/provider-models/app-server", "")
	got.want(t, http.StatusOK, "")
	if got.body["configured"] != false || !strings.Contains(got.raw, `"id":"gpt-5"`) || !strings.Contains(got.raw, `"input_per_mtok"`) {
		t.Errorf("built-in models %s", got.raw)
	}
	got = c.do(http.MethodPut, "/api/app/provider-models/app-server", `{"models":[{"id":"my-model","display_name":"Mine","price":{"input_per_mtok":3,"cached_input_per_mtok":0.3,"output_per_mtok":15}}]}`)
	got.want(t, http.StatusOK, "")
	models, _ := got.body["models"].([]any)
	if got.body["configured"] != true || len(models) != 1 {
		t.Errorf("after PUT %s", got.raw)
	}
	c.do(http.MethodPut, "/api/app/provider-models/agent-sdk", `{"models":[]}`).want(t, http.StatusOK, "")
	if got := c.do(http.MethodGet, "/api/app/provider-models/claude", ""); got.body["configured"] != true || !strings.Contains(got.raw, `"models":[]`) {
		t.Errorf("empty list %s", got.raw)
	}
	got = c.do(http.MethodPut, "/api/app/provider-models/app-server", `{"models":null}`)
	if got.body["configured"] != false {
		t.Errorf("after reset %s", got.raw)
	}
}

// TestProviderSettingsWildcardPrice: the "*" entry of the model list (docs:
// "prices every model nothing else names") is accepted with a price and
// prices a turn of a model the list does not name; without a price it is
// refused, and "*" is no model for provider-defaults.
func TestProviderSettingsWildcardPrice(t *testing.T) {
	c := startCodexChat(t)
	c.do(http.MethodPut, "/api/app/provider-models/app-server",
		`{"models":[{"id":"gpt-5"},{"id":"*","price":{"input_per_mtok":1,"cached_input_per_mtok":0.1,"output_per_mtok":10}}]}`).want(t, http.StatusOK, "")
	c.do(http.MethodPut, "/api/app/provider-models/app-server", `{"models":[{"id":"*"}]}`).want(t, http.StatusBadRequest, "bad_request")
	c.do(http.MethodPut, "/api/app/provider-defaults/app-server", `{"model":"*"}`).want(t, http.StatusBadRequest, "bad_request")
	w, conn := c.connectCodex()
	w.send(map[string]any{"type": "user_message", "content": "hi"})
	res := w.until("result", isResult)
	if d := resultData(res[len(res)-1]); d["priced"] != true || math.Abs(d["cost_usd"].(float64)-plainTurnCost) > 1e-12 {
		t.Errorf("result %v, want priced by \"*\" at %g", d, plainTurnCost)
	}
	got := c.waitSession(conn.str("session_id"), func(a answer) bool { return a.body["turns"] == float64(1) })
	if math.Abs(got.body["cost_usd"].(float64)-plainTurnCost) > 1e-12 {
		t.Errorf("session %s, want cost %g", got.raw, plainTurnCost)
	}
}

func TestProviderSettingsAuth(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("CODEX_API_KEY", "")
	c := startChat(t, notFound)
	got := c.do(http.MethodGet, "/api/app/provider-auth/app-server", "")
	got.want(t, http.StatusOK, "")
	if got.body["configured"] != false || got.body["api_key_set"] != false || got.str("api_key_env") != "OPENAI_API_KEY" {
		t.Errorf("nothing configured: %s", got.raw)
	}
	// A login state file counts.
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".codex", "auth.json"), []byte(`{"tokens":"secret-token-value"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got = c.do(http.MethodGet, "/api/app/provider-auth/codex", "")
	if got.body["configured"] != true || strings.Contains(got.raw, "secret-token-value") {
		t.Errorf("with auth.json %s", got.raw)
	}
	// A stored key is reported, never returned.
	got = c.do(http.MethodPut, "/api/app/provider-auth/agent-sdk", `{"api_key":"sk-ant-very-secret"}`)
	got.want(t, http.StatusOK, "")
	if got.body["api_key_set"] != true || got.body["configured"] != true || strings.Contains(got.raw, "very-secret") {
		t.Errorf("after PUT %s", got.raw)
	}
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
	got = c.do(http.MethodGet, "/api/app/provider-auth/claude", "")
	if !strings.Contains(got.raw, `"name":"ANTHROPIC_API_KEY","present":true`) || strings.Contains(got.raw, "sk-from-env") {
		t.Errorf("env key %s", got.raw)
	}
	got = c.do(http.MethodPut, "/api/app/provider-auth/agent-sdk", `{"api_key":null}`)
	if got.body["api_key_set"] != false {
		t.Errorf("after removing %s", got.raw)
	}
}

// TestProviderSettingsStoredKeyReachesTheAgent: the stored API key is in
// the agent's environment (the fake echoes it through its transcript).
func TestProviderSettingsStoredKeyReachesTheAgent(t *testing.T) {
	log := filepath.Join(t.TempDir(), "codex.log")
	c := startCodexChat(t, "FAKECODEX_LOG="+log)
	c.do(http.MethodPut, "/api/app/provider-auth/app-server", `{"api_key":"sk-test-123"}`).want(t, http.StatusOK, "")
	w, _ := c.connectCodex()
	w.send(map[string]any{"type": "user_message", "content": "ENV OPENAI_API_KEY"})
	res := w.until("result", isResult)
	if got := resultData(res[len(res)-1])["result"]; got != "OPENAI_API_KEY=sk-test-123" {
		t.Errorf("the agent saw %v", got)
	}
}

func TestProviderSettingsBadInput(t *testing.T) {
	c := startChat(t, notFound)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"defaults unknown provider", http.MethodGet, "/api/app/provider-defaults/nope", "", 404, "not_found"},
		{"defaults put unknown provider", http.MethodPut, "/api/app/provider-defaults/nope", `{"model":"x"}`, 404, "not_found"},
		{"defaults empty", http.MethodPut, "/api/app/provider-defaults/app-server", `{}`, 400, "bad_request"},
		{"defaults unknown field", http.MethodPut, "/api/app/provider-defaults/app-server", `{"colour":"red"}`, 400, "bad_request"},
		{"defaults bad mode", http.MethodPut, "/api/app/provider-defaults/app-server", `{"permission_mode":"yolo"}`, 400, "bad_request"},
		{"defaults bad policy", http.MethodPut, "/api/app/provider-defaults/app-server", `{"approval_policy":"unlessTrusted"}`, 400, "bad_request"},
		{"defaults bad sandbox", http.MethodPut, "/api/app/provider-defaults/app-server", `{"sandbox":"workspaceWrite"}`, 400, "bad_request"},
		{"defaults sandbox for claude", http.MethodPut, "/api/app/provider-defaults/agent-sdk", `{"sandbox":"read-only"}`, 400, "bad_request"},
		{"defaults bad model", http.MethodPut, "/api/app/provider-defaults/agent-sdk", `{"model":"two words"}`, 400, "bad_request"},
		{"defaults wrong type", http.MethodPut, "/api/app/provider-defaults/agent-sdk", `{"model":5}`, 400, "bad_request"},
		{"defaults not JSON", http.MethodPut, "/api/app/provider-defaults/agent-sdk", `model=x`, 400, "bad_request"},
		{"models unknown provider", http.MethodGet, "/api/app/provider-models/nope", "", 404, "not_found"},
		{"models bad id", http.MethodPut, "/api/app/provider-models/app-server", `{"models":[{"id":""}]}`, 400, "bad_request"},
		{"models twice", http.MethodPut, "/api/app/provider-models/app-server", `{"models":[{"id":"a"},{"id":"a"}]}`, 400, "bad_request"},
		{"models negative price", http.MethodPut, "/api/app/provider-models/app-server", `{"models":[{"id":"a","price":{"input_per_mtok":-1}}]}`, 400, "bad_request"},
		{"models unknown field", http.MethodPut, "/api/app/provider-models/app-server", `{"models":[{"id":"a","cost":1}]}`, 400, "bad_request"},
		{"auth unknown provider", http.MethodGet, "/api/app/provider-auth/nope", "", 404, "not_found"},
		{"auth missing key", http.MethodPut, "/api/app/provider-auth/app-server", `{}`, 400, "bad_request"},
		{"auth key with space", http.MethodPut, "/api/app/provider-auth/app-server", `{"api_key":"a b"}`, 400, "bad_request"},
		{"auth key too long", http.MethodPut, "/api/app/provider-auth/app-server", `{"api_key":"` + strings.Repeat("k", 5000) + `"}`, 400, "bad_request"},
		{"default provider unknown", http.MethodPut, "/api/app/default-provider", `{"provider":"gpt"}`, 400, "bad_request"},
		{"default provider empty", http.MethodPut, "/api/app/default-provider", `{}`, 400, "bad_request"},
		{"path unknown provider", http.MethodPut, "/api/app/provider-path/nope", `{"path":null}`, 404, "not_found"},
		{"path codex relative", http.MethodPut, "/api/app/provider-path/codex", `{"path":"bin/codex"}`, 400, "bad_request"},
		{"path codex missing", http.MethodPut, "/api/app/provider-path/codex", `{"path":"/nonexistent/codex"}`, 400, "bad_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.do(tc.method, tc.path, tc.body).want(t, tc.status, tc.code)
		})
	}
	// Nothing changed.
	if got := c.do(http.MethodGet, "/api/app/provider-defaults/app-server", ""); got.body["model"] != nil || got.str("sandbox") != "workspace-write" {
		t.Errorf("defaults after bad input %s", got.raw)
	}
	if got := c.do(http.MethodGet, "/api/app/default-provider", ""); got.str("provider") != "agent-sdk" {
		t.Errorf("default provider after bad input %s", got.raw)
	}
	if got := c.do(http.MethodGet, "/api/app/provider-models/app-server", ""); got.body["configured"] != false {
		t.Errorf("models after bad input %s", got.raw)
	}
}

func TestProviderCatalogCodexFound(t *testing.T) {
	c := startChat(t, notFound)
	codexPath := mustExecutable(t, 0o755)
	c.do(http.MethodPut, "/api/app/provider-path/codex", `{"path":`+quote(codexPath)+`}`).want(t, http.StatusOK, "")
	cat := c.do(http.MethodGet, "/api/providers", "")
	list, _ := cat.body["providers"].([]any)
	p := list[1].(map[string]any)
	exe, _ := p["executable"].(map[string]any)
	defaults, _ := p["defaults"].(map[string]any)
	if p["name"] != "app-server" || p["display_name"] != "Codex" || p["available"] != true || exe["resolved"] != codexPath || defaults["approval_policy"] != "untrusted" {
		t.Errorf("app-server entry %v", p)
	}
}

// TestAgentEnvLacksServerSecrets: the server's own credentials (database,
// Redis, internal secret) are not in an agent's environment, while the
// rest of the server's environment is.
func TestAgentEnvLacksServerSecrets(t *testing.T) {
	t.Setenv("SVC_INTERNAL_SECRET", testSecret)
	t.Setenv("DATABASE_URL", "postgres://svc_code:hunter2@127.0.0.1/svc_code")
	t.Setenv("SVC_TEST_PASSED_ON", "yes")
	c := startCodexChat(t)
	w, _ := c.connectCodex()
	for name, want := range map[string]string{
		"SVC_INTERNAL_SECRET": "SVC_INTERNAL_SECRET=", "DATABASE_URL": "DATABASE_URL=",
		"SVC_TEST_PASSED_ON": "SVC_TEST_PASSED_ON=yes",
	} {
		w.send(map[string]any{"type": "user_message", "content": "ENV " + name})
		res := w.until("result", isResult)
		if got := resultData(res[len(res)-1])["result"]; got != want {
			t.Errorf("the agent saw %v, want %q", got, want)
		}
	}
}
