// Package app wires shadow together: LoadConfig reads the environment
// once, and Run connects to Redis and PostgreSQL and serves the HTTP API (libs/svchttp)
// until its context ends. It is the only place that knows how the parts
// fit.
package app

import (
	"net"

	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/svcenv"
)

// Service is shadow's name: its health route and its logs.
const Service = "shadow"

// Variables read by LoadConfig besides svcenv's.
const (
	EnvAddr     = "SHADOW_ADDR"
	DefaultAddr = "127.0.0.1:8773"
)

// Config is shadow's configuration.
type Config struct {
	svcenv.Common
	// Addr is the listen address (host:port).
	Addr string
	// DatabaseURL is DATABASE_URL (or DATABASE_URL_FILE); when empty, Run
	// reads it from <data home>/postgres.env. shadow reads chat's sessions
	// (their working directories are allowed roots and projects).
	DatabaseURL string
	// Home is the home directory the companion helpers are installed into
	// (~/.local/bin, ~/.claude/agents); empty means the user's home.
	Home string
	// Listener, when set, is served instead of listening on Addr: tests pass
	// one bound to 127.0.0.1:0 to learn the address. Run closes it.
	Listener net.Listener
}

// LoadConfig reads the configuration through getenv, reporting every
// problem at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	r := envconf.New(getenv)
	cfg := Config{
		Common:      svcenv.LoadCommon(r),
		Addr:        r.String(EnvAddr, DefaultAddr),
		DatabaseURL: svcenv.LoadPostgresURL(r, svcenv.EnvDatabaseURL),
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		r.Fail("%s=%q: want host:port", EnvAddr, cfg.Addr)
	}
	return cfg, r.Err()
}
