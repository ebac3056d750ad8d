// Package app wires the gateway: configuration from the environment, the
// credential store, Redis, the proxy and the HTTP server, and their orderly
// shutdown. It is the only place where the parts meet.
package app

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/svc-code/svc-code/libs/authtoken"
	"github.com/svc-code/svc-code/libs/configfile"
	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/profile"
	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/services/gateway/internal/peer"
	"github.com/svc-code/svc-code/services/gateway/internal/route"
	"github.com/svc-code/svc-code/services/gateway/internal/throttle"
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
	EnvHosts           = "SVC_HOSTS"
	EnvTrustedProxies  = "SVC_TRUSTED_PROXIES"
	EnvMaxConns        = "SVC_MAX_CONNS_PER_CLIENT"
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
	// Hosts are the host names the gateway answers to besides the
	// loopback names and its listen address (SVC_HOSTS).
	Hosts []string
	// TrustedProxies are the peers whose X-Forwarded-* headers count.
	TrustedProxies []netip.Prefix
	// MaxConnsPerClient caps the open connections of one client address
	// (0: no cap).
	MaxConnsPerClient int

	// Set by tests and tools; zero values mean the production defaults.
	Listener    net.Listener         // serve on this instead of Addr
	HashParams  authtoken.HashParams // argon2id cost
	Poll        time.Duration        // credential re-read interval
	CookieTTL   time.Duration        // svc_auth lifetime (30 days)
	PasswordOut io.Writer            // where a generated password is shown (stderr)
	Limiter     *throttle.Limiter    // login throttle (throttle.New())
	// PasswordOutFile, when set (SVC_PASSWORD_OUT), receives a generated first
	// password instead of PasswordOut, which then only names the file.
	PasswordOutFile string

	getenv func(string) string
}

// LoadConfig reads the environment and reports every problem at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	r := envconf.New(getenv)
	cfg := Config{
		Addr:              r.String(EnvAddr, "127.0.0.1:8765"),
		FirstPassword:     r.Secret(EnvPassword),
		RedisURL:          svcenv.ReadRedisURL(r), // REDIS_URL(_FILE), REDIS_PASSWORD(_FILE)
		LogFormat:         r.String(EnvLogFormat, "text"),
		LogLevel:          r.String(EnvLogLevel, "info"),
		ShutdownTimeout:   r.Duration(EnvShutdownTimeout, 10*time.Second),
		BodyLimit:         r.Int(EnvBodyLimitMB, 64) << 20,
		MaxConnsPerClient: r.Int(EnvMaxConns, 128),
		Backends:          map[string]string{},
		HashParams:        authtoken.DefaultParams,
		PasswordOut:       os.Stderr,
		PasswordOutFile:   r.String(EnvPasswordOut, ""),
		getenv:            getenv,
	}
	// A host profile has a Redis prefix of its own ("svc-NAME:") unless REDIS_PREFIX says otherwise.
	name, err := profile.Name(getenv)
	if err != nil {
		r.Fail("%v", err)
	}
	cfg.RedisPrefix = r.String(EnvRedisPrefix, profile.RedisPrefix(name))
	if err == nil {
		path, err := configfile.DefaultPath(getenv)
		if err != nil {
			r.Fail("%v", err)
		}
		cfg.ConfigPath = path
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		r.Fail("%s=%q: want host:port", EnvAddr, cfg.Addr)
	}
	if cfg.PasswordOutFile != "" && !filepath.IsAbs(cfg.PasswordOutFile) {
		r.Fail("%s=%q: want an absolute path", EnvPasswordOut, cfg.PasswordOutFile)
	}
	if cfg.FirstPassword != "" && len(cfg.FirstPassword) < 8 {
		r.Fail("%s must be at least 8 characters", EnvPassword)
	}
	if cfg.BodyLimit <= 0 {
		r.Fail("%s must be positive", EnvBodyLimitMB)
	}
	if cfg.MaxConnsPerClient < 0 {
		r.Fail("%s must be 0 (no cap) or positive", EnvMaxConns)
	}
	if cfg.Hosts, err = peer.ParseHosts(r.String(EnvHosts, "")); err != nil {
		r.Fail("%s: %v", EnvHosts, err)
	}
	if cfg.TrustedProxies, err = peer.ParseProxies(r.String(EnvTrustedProxies, "")); err != nil {
		r.Fail("%s: %v (want IP addresses or CIDR networks, comma-separated)", EnvTrustedProxies, err)
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

// hosts is every host name the gateway answers to from the environment:
// the loopback names, the listen address's host when it names one, and
// SVC_HOSTS.
func (c Config) hosts() []string {
	hs := append([]string{}, peer.DefaultHosts...)
	if h, _, err := net.SplitHostPort(c.Addr); err == nil && h != "" && h != "0.0.0.0" && h != "::" {
		hs = append(hs, h)
	}
	return append(hs, c.Hosts...)
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
