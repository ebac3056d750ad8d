package app

import (
	"context"
	"crypto/rand"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/confignotice"
	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/pgmigrate"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/chat/internal/api"
	"github.com/svc-code/svc-code/services/chat/internal/catalog"
	"github.com/svc-code/svc-code/services/chat/internal/chatws"
	"github.com/svc-code/svc-code/services/chat/internal/clisessions"
	"github.com/svc-code/svc-code/services/chat/internal/events"
	"github.com/svc-code/svc-code/services/chat/internal/push"
	"github.com/svc-code/svc-code/services/chat/internal/room"
	"github.com/svc-code/svc-code/services/chat/internal/store"
	"github.com/svc-code/svc-code/services/chat/internal/tasks"
	"github.com/svc-code/svc-code/services/chat/internal/uploads"
	"github.com/svc-code/svc-code/services/chat/internal/workspace"
)

// migrationFiles holds chat's schema migrations, applied at every start.
//
//go:embed migrations
var migrationFiles embed.FS

// Run serves chat until ctx is cancelled, then shuts down within
// cfg.ShutdownTimeout. It starts only if Redis and PostgreSQL answer; if
// they go away later, the health route reports it.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if cfg.Listener != nil {
		defer cfg.Listener.Close() // also closed by the shutdown; a second Close is harmless
	}
	secret, err := cfg.Prepare()
	if err != nil {
		return err
	}
	rdb, err := redisx.Connect(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	db, err := pgmigrate.Connect(ctx, cfg.DataHome, svcenv.EnvDatabaseURL, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	migrations, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	if err := pgmigrate.Apply(ctx, db, Service, migrations); err != nil {
		return err
	}

	app := svchttp.New(svchttp.Config{
		Service:   Service,
		Secret:    secret,
		BodyLimit: cfg.BodyLimit,
		Checks: []svchttp.Check{
			{Name: "redis", Ping: redisx.Pinger(rdb)},
			{Name: "postgres", Ping: db.Ping},
		},
		Log: log,
	})
	// PostgreSQL unreachable: 503 storage_unavailable, not 500 internal.
	app.Use(storageUnavailable(log))
	// The log's appends have connections of their own (store.AppendPool).
	acfg := db.Config()
	acfg.MinConns, acfg.MaxConns = 0, room.AppendConns
	appendDB, err := pgxpool.NewWithConfig(ctx, acfg)
	if err != nil {
		return fmt.Errorf("open the log's postgres pool: %w", err)
	}
	defer appendDB.Close()
	st := store.New(db, store.AppendPool(appendDB), store.SyncAgentMessages(cfg.SyncAgentLog))
	pusher, err := newPusher(cfg, secret, st, db, rdb, log)
	if err != nil {
		return err
	}
	rooms := room.NewManager(room.Config{
		Push:  pusher,
		Store: st, LookPath: cfg.lookPath, Env: cfg.agentEnv, Log: log,
		NewProvider: cfg.newProvider, Redis: rdb, TurnStream: redisx.Keys{Prefix: cfg.RedisPrefix}.Key("turns"),
		Prefix: cfg.RedisPrefix, OwnerTTL: cfg.OwnerTTL, Heartbeat: cfg.Heartbeat, Secret: secret,
		AfterRecover: cfg.afterRecover,
	})
	// Turns a dead predecessor left running are closed before the first
	// client is served, so that its connected tells the truth.
	rooms.RecoverTurns(ctx)
	pusher.SetRuntime(rooms)
	push.Register(app, pusher)
	api.Register(app, api.Deps{
		Store:    st,
		Runtime:  rooms,
		LookPath: cfg.lookPath,
		Log:      log,
		CLI: &clisessions.Finder{Roots: clisessions.Roots{
			Claude: filepath.Join(cfg.Files.Catalog.Claude, "projects"),
			Codex:  filepath.Join(cfg.Files.Catalog.Codex, "sessions"),
		}},
		CLIReader: &clisessions.Reader{},
		Ctx:       ctx,
	})
	workspace.Register(app, workspace.Deps{DB: db, Log: log, Changed: rooms.SessionChanged, ConfigChanged: func(ctx context.Context) error {
		return confignotice.Publish(ctx, rdb, redisx.Keys{Prefix: cfg.RedisPrefix})
	}})
	hub := events.NewHub(events.Config{Store: st, Live: rooms, Redis: rdb, CheckEvery: cfg.EventsCheck, Heartbeat: cfg.EventsHeartbeat, Log: log})
	events.Register(app, hub)
	tasks.Register(app, tasks.Deps{
		Finder: &tasks.Finder{Roots: cfg.Files.TaskDirs}, Sessions: tasks.PGSessions{DB: db},
		Codex: &tasks.CodexStore{Redis: rdb, Prefix: cfg.RedisPrefix}, Log: log,
	})
	catalog.Register(app, catalog.Deps{Catalog: &catalog.Catalog{Dirs: cfg.Files.Catalog}, Log: log})
	uploads.Register(app, uploads.Deps{DataHome: cfg.DataHome, Sessions: st, MaxImageBytes: cfg.Files.MaxImageBytes, MaxFileBytes: cfg.Files.MaxFileBytes, Log: log})
	sockets := chatws.Register(app, chatws.Deps{Store: st, Rooms: rooms, Log: log, Visibility: pusher})
	// Hijacked WebSockets are not waited for by the HTTP shutdown: close
	// them, and end the agent processes, as soon as the context ends.
	liveCtx, cancelLive := context.WithCancel(ctx)
	hubDone := make(chan struct{})
	go func() {
		defer close(hubDone)
		hub.Run(liveCtx) // closes its sockets when liveCtx ends
	}()
	go pusher.Run(liveCtx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-liveCtx.Done()
		sockets.CloseAll()
		rooms.Close()
		<-hubDone
		<-pusher.Done()
	}()
	defer func() {
		<-stopped
		sockets.Wait()
	}()
	defer cancelLive() // runs first: also when Run fails before ctx ends
	ln, err := svchttp.Listen(ctx, cfg.Listener, cfg.Addr)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "listening", "addr", ln.Addr().String(), "data_home", cfg.DataHome)
	return svchttp.Serve(ctx, app, ln, cfg.ShutdownTimeout, log)
}

// newPusher makes the Web Push service: its VAPID keys (created in the data
// home on first start), its subscriptions, its answer tokens' key.
func newPusher(cfg Config, secret internalauth.Secret, st *store.Store, db *pgxpool.Pool, rdb *redis.Client, log *slog.Logger) (*push.Service, error) {
	keys, err := push.LoadKeys(cfg.DataHome)
	if err != nil {
		return nil, err
	}
	return push.New(push.Config{
		Keys: keys, Subject: cfg.PushSubject, Subs: push.Subs{DB: db}, Redis: rdb, Prefix: cfg.RedisPrefix,
		Instance: rand.Text()[:12], TokenKey: secret.Derive(push.TokenKeyPurpose), RetryBase: cfg.PushRetry, TestWait: cfg.PushTestWait,
		Title: func(ctx context.Context, id string) string {
			s, err := st.Get(ctx, id)
			if err != nil {
				return ""
			}
			return s.Title
		},
		TurnThreshold: func(ctx context.Context) time.Duration {
			n := int64(60)
			if _, err := st.Setting(ctx, workspace.ConfigPrefix+workspace.KeyPushTurnSeconds, &n); err != nil {
				log.ErrorContext(ctx, "read push_turn_seconds", "err", err)
			}
			return time.Duration(n) * time.Second
		},
		Log: log,
	}), nil
}
