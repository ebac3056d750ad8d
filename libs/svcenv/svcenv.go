// Package svcenv reads the settings every backend service shares (data home,
// Redis, internal secret, logging, shutdown, body limit) and holds the small
// start-up helpers around them: the PostgreSQL URLs that provisioning writes
// to the data home, and the container healthcheck. Each service's Config
// embeds Common. The package imports envconf, datahome, profile and
// internalauth only: no web framework and no database driver.
package svcenv

import (
	"errors"
	"strings"
	"time"

	"github.com/svc-code/svc-code/libs/datahome"
	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/profile"
)

// Variables read by LoadCommon (SVC_CODE_HOME and SVC_INTERNAL_SECRET are
// datahome.EnvVar and internalauth.EnvVar).
const (
	EnvRedisURL        = "REDIS_URL"
	EnvRedisPrefix     = "REDIS_PREFIX"
	EnvLogFormat       = "LOG_FORMAT"
	EnvLogLevel        = "LOG_LEVEL"
	EnvShutdownTimeout = "SHUTDOWN_TIMEOUT"
	EnvBodyLimitMB     = "BODY_LIMIT_MB"
)

// Defaults of the variables above.
const (
	DefaultRedisURL        = "redis://127.0.0.1:6379/0"
	DefaultRedisPrefix     = profile.DefaultRedisPrefix
	DefaultShutdownTimeout = 10 * time.Second
	DefaultBodyLimitMB     = 32
)

// maxBodyLimitMB keeps BODY_LIMIT_MB within what fits an int on every platform.
const maxBodyLimitMB = 1024

// Common holds the settings shared by every backend service.
type Common struct {
	// DataHome is the resolved data home (SVC_CODE_HOME, else ~/.svc-code).
	// LoadCommon does not create it; Prepare does.
	DataHome string
	// RedisURL is Redis's URL with its password, if any (ReadRedisURL):
	// never log it.
	RedisURL        string
	RedisPrefix     string
	LogFormat       string
	LogLevel        string
	ShutdownTimeout time.Duration
	// BodyLimit is the largest request body accepted, in bytes.
	BodyLimit int

	// getenv is kept for Prepare, which loads the internal secret: that may
	// create a key file, which reading the configuration must not do.
	getenv func(string) string
}

// LoadCommon reads the shared variables through r; problems are recorded in
// r, to be reported with the service's own.
func LoadCommon(r *envconf.Reader) Common {
	c := Common{
		RedisURL:        ReadRedisURL(r),
		LogFormat:       strings.ToLower(r.String(EnvLogFormat, "text")),
		LogLevel:        strings.ToLower(r.String(EnvLogLevel, "info")),
		ShutdownTimeout: r.Duration(EnvShutdownTimeout, DefaultShutdownTimeout),
		getenv:          r.Getenv,
	}
	// A profile has a prefix of its own ("svc-NAME:") unless REDIS_PREFIX says otherwise.
	name, err := profile.Name(r.Getenv)
	if err != nil {
		r.Fail("%v", err)
	}
	c.RedisPrefix = r.String(EnvRedisPrefix, profile.RedisPrefix(name))
	if err == nil {
		home, err := datahome.Dir(r.Getenv)
		if err != nil {
			r.Fail("%s: %v", datahome.EnvVar, err)
		}
		c.DataHome = home
	}
	// Read now so that a bad SVC_INTERNAL_SECRET_FILE is reported with the rest.
	r.Secret(internalauth.EnvVar)

	switch c.LogFormat {
	case "text", "json":
	default:
		r.Fail("%s=%q: want text or json", EnvLogFormat, c.LogFormat)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		r.Fail("%s=%q: want debug, info, warn or error", EnvLogLevel, c.LogLevel)
	}
	if c.ShutdownTimeout <= 0 {
		r.Fail("%s must be positive", EnvShutdownTimeout)
	}
	mb := r.Int(EnvBodyLimitMB, DefaultBodyLimitMB)
	if mb < 1 || mb > maxBodyLimitMB {
		r.Fail("%s=%d: want 1 to %d", EnvBodyLimitMB, mb, maxBodyLimitMB)
	}
	c.BodyLimit = mb << 20
	return c
}

// Prepare creates the data home (mode 0700) and loads the internal secret:
// from SVC_INTERNAL_SECRET(_FILE), else from <data home>/internal.key, which
// the first service to start creates. c must come from LoadCommon.
func (c Common) Prepare() (internalauth.Secret, error) {
	if c.getenv == nil {
		return internalauth.Secret{}, errors.New("svcenv: Common was not read with LoadCommon")
	}
	home, err := datahome.Ensure(c.getenv)
	if err != nil {
		return internalauth.Secret{}, err
	}
	return internalauth.Load(envconf.New(c.getenv), home)
}
