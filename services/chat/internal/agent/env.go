package agent

import (
	"os"
	"strings"
)

// ServerOnlyEnv names the variables of the server's own environment that an
// agent process never gets: credentials of the database, Redis and the
// internal API, and the first password. An agent runs shell commands that
// a prompt (or a file it reads) can steer; it has no use for them.
var ServerOnlyEnv = []string{
	"DATABASE_URL", "DATABASE_URL_FILE", "READONLY_DATABASE_URL", "READONLY_DATABASE_URL_FILE",
	"PROVISION_DATABASE_URL", "REDIS_URL", "SVC_INTERNAL_SECRET", "SVC_INTERNAL_SECRET_FILE",
	"SVC_CODE_PASSWORD",
}

// ServerEnv is the server's environment without ServerOnlyEnv: the base
// environment of an agent process.
func ServerEnv() []string { return WithoutServerOnly(os.Environ()) }

// WithoutServerOnly returns env without the ServerOnlyEnv entries.
func WithoutServerOnly(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !serverOnly(name) {
			out = append(out, kv)
		}
	}
	return out
}

func serverOnly(name string) bool {
	for _, n := range ServerOnlyEnv {
		if name == n {
			return true
		}
	}
	return false
}
