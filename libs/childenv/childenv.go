// Package childenv builds the environment of the programs svc-code starts
// for users, from the environment of the service that starts them: chat's
// agents (Claude Code, Codex) and terminal's shells (the PTYs and
// POST /api/exec). Those programs run what a prompt, a file an agent reads,
// or a person types; they get everything a shell needs (PATH, HOME, LANG,
// TERM, the user's own variables) and none of the server's own variables:
// its database and Redis credentials, the internal key, the first password,
// the test suites' URLs, and the services' internal settings.
//
// The rule, applied to each variable's name by Denied:
//
//   - our own variables, by name (Names): the services' addresses and
//     settings, SVC_CODE_PASSWORD, REDIS_PREFIX, ...;
//   - every name starting with TEST_ (make test's TEST_DATABASE_URL,
//     TEST_REDIS_URL, and any other test setting), REDIS_ (REDIS_URL,
//     REDIS_PASSWORD, ...) or SVC_INTERNAL (the internal key and its file);
//   - every name ending in DATABASE_URL (DATABASE_URL, READONLY_DATABASE_URL,
//     PROVISION_DATABASE_URL, a user's CHAT_DATABASE_URL) or containing
//     REDIS_URL;
//   - X_FILE whenever X is denied (the file form of every secret the
//     services read, SVC_CODE_PASSWORD_FILE, DATABASE_URL_FILE, ...).
//
// Kept on purpose although the services read them too (Kept): HOME,
// SVC_CODE_HOME, SVC_CODE_PROFILE, SVC_CONFIG and XDG_CONFIG_HOME (the
// helpers shadow-git and shadow-query find the data home and the config
// file by them), CLAUDE_CONFIG_DIR, CLAUDE_CODE_TMPDIR and CODEX_HOME
// (the agents' own configuration), SHADOW_MAX_FILE_MB (shadow-git's own setting), LOG_LEVEL
// and LOG_FORMAT (common names, no secret). A variable the user's shell
// sets again in its start-up files (~/.bashrc) comes back in a terminal:
// the filter drops what the service inherited, not what the user chooses.
package childenv

import "strings"

// Names are the variables of svc-code's services that their children never
// get, besides the patterns of the package comment: every setting the
// services and deploy/scripts/run.sh use, other than those in Kept.
var Names = []string{
	// The first password (SVC_CODE_PASSWORD_FILE follows by the _FILE rule).
	"SVC_CODE_PASSWORD",
	// The gateway's and the services' addresses and settings.
	"SVC_ADDR", "BODY_LIMIT_MB", "SHUTDOWN_TIMEOUT", "SVC_HOSTS", "SVC_TRUSTED_PROXIES",
	"SVC_MAX_CONNS_PER_CLIENT", "SVC_PASSWORD_OUT",
	// deploy/scripts/run.sh's own settings, and the agent CLI versions make agents installs.
	"SVC_REDIS_PORT", "SVC_BIN_DIR", "SVC_BUILD", "HEALTH_TIMEOUT", "RUN_RESTART", "CLAUDE_CODE_VERSION", "CODEX_VERSION",
	"CHAT_ADDR", "CHAT_URL", "CHAT_HEARTBEAT", "CHAT_OWNER_TTL", "CHAT_SYNC_AGENT_LOG",
	"CHAT_EVENTS_CHECK", "CHAT_EVENTS_HEARTBEAT",
	"CHAT_TASK_DIRS", "CHAT_UPLOAD_FILE_MAX_MB", "CHAT_UPLOAD_IMAGE_MAX_MB", "CHAT_PUSH_SUBJECT", "CHAT_PUSH_RETRY", "CHAT_PUSH_TEST_WAIT",
	"TERMINAL_ADDR", "TERMINAL_URL", "TERMINAL_ADVERTISE_URL", "TERMINAL_HOST_ID", "TERMINAL_HOST_TTL",
	"TERMINAL_SHELL", "TERMINAL_SCROLLBACK_KB", "TERMINAL_IDLE_TIMEOUT", "TERMINAL_HEARTBEAT",
	"TERMINAL_WRITE_TIMEOUT", "TERMINAL_EXEC_TIMEOUT", "TERMINAL_EXEC_MAX_TIMEOUT", "TERMINAL_EXEC_OUTPUT_KB",
	"TERMINAL_FLOW_HIGH", "TERMINAL_FLOW_LOW",
	"SHADOW_ADDR", "SHADOW_URL", "SHADOW_CONSUMER", "SHADOW_EXTRA_DIRS",
	"ANALYTICS_ADDR", "ANALYTICS_URL", "ANALYTICS_CONSUMER", "ANALYTICS_SQL_MAX_RESPONSE_MB",
}

// Kept are variables the services read that their children keep, each for
// a reason given in the package comment.
var Kept = []string{
	"HOME", "SVC_CODE_HOME", "SVC_CODE_PROFILE", "SVC_CONFIG", "XDG_CONFIG_HOME",
	"CLAUDE_CONFIG_DIR", "CLAUDE_CODE_TMPDIR", "CODEX_HOME", "SHADOW_MAX_FILE_MB", "LOG_LEVEL", "LOG_FORMAT",
}

// Prefixes, suffixes and substrings of denied names.
var (
	deniedPrefixes = []string{"TEST_", "REDIS_", "SVC_INTERNAL"}
	deniedSuffixes = []string{"DATABASE_URL"}
	deniedInfixes  = []string{"REDIS_URL"}
)

// Denied reports whether the variable name is kept from the services'
// children.
func Denied(name string) bool {
	if deniedName(name) {
		return true
	}
	if base, ok := strings.CutSuffix(name, "_FILE"); ok && base != "" {
		return Denied(base)
	}
	return false
}

func deniedName(name string) bool {
	for _, n := range Names {
		if name == n {
			return true
		}
	}
	for _, p := range deniedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	for _, s := range deniedSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	for _, s := range deniedInfixes {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// Filter returns environ (KEY=VALUE entries, as os.Environ gives them)
// without the denied variables, in the same order. Entries without "=" are
// kept as they are.
func Filter(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !Denied(name) {
			out = append(out, kv)
		}
	}
	return out
}
