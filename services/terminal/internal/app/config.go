// Package app wires terminal together: LoadConfig reads the environment
// once, and Run connects to Redis, announces the host in the terminal host
// registry and serves the terminal API (libs/svchttp plus internal/api)
// until its context ends. It is the only place that knows how the parts
// fit.
package app

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/libs/termhosts"
)

// Service is terminal's name: its health route and its logs.
const Service = "terminal"

// Variables read by LoadConfig besides svcenv's.
const (
	EnvAddr             = "TERMINAL_ADDR"
	EnvShell            = "TERMINAL_SHELL"
	EnvScrollbackKB     = "TERMINAL_SCROLLBACK_KB"
	EnvIdleTimeout      = "TERMINAL_IDLE_TIMEOUT"
	EnvHeartbeat        = "TERMINAL_HEARTBEAT"
	EnvWriteTimeout     = "TERMINAL_WRITE_TIMEOUT"
	EnvHostID           = "TERMINAL_HOST_ID"
	EnvAdvertiseURL     = "TERMINAL_ADVERTISE_URL"
	EnvHostTTL          = "TERMINAL_HOST_TTL"
	EnvExecTimeout      = "TERMINAL_EXEC_TIMEOUT"
	EnvExecMaxTimeout   = "TERMINAL_EXEC_MAX_TIMEOUT"
	EnvExecOutputKB     = "TERMINAL_EXEC_OUTPUT_KB"
	EnvFlowHigh         = "TERMINAL_FLOW_HIGH"
	EnvFlowLow          = "TERMINAL_FLOW_LOW"
	DefaultAddr         = "127.0.0.1:8772"
	DefaultScrollbackKB = 4096
	DefaultIdleTimeout  = 24 * time.Hour
	DefaultHeartbeat    = 5 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	DefaultExecTimeout  = 60 * time.Second
	DefaultExecMax      = 600 * time.Second
	DefaultExecOutputKB = 1024
	DefaultFlowHighKB   = 2048
	DefaultFlowLowKB    = 512
	// KillGrace is how long a hung-up terminal session has before SIGKILL.
	KillGrace = 2 * time.Second
)

// Bounds of the sizes, in KiB.
const (
	minScrollbackKB = 16
	maxScrollbackKB = 256 << 10
	minExecOutputKB = 1
	maxExecOutputKB = 64 << 10
	minFlowHighKB   = 16
	maxFlowHighKB   = 256 << 10
)

// Config is terminal's configuration.
type Config struct {
	svcenv.Common
	// Addr is the listen address (host:port).
	Addr string
	// Listener, when set, is served instead of listening on Addr: tests pass
	// one bound to 127.0.0.1:0 to learn the address. Run closes it.
	Listener net.Listener

	// Shell is the shell terminals and /api/exec run; ShellArgs are given
	// to it in terminals (none by default; tests pass --norc).
	Shell     string
	ShellArgs []string
	// Home is where a session with no working directory starts, and the
	// connected frame's home.
	Home string
	// ShellEnv, when set, replaces the service's environment as the base
	// of the shells' (filtered by libs/childenv either way).
	ShellEnv []string

	Scrollback   int // bytes per terminal
	IdleTimeout  time.Duration
	Heartbeat    time.Duration
	WriteTimeout time.Duration

	// HostID and AdvertiseURL identify this host in the registry; empty
	// means derived from the bound address at start.
	HostID       string
	AdvertiseURL string
	HostTTL      time.Duration

	ExecTimeout    time.Duration
	ExecMaxTimeout time.Duration
	ExecOutput     int // bytes per stream

	// FlowHigh and FlowLow are the flow-control watermarks, in bytes.
	FlowHigh, FlowLow int

	// started, when set (by this package's tests), is given the running
	// parts before Run serves.
	started func(parts)
}

// LoadConfig reads the configuration through getenv, reporting every
// problem at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	r := envconf.New(getenv)
	cfg := Config{
		Common:         svcenv.LoadCommon(r),
		Addr:           r.String(EnvAddr, DefaultAddr),
		Home:           home(getenv),
		Scrollback:     r.Int(EnvScrollbackKB, DefaultScrollbackKB) << 10,
		IdleTimeout:    r.Duration(EnvIdleTimeout, DefaultIdleTimeout),
		Heartbeat:      r.Duration(EnvHeartbeat, DefaultHeartbeat),
		WriteTimeout:   r.Duration(EnvWriteTimeout, DefaultWriteTimeout),
		HostID:         r.String(EnvHostID, ""),
		AdvertiseURL:   r.String(EnvAdvertiseURL, ""),
		HostTTL:        r.Duration(EnvHostTTL, termhosts.HostTTL),
		ExecTimeout:    r.Duration(EnvExecTimeout, DefaultExecTimeout),
		ExecMaxTimeout: r.Duration(EnvExecMaxTimeout, DefaultExecMax),
		ExecOutput:     r.Int(EnvExecOutputKB, DefaultExecOutputKB) << 10,
		FlowHigh:       r.Int(EnvFlowHigh, DefaultFlowHighKB) << 10,
		FlowLow:        r.Int(EnvFlowLow, DefaultFlowLowKB) << 10,
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		r.Fail("%s=%q: want host:port", EnvAddr, cfg.Addr)
	}
	shell, err := findShell(getenv)
	if err != nil {
		r.Fail("%v", err)
	}
	cfg.Shell = shell
	if kb := cfg.Scrollback >> 10; kb < minScrollbackKB || kb > maxScrollbackKB {
		r.Fail("%s=%d: want %d to %d", EnvScrollbackKB, kb, minScrollbackKB, maxScrollbackKB)
	}
	if kb := cfg.ExecOutput >> 10; kb < minExecOutputKB || kb > maxExecOutputKB {
		r.Fail("%s=%d: want %d to %d", EnvExecOutputKB, kb, minExecOutputKB, maxExecOutputKB)
	}
	if kb := cfg.FlowHigh >> 10; kb < minFlowHighKB || kb > maxFlowHighKB {
		r.Fail("%s=%d: want %d to %d (KiB)", EnvFlowHigh, kb, minFlowHighKB, maxFlowHighKB)
	}
	if low := cfg.FlowLow >> 10; low < 1 || cfg.FlowLow >= cfg.FlowHigh {
		r.Fail("%s=%d: want at least 1 and less than %s (%d KiB)", EnvFlowLow, low, EnvFlowHigh, cfg.FlowHigh>>10)
	}
	if cfg.Heartbeat < 100*time.Millisecond || cfg.Heartbeat > time.Minute {
		r.Fail("%s=%s: want 100ms to 1m", EnvHeartbeat, cfg.Heartbeat)
	}
	if cfg.WriteTimeout < 100*time.Millisecond {
		r.Fail("%s=%s: want at least 100ms", EnvWriteTimeout, cfg.WriteTimeout)
	}
	if cfg.HostTTL < time.Second {
		r.Fail("%s=%s: want at least 1s", EnvHostTTL, cfg.HostTTL)
	}
	if cfg.ExecTimeout <= 0 || cfg.ExecMaxTimeout < cfg.ExecTimeout {
		r.Fail("%s=%s, %s=%s: want 0 < timeout <= max timeout", EnvExecTimeout, cfg.ExecTimeout, EnvExecMaxTimeout, cfg.ExecMaxTimeout)
	}
	if cfg.HostID != "" && strings.ContainsFunc(cfg.HostID, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		r.Fail("%s=%q: no spaces or control characters", EnvHostID, cfg.HostID)
	}
	if cfg.AdvertiseURL != "" {
		if err := checkAdvertiseURL(cfg.AdvertiseURL); err != nil {
			r.Fail("%s=%q: %v", EnvAdvertiseURL, cfg.AdvertiseURL, err)
		}
	}
	return cfg, r.Err()
}

func home(getenv func(string) string) string {
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return h
	}
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/"
}

// findShell resolves the shell: TERMINAL_SHELL, else $SHELL, else bash,
// else sh.
func findShell(getenv func(string) string) (string, error) {
	if s := strings.TrimSpace(getenv(EnvShell)); s != "" {
		p, err := exec.LookPath(s)
		if err != nil {
			return "", fmt.Errorf("%s=%q: not an executable: %w", EnvShell, s, err)
		}
		return p, nil
	}
	for _, s := range []string{getenv("SHELL"), "bash", "sh", "/bin/sh"} {
		if s == "" {
			continue
		}
		if p, err := exec.LookPath(s); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no shell found: set %s, or SHELL, or install bash or sh", EnvShell)
}

// checkAdvertiseURL accepts http://host:port, which is how the gateway
// dials a host.
func checkAdvertiseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.Port() == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return errors.New("want http://host:port")
	}
	return nil
}
