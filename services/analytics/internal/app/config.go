// Package app wires analytics together: LoadConfig reads the environment
// once, and Run connects to Redis and to PostgreSQL twice (as the owner
// role, and as the read-only role for the SQL endpoint), applies the schema
// migrations and serves the HTTP API (libs/svchttp) until its context
// ends. It is the only place that knows how the parts fit.
package app

import (
	"net"
	"os"

	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/svcenv"
)

// Service is analytics' name: its health route, its logs and the component
// of its migrations.
const Service = "analytics"

// Variables read by LoadConfig besides svcenv's.
const (
	EnvAddr     = "ANALYTICS_ADDR"
	DefaultAddr = "127.0.0.1:8774"
	// EnvConsumer names this instance in the turns stream's consumer group;
	// default: the host name.
	EnvConsumer = "ANALYTICS_CONSUMER"
	// EnvSQLMaxResponseMB bounds one answer of POST /api/shadow-db/sql, in
	// MiB (0: no bound); a larger result is cut with payload_too_large.
	EnvSQLMaxResponseMB     = "ANALYTICS_SQL_MAX_RESPONSE_MB"
	DefaultSQLMaxResponseMB = 256
	maxSQLMaxResponseMB     = 1 << 20
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
	// Consumer is this instance's name in the turns stream's consumer
	// group: keep it stable across restarts (it then takes up its own
	// unacknowledged entries at once) and distinct between instances.
	Consumer string
	// SQLMaxResponseMB bounds an answer of the SQL endpoint, in MiB; 0:
	// no bound.
	SQLMaxResponseMB int
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
		DatabaseURL:         svcenv.LoadPostgresURL(r, svcenv.EnvDatabaseURL),
		ReadonlyDatabaseURL: svcenv.LoadPostgresURL(r, svcenv.EnvReadonlyDatabaseURL),
		Consumer:            r.String(EnvConsumer, defaultConsumer()),
		SQLMaxResponseMB:    r.Int(EnvSQLMaxResponseMB, DefaultSQLMaxResponseMB),
	}
	if cfg.SQLMaxResponseMB < 0 || cfg.SQLMaxResponseMB > maxSQLMaxResponseMB {
		r.Fail("%s=%d: want 0 (no bound) to %d MiB", EnvSQLMaxResponseMB, cfg.SQLMaxResponseMB, maxSQLMaxResponseMB)
	}
	if cfg.Consumer == "" || len(cfg.Consumer) > 200 {
		r.Fail("%s=%q: want a name of 1 to 200 characters", EnvConsumer, cfg.Consumer)
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		r.Fail("%s=%q: want host:port", EnvAddr, cfg.Addr)
	}
	return cfg, r.Err()
}

// defaultConsumer is the host name, else "analytics".
func defaultConsumer() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return Service
}
