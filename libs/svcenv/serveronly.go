package svcenv

import (
	"slices"
	"strings"
)

// ServerOnly names the variables of a service's own environment that the
// programs it starts for users (agents, shells, commands) never get: the
// credentials of the database, Redis and the internal API, and the first
// password. Those programs run what a prompt or a person types; they have
// no use for the server's keys.
var ServerOnly = []string{
	EnvDatabaseURL, EnvDatabaseURL + "_FILE", EnvReadonlyDatabaseURL, EnvReadonlyDatabaseURL + "_FILE",
	"PROVISION_DATABASE_URL", EnvRedisURL, EnvRedisURL + "_FILE", EnvRedisPassword, EnvRedisPassword + "_FILE",
	"SVC_INTERNAL_SECRET", "SVC_INTERNAL_SECRET_FILE",
	"SVC_CODE_PASSWORD", "SVC_CODE_PASSWORD_FILE",
}

// WithoutServerOnly returns environ (KEY=VALUE entries) without the
// ServerOnly variables, in the same order.
func WithoutServerOnly(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains(ServerOnly, name) {
			out = append(out, kv)
		}
	}
	return out
}
