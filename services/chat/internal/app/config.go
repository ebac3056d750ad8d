// Package app wires chat together: LoadConfig reads the environment once,
// and Run connects to Redis and PostgreSQL, applies the schema migrations
// and serves the HTTP API (libs/svchttp, with internal/api's session and
// provider routes on internal/store) and the /chat WebSocket
// (internal/chatws on internal/room's session runtime) until its context
// ends. It is the
// only place that knows how the parts fit.
package app

import (
	"net"
	"strings"
	"time"

	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/events"
	"github.com/svc-code/svc-code/services/chat/internal/push"
	"github.com/svc-code/svc-code/services/chat/internal/room"
)

// Service is chat's name: its health route, its logs and the component of
// its migrations.
const Service = "chat"

// Variables read by LoadConfig besides svcenv's.
const (
	EnvAddr     = "CHAT_ADDR"
	DefaultAddr = "127.0.0.1:8771"
	// EnvOwnerTTL is how long a session's ownership claim lives without
	// renewal (renewed every third of it): how soon another instance takes
	// over the sessions of a dead one.
	EnvOwnerTTL     = "CHAT_OWNER_TTL"
	DefaultOwnerTTL = 6 * time.Second
	// EnvHeartbeat is the turn heartbeat: after this long without agent
	// output during a turn, the sockets get compact_progress (heartbeat:
	// true), then again every interval.
	EnvHeartbeat = "CHAT_HEARTBEAT"
	// EnvSyncAgentLog, when on, makes the log's agent messages wait for
	// their commit to reach the disk before their frames leave, as users'
	// prompts always do (off by default: see store.AppendMessages).
	EnvSyncAgentLog = "CHAT_SYNC_AGENT_LOG"
	// EnvEventsCheck is how often the events sockets' state is compared
	// with a fresh snapshot (a lost wake-up is repaired by then).
	EnvEventsCheck = "CHAT_EVENTS_CHECK"
	// EnvEventsHeartbeat is how long an events socket may stay silent
	// before it gets a heartbeat frame.
	EnvEventsHeartbeat = "CHAT_EVENTS_HEARTBEAT"
	// EnvPushSubject is the VAPID subject of Web Push (a mailto: or
	// https: URL the push services may contact).
	EnvPushSubject = "CHAT_PUSH_SUBJECT"
	// EnvPushRetry is the first wait before a push is tried again (429,
	// 5xx, network error); it doubles each try, 4 tries in all.
	EnvPushRetry = "CHAT_PUSH_RETRY"
	// EnvPushTestWait is how long POST /api/push/test waits for the test
	// push's outcome before it answers 202 (still being tried).
	EnvPushTestWait = "CHAT_PUSH_TEST_WAIT"
)

// Config is chat's configuration.
type Config struct {
	svcenv.Common
	// Addr is the listen address (host:port).
	Addr string
	// DatabaseURL is DATABASE_URL (or DATABASE_URL_FILE); when empty, Run
	// reads it from <data home>/postgres.env.
	DatabaseURL string
	// Listener, when set, is served instead of listening on Addr: tests pass
	// one bound to 127.0.0.1:0 to learn the address. Run closes it.
	Listener net.Listener
	// OwnerTTL is CHAT_OWNER_TTL.
	OwnerTTL time.Duration
	// Heartbeat is CHAT_HEARTBEAT (default room.DefaultHeartbeat).
	Heartbeat time.Duration
	// SyncAgentLog is CHAT_SYNC_AGENT_LOG.
	SyncAgentLog bool
	// EventsCheck is CHAT_EVENTS_CHECK (default events.DefaultCheckEvery).
	EventsCheck time.Duration
	// EventsHeartbeat is CHAT_EVENTS_HEARTBEAT (default
	// events.DefaultHeartbeat).
	EventsHeartbeat time.Duration
	// Files is where the task, catalog and upload routes read and write.
	Files FilesConfig
	// PushSubject is CHAT_PUSH_SUBJECT (default push.DefaultSubject).
	PushSubject string
	// PushRetry is CHAT_PUSH_RETRY (default push.DefaultRetryBase).
	PushRetry time.Duration
	// PushTestWait is CHAT_PUSH_TEST_WAIT (default push.DefaultTestWait).
	PushTestWait time.Duration

	// lookPath finds the providers' default programs; nil means
	// exec.LookPath. Tests set it to control what is "on PATH".
	lookPath func(file string) (string, error)
	// agentEnv is added to the agent processes' environment (tests set
	// FAKECLAUDE_* variables).
	agentEnv []string
	// newProvider, when set, makes the sessions' agent providers (tests).
	newProvider func(agent.Options) agent.Provider
	// afterRecover, when set, is called after every sweep for the turns
	// of dead instances (tests).
	afterRecover func()
}

// LoadConfig reads the configuration through getenv, reporting every
// problem at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	r := envconf.New(getenv)
	cfg := Config{
		Common:          svcenv.LoadCommon(r),
		Addr:            r.String(EnvAddr, DefaultAddr),
		DatabaseURL:     svcenv.LoadPostgresURL(r, svcenv.EnvDatabaseURL),
		OwnerTTL:        r.Duration(EnvOwnerTTL, DefaultOwnerTTL),
		Heartbeat:       r.Duration(EnvHeartbeat, room.DefaultHeartbeat),
		SyncAgentLog:    r.Bool(EnvSyncAgentLog, false),
		EventsCheck:     r.Duration(EnvEventsCheck, events.DefaultCheckEvery),
		EventsHeartbeat: r.Duration(EnvEventsHeartbeat, events.DefaultHeartbeat),
		Files:           loadFiles(r),
		PushSubject:     r.String(EnvPushSubject, push.DefaultSubject),
		PushRetry:       r.Duration(EnvPushRetry, push.DefaultRetryBase),
		PushTestWait:    r.Duration(EnvPushTestWait, push.DefaultTestWait),
	}
	if !strings.HasPrefix(cfg.PushSubject, "mailto:") && !strings.HasPrefix(cfg.PushSubject, "https://") {
		r.Fail("%s=%q: want a mailto: or https:// URL", EnvPushSubject, cfg.PushSubject)
	}
	if cfg.PushRetry < 10*time.Millisecond || cfg.PushRetry > 30*time.Second {
		r.Fail("%s=%s: want 10ms to 30s", EnvPushRetry, cfg.PushRetry)
	}
	if cfg.PushTestWait < 100*time.Millisecond || cfg.PushTestWait > time.Minute {
		r.Fail("%s=%s: want 100ms to 1m", EnvPushTestWait, cfg.PushTestWait)
	}
	if cfg.Heartbeat < 50*time.Millisecond {
		r.Fail("%s=%s: want at least 50ms", EnvHeartbeat, cfg.Heartbeat)
	}
	if cfg.EventsHeartbeat < 100*time.Millisecond {
		r.Fail("%s=%s: want at least 100ms", EnvEventsHeartbeat, cfg.EventsHeartbeat)
	}
	if cfg.EventsCheck < 100*time.Millisecond {
		r.Fail("%s=%s: want at least 100ms", EnvEventsCheck, cfg.EventsCheck)
	}
	if cfg.OwnerTTL < 300*time.Millisecond {
		r.Fail("%s=%s: want at least 300ms", EnvOwnerTTL, cfg.OwnerTTL)
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		r.Fail("%s=%q: want host:port", EnvAddr, cfg.Addr)
	}
	return cfg, r.Err()
}
