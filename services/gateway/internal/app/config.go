// Package app wires the gateway: configuration from the environment, the
// credential store, Redis, the proxy and the HTTP server, and their orderly
// shutdown. It is the only place where the parts meet.
package app

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"runtime/debug"
	"time"

	"github.com/svc-code/svc-code/libs/authtoken"
	"github.com/svc-code/svc-code/libs/configfile"
	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/services/gateway/internal/route"
)

// Environment variables read by the gateway.
const (
	EnvAddr            = "SVC_ADDR"
	EnvPassword        = "SVC_CODE_PASSWORD" //nolint:gosec // the variable's name, not a credential
	EnvRedisURL        = "REDIS_URL"
	EnvRedisPrefix     = "REDIS_PREFIX"
	EnvLogFormat       = "LOG_FORMAT"
	EnvLogLevel        = "LOG_LEVEL"
	EnvShutdownTimeout = "SHUTDOWN_TIMEOUT"
	EnvBodyLimitMB     = "BODY_LIMIT_MB"
	EnvChatURL         = "CHAT_URL"
	EnvTerminalURL     = "TERMINAL_URL"
	EnvShadowURL       = "SHADOW_URL"
	EnvAnalyticsURL    = "ANALYTICS_URL"
)

// backendEnv maps each service to its URL variable and default.
var backendEnv = map[string][2]string{
	route.Chat:      {EnvChatURL, "http://127.0.0.1:8771"},
	route.Terminal:  {EnvTerminalURL, "http://127.0.0.1:8772"},
	route.Shadow:    {EnvShadowURL, "http://127.0.0.1:8773"},
	route.Analytics: {EnvAnalyticsURL, "http://127.0.0.1:8774"},
}

// Version is set at build time with -ldflags "-X .../app.Version=v1.2.3".
var Version = ""

// Config is the gateway's whole configuration.
type Config struct {
	Addr            string
	ConfigPath      string
	FirstPassword   string
	Backends        map[string]string // service → host:port
	RedisURL        string
	RedisPrefix     string
	LogFormat       string
	LogLevel        string
	ShutdownTimeout time.Duration
	BodyLimit       int

	// Set by tests and tools; zero values mean the production defaults.
	Listener    net.Listener         // serve on this instead of Addr
	HashParams  authtoken.HashParams // argon2id cost
	Poll        time.Duration        // credential re-read interval
	PasswordOut io.Writer            // where a generated password is shown (stderr)

	getenv func(string) string
}

// LoadConfig reads the environment and reports every problem at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	r := envconf.New(getenv)
	cfg := Config{
		Addr:            r.String(EnvAddr, "127.0.0.1:8765"),
		FirstPassword:   r.Secret(EnvPassword),
		RedisURL:        svcenv.ReadRedisURL(r), // REDIS_URL(_FILE), REDIS_PASSWORD(_FILE)
		RedisPrefix:     r.String(EnvRedisPrefix, "svc:"),
		LogFormat:       r.String(EnvLogFormat, "text"),
		LogLevel:        r.String(EnvLogLevel, "info"),
		ShutdownTimeout: r.Duration(EnvShutdownTimeout, 10*time.Second),
		BodyLimit:       r.Int(EnvBodyLimitMB, 64) << 20,
		Backends:        map[string]string{},
		HashParams:      authtoken.DefaultParams,
		PasswordOut:     os.Stderr,
		getenv:          getenv,
	}
	path, err := configfile.DefaultPath(getenv)
	if err != nil {
		r.Fail("%v", err)
	}
	cfg.ConfigPath = path
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		r.Fail("%s=%q: want host:port", EnvAddr, cfg.Addr)
	}
	if cfg.FirstPassword != "" && len(cfg.FirstPassword) < 8 {
		r.Fail("%s must be at least 8 characters", EnvPassword)
	}
	if cfg.BodyLimit <= 0 {
		r.Fail("%s must be positive", EnvBodyLimitMB)
	}
	for svc, ev := range backendEnv {
		raw := r.String(ev[0], ev[1])
		hostport, err := backendAddr(raw)
		if err != nil {
			r.Fail("%s=%q: %v", ev[0], raw, err)
			continue
		}
		cfg.Backends[svc] = hostport
	}
	return cfg, r.Err()
}

// backendAddr turns http://host:port into host:port.
func backendAddr(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("want http://host:port")
	}
	return u.Host, nil
}

func (c Config) version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}
