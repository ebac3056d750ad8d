// Package profile reads svc-code's host profile: SVC_CODE_PROFILE=NAME runs an
// instance beside the default one and beside other profiles, with its own
// data home (~/.svc-code/profiles/NAME), config file
// (~/.config/svc-code/profiles/NAME/config.yaml), Redis key prefix
// (svc-NAME:) and, under `make run`, its own database and ports. datahome,
// configfile and the services' Redis prefix all go through it, so one
// variable moves everything at once.
package profile

import (
	"fmt"
	"regexp"
)

// EnvVar names the variable that selects a profile.
const EnvVar = "SVC_CODE_PROFILE"

// DefaultRedisPrefix is the Redis key prefix of the instance without a profile.
const DefaultRedisPrefix = "svc:"

// A name is a plain file name: it becomes a directory and part of a Redis
// prefix, so no "/" and no ":". deploy/helpers/shadow-git and
// deploy/scripts/run.sh check the same rule.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Valid reports whether name can be a profile's name.
func Valid(name string) error {
	if !namePattern.MatchString(name) || name == "." || name == ".." {
		return fmt.Errorf("%s=%q: want a plain name of letters, digits, '.', '_' or '-' (at most 64)", EnvVar, name)
	}
	return nil
}

// Name returns the profile selected by the environment: "" for none.
func Name(getenv func(string) string) (string, error) {
	name := getenv(EnvVar)
	if name == "" {
		return "", nil
	}
	if err := Valid(name); err != nil {
		return "", err
	}
	return name, nil
}

// RedisPrefix is the default Redis key prefix of profile name ("" for the
// default instance): "svc:" or "svc-NAME:". No prefix is the start of
// another: ":" ends each, and a name holds no ":".
func RedisPrefix(name string) string {
	if name == "" {
		return DefaultRedisPrefix
	}
	return "svc-" + name + ":"
}
