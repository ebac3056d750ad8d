// Package app wires analytics together: LoadConfig reads the environment
// once, and Run connects to Redis and to PostgreSQL twice (as the owner
// role, and as the read-only role for the SQL endpoint), applies the schema
// migrations and serves the HTTP API until its context ends. It is the only
// place that knows how the parts fit.
package app

import (
	"net"
	"net/url"

	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/svcenv"
)

// Variables read by LoadConfig besides svcenv's.
const (
	EnvAddr     = "ANALYTICS_ADDR"
	DefaultAddr = "127.0.0.1:8774"
)

// Config is analytics' configuration.
type Config struct {
	svcenv.Common
	// Addr is the listen address (host:port).
	Addr string
	// DatabaseURL is DATABASE_URL (or DATABASE_URL_FILE); when empty, Run
	// reads it from <data home>/postgres.env.
	DatabaseURL string
	// ReadonlyDatabaseURL is READONLY_DATABASE_URL (or _FILE): the role with
	// SELECT only, for the SQL endpoint. When empty, Run reads it from
	// <data home>/postgres.env.
	ReadonlyDatabaseURL string
	// Listener, when set, is served instead of listening on Addr: tests pass
	// one bound to 127.0.0.1:0 to learn the address. Run closes it.
	Listener net.Listener
}

// LoadConfig reads the configuration through getenv, reporting every
// problem at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	r := envconf.New(getenv)
	cfg := Config{
		Common:              svcenv.LoadCommon(r),
		Addr:                r.String(EnvAddr, DefaultAddr),
		DatabaseURL:         r.Secret(svcenv.EnvDatabaseURL),
		ReadonlyDatabaseURL: r.Secret(svcenv.EnvReadonlyDatabaseURL),
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		r.Fail("%s=%q: want host:port", EnvAddr, cfg.Addr)
	}
	checkPostgresURL(r, svcenv.EnvDatabaseURL, cfg.DatabaseURL)
	checkPostgresURL(r, svcenv.EnvReadonlyDatabaseURL, cfg.ReadonlyDatabaseURL)
	return cfg, r.Err()
}

// checkPostgresURL records a value that is not a postgres:// URL, without
// repeating it: it may hold a password.
func checkPostgresURL(r *envconf.Reader, key, value string) {
	if value == "" {
		return
	}
	if u, err := url.Parse(value); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		r.Fail("%s: want a URL such as postgres://user:password@127.0.0.1:5432/svc_code", key)
	}
}
