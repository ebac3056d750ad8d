package app

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/confignotice"
	"github.com/svc-code/svc-code/libs/pgmigrate"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/analytics/internal/query"
	"github.com/svc-code/svc-code/services/analytics/internal/schema"
	"github.com/svc-code/svc-code/services/analytics/internal/sqlapi"
	"github.com/svc-code/svc-code/services/analytics/internal/store"
)

// migrationFiles holds analytics' schema migrations, applied at every start.
//
//go:embed migrations
var migrationFiles embed.FS

// Migrations is analytics' schema migrations (the tables of
// internal/schema), for Run and for the tests of the packages that need the
// schema.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the embedded directory exists: a build without it cannot happen
	}
	return sub
}

// Run serves analytics until ctx is cancelled, then shuts down within
// cfg.ShutdownTimeout. It starts only if Redis and PostgreSQL (with both
// roles) answer; if they go away later, the health route reports it.
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
	readonly, err := pgmigrate.Connect(ctx, cfg.DataHome, svcenv.EnvReadonlyDatabaseURL, cfg.ReadonlyDatabaseURL)
	if err != nil {
		return err
	}
	defer readonly.Close()
	if err := pgmigrate.Apply(ctx, db, Service, Migrations()); err != nil {
		return err
	}
	if err := grantReadonly(ctx, db, readonly, log); err != nil {
		return err
	}
	turns := store.New(db)

	api := svchttp.New(svchttp.Config{
		Service:   Service,
		Secret:    secret,
		BodyLimit: cfg.BodyLimit,
		Checks: []svchttp.Check{
			{Name: "redis", Ping: redisx.Pinger(rdb)},
			{Name: "postgres", Ping: db.Ping},
			{Name: "postgres_readonly", Ping: readonly.Ping},
		},
		Log: log,
	})
	query.Register(api, turns)
	// POST /api/shadow-db/sql: as svc_readonly, on the read-only pool; the
	// role is checked now, and SQL answers 503 while it is unsafe.
	timeout := sqlapi.SettingTimeout(db, log)
	sqlapi.New(ctx, sqlapi.Config{
		Pool: readonly, Tables: schema.Tables, Timeout: timeout.Timeout(), Log: log,
		MaxResponseBytes: maxResponseBytes(cfg.SQLMaxResponseMB),
	}).Register(api)
	ln, err := svchttp.Listen(ctx, cfg.Listener, cfg.Addr)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "listening", "addr", ln.Addr().String(), "data_home", cfg.DataHome)
	stopIngest := startIngest(ctx, cfg, rdb, turns, secret, log)
	defer stopIngest()
	stopWatch := watchConfig(ctx, rdb, redisx.Keys{Prefix: cfg.RedisPrefix}, timeout, log)
	defer stopWatch()
	return svchttp.Serve(ctx, api, ln, cfg.ShutdownTimeout, log)
}

// watchConfig re-reads the settings analytics takes from the server
// configuration (shadow_db.sql_timeout_s) on each change notice chat
// publishes on Redis (libs/confignotice), so that a change applies to the
// next query; the 5 s re-read stays as the fallback. It returns a
// function that stops watching and waits for it.
func watchConfig(ctx context.Context, rdb *redis.Client, keys redisx.Keys, timeout *sqlapi.Setting, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		confignotice.Watch(ctx, rdb, keys, func(ctx context.Context) {
			d := timeout.Reload(ctx)
			log.InfoContext(ctx, "config change notice: settings re-read", "sql_timeout", d.String())
		})
	}()
	return func() {
		cancel()
		<-done
	}
}

// maxResponseBytes is sqlapi.Config.MaxResponseBytes for a bound of mb MiB
// (0: none).
func maxResponseBytes(mb int) int64 {
	if mb == 0 {
		return -1
	}
	return int64(mb) << 20
}
