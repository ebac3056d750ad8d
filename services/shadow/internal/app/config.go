// Package app wires shadow together: LoadConfig reads the environment
// once, and Run connects to Redis and PostgreSQL and serves the HTTP API (libs/svchttp)
// until its context ends. It is the only place that knows how the parts
// fit.
package app

import (
	"net"
	"os"
	"path/filepath"

	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/secretpaths"
	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/services/shadow/internal/journal"
)

// Service is shadow's name: its health route and its logs.
const Service = "shadow"

// Variables read by LoadConfig besides svcenv's.
const (
	EnvAddr     = "SHADOW_ADDR"
	DefaultAddr = "127.0.0.1:8773"
	// EnvMaxFileMB is the journal's size cap in MB when the server setting
	// shadow_git.max_file_size_mb is not set (0 disables the cap).
	EnvMaxFileMB = "SHADOW_MAX_FILE_MB"
	// EnvConsumer names this instance in the turn stream's consumer group.
	EnvConsumer = "SHADOW_CONSUMER"
	// EnvExtraDirs lists extra allowed roots of the file routes
	// (colon-separated absolute paths), besides the server setting
	// extra_dirs.
	EnvExtraDirs = "SHADOW_EXTRA_DIRS"
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
	// MaxFileMB is SHADOW_MAX_FILE_MB (default 50).
	MaxFileMB int
	// Consumer is this instance's name in the turn stream's consumer
	// group (SHADOW_CONSUMER, default "shadow-<hostname>").
	Consumer string
	// ExtraDirs is SHADOW_EXTRA_DIRS: colon-separated absolute paths the
	// file routes may also reach.
	ExtraDirs string
	// Private is what the file, search, view and journal routes never
	// reach: svc-code's secrets (libs/secretpaths), from this environment.
	Private secretpaths.Set
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
	cfg.MaxFileMB = r.Int(EnvMaxFileMB, journal.DefaultMaxFileMB)
	if cfg.MaxFileMB < 0 {
		r.Fail("%s=%d: want 0 (no cap) or more", EnvMaxFileMB, cfg.MaxFileMB)
	}
	cfg.ExtraDirs = r.String(EnvExtraDirs, "")
	for _, d := range filepath.SplitList(cfg.ExtraDirs) {
		if d != "" && !filepath.IsAbs(d) {
			r.Fail("%s: %q is not an absolute path", EnvExtraDirs, d)
		}
	}
	cfg.Private = secretpaths.For(getenv, os.Environ())
	cfg.Consumer = r.String(EnvConsumer, "")
	if cfg.Consumer == "" {
		host, _ := os.Hostname()
		cfg.Consumer = "shadow-" + host
	}
	return cfg, r.Err()
}
