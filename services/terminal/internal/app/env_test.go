package app

import (
	"os"
	"strings"
	"testing"
)

// serviceVariables are variables of the terminal service's environment that
// no shell may see (libs/childenv): make test's URLs (issue 15: `make run`
// exported TEST_DATABASE_URL, a superuser URL, and `/api/exec env` showed
// it), the database and Redis URLs, the internal key and the first
// password in both forms, and the services' own settings.
var serviceVariables = map[string]string{
	"TEST_DATABASE_URL":        "postgres://postgres@127.0.0.1:5432/postgres",
	"TEST_REDIS_URL":           "redis://127.0.0.1:6379/0",
	"TEST_ANYTHING":            "x",
	"DATABASE_URL":             "postgres://svc_code:hunter2@127.0.0.1/svc_code",
	"READONLY_DATABASE_URL":    "postgres://svc_readonly:pw@127.0.0.1/svc_code",
	"REDIS_URL":                "redis://:pw@127.0.0.1:6379/0",
	"REDIS_PASSWORD":           "pw",
	"SVC_INTERNAL_SECRET":      testSecret,
	"SVC_INTERNAL_SECRET_FILE": "/run/secrets/internal",
	"SVC_CODE_PASSWORD":        "first-password",
	"SVC_CODE_PASSWORD_FILE":   "/run/secrets/password",
	"CHAT_URL":                 "http://127.0.0.1:8771",
	"TERMINAL_SHELL":           "bash",
}

// userVariables are kept: what a shell needs and the user's own.
var userVariables = []string{"PATH", "HOME", "LANG", "TERM", "MY_OWN_SETTING"}

// withServiceEnv puts serviceVariables into the test process' environment
// and has the host's shells start from it, as a service's do (no
// ShellEnv).
func withServiceEnv(t *testing.T) hostOption {
	t.Helper()
	for k, v := range serviceVariables {
		t.Setenv(k, v)
	}
	t.Setenv("MY_OWN_SETTING", "kept")
	t.Setenv("LANG", "C")
	t.Setenv("PS1", testPrompt)
	if os.Getenv("HOME") == "" {
		t.Setenv("HOME", t.TempDir())
	}
	return func(_ map[string]string, cfg *Config) {
		if cfg != nil {
			cfg.ShellEnv = nil
		}
	}
}

// checkEnvOutput checks the output of env (NAME=value lines).
func checkEnvOutput(t *testing.T, where, out string) {
	t.Helper()
	got := map[string]bool{}
	for _, line := range strings.Split(strings.ReplaceAll(out, "\r\n", "\n"), "\n") {
		if name, _, ok := strings.Cut(line, "="); ok {
			got[name] = true
		}
	}
	for name := range serviceVariables {
		if got[name] {
			t.Errorf("%s: the shell's environment has %s", where, name)
		}
	}
	for _, name := range userVariables {
		if !got[name] {
			t.Errorf("%s: the shell's environment lacks %s:\n%s", where, name, out)
		}
	}
}

// TestShellEnvLacksServiceVariables: a terminal's shell (a real PTY) and
// /api/exec see none of the service's own variables, and the user's.
func TestShellEnvLacksServiceVariables(t *testing.T) {
	h := startHost(t, withServiceEnv(t))

	c := h.dial(session("env"), nil)
	out := c.run("env; echo END-$((40+2))", "END-42")
	checkEnvOutput(t, "terminal", out)

	status, got := h.request("POST", "/api/exec", "application/json", `{"command":"env","cwd":"/"}`)
	if status != 200 {
		t.Fatalf("/api/exec env: %d %v", status, got)
	}
	stdout, _ := got["stdout"].(string)
	checkEnvOutput(t, "/api/exec", stdout)
}
