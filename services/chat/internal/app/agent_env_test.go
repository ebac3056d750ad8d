package app

import (
	"path/filepath"
	"strings"
	"testing"
)

// serviceVariables are variables of the server's environment that no agent
// may see (libs/childenv): make test's URLs (issue 15: `make run` exported
// TEST_DATABASE_URL, a superuser URL, to every agent), the database and
// Redis URLs, the internal key and the first password in both forms, and
// the services' own settings.
var serviceVariables = map[string]string{
	"TEST_DATABASE_URL":        "postgres://postgres@127.0.0.1:5432/postgres",
	"TEST_REDIS_URL":           "redis://127.0.0.1:6379/0",
	"TEST_ANYTHING":            "x",
	"DATABASE_URL":             "postgres://svc_code:hunter2@127.0.0.1/svc_code",
	"READONLY_DATABASE_URL":    "postgres://svc_readonly:pw@127.0.0.1/svc_code",
	"PROVISION_DATABASE_URL":   "postgres://postgres@127.0.0.1/postgres",
	"REDIS_URL":                "redis://:pw@127.0.0.1:6379/0",
	"REDIS_PASSWORD":           "pw",
	"SVC_INTERNAL_SECRET":      testSecret,
	"SVC_INTERNAL_SECRET_FILE": "/run/secrets/internal",
	"SVC_CODE_PASSWORD":        "first-password",
	"SVC_CODE_PASSWORD_FILE":   "/run/secrets/password",
	"CHAT_URL":                 "http://127.0.0.1:8771",
	"TERMINAL_ADDR":            "127.0.0.1:8772",
}

// userVariables are kept: what a shell needs and the user's own.
var userVariables = map[string]string{
	"PATH": "", "HOME": "", "LANG": "C.UTF-8", "TERM": "xterm-256color", "SVC_TEST_PASSED_ON": "yes",
}

// setServiceEnv puts serviceVariables and userVariables into the test
// process' environment, which chat's agents inherit.
func setServiceEnv(t *testing.T) {
	t.Helper()
	for k, v := range serviceVariables {
		t.Setenv(k, v)
	}
	for k, v := range userVariables {
		if v != "" {
			t.Setenv(k, v)
		}
	}
}

// checkAgentEnv checks the names an agent listed (one per line).
func checkAgentEnv(t *testing.T, provider string, listed any) {
	t.Helper()
	text, _ := listed.(string)
	got := map[string]bool{}
	for _, name := range strings.Split(text, "\n") {
		got[name] = true
	}
	for name := range serviceVariables {
		if got[name] {
			t.Errorf("%s: the agent's environment has %s", provider, name)
		}
	}
	for name := range userVariables {
		if !got[name] {
			t.Errorf("%s: the agent's environment lacks %s (it has %q)", provider, name, text)
		}
	}
}

// TestAgentEnvLacksServiceVariables: the agents of both providers, started
// by a turn through /chat, see none of the server's own variables and all
// of the user's.
func TestAgentEnvLacksServiceVariables(t *testing.T) {
	setServiceEnv(t)
	t.Run("agent-sdk", func(t *testing.T) {
		c := startFakeChat(t, "FAKECLAUDE_LOG="+filepath.Join(t.TempDir(), "claude.log"))
		w, _ := c.connect()
		w.send(map[string]any{"type": "user_message", "content": "ENV"})
		res := w.until("result", isResult)
		checkAgentEnv(t, "agent-sdk", resultData(res[len(res)-1])["result"])
	})
	t.Run("app-server", func(t *testing.T) {
		c := startCodexChat(t)
		w, _ := c.connectCodex()
		w.send(map[string]any{"type": "user_message", "content": "ENV"})
		res := w.until("result", isResult)
		checkAgentEnv(t, "app-server", resultData(res[len(res)-1])["result"])
	})
}
