package app

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/deploy/helpers"
	"github.com/svc-code/svc-code/libs/confignotice"
	"github.com/svc-code/svc-code/libs/pgmigrate"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/shadow/internal/files"
	"github.com/svc-code/svc-code/services/shadow/internal/helpersapi"
	"github.com/svc-code/svc-code/services/shadow/internal/roots"
)

// migrationFiles holds shadow's schema migrations, applied at every start.
//
//go:embed migrations
var migrationFiles embed.FS

// Run serves shadow until ctx is cancelled, then shuts down within
// cfg.ShutdownTimeout. It starts only if Redis and PostgreSQL answer; if they go away
// later, the health route reports it.
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

	api := svchttp.New(svchttp.Config{
		Service:   Service,
		Secret:    secret,
		BodyLimit: cfg.BodyLimit,
		Checks: []svchttp.Check{
			{Name: "redis", Ping: redisx.Pinger(rdb)},
			{Name: "postgres", Ping: db.Ping},
		},
		Log: log,
	})
	home := cfg.Home
	if home == "" {
		if home, err = os.UserHomeDir(); err != nil {
			return fmt.Errorf("home directory for the helpers: %w", err)
		}
	}
	helpersapi.Register(api, helpersapi.Deps{Targets: helpers.DefaultTargets(home, os.Getenv), Log: log})
	resolver := allowedRoots(cfg, home, db, log)
	files.Register(api, files.Deps{Roots: resolver, Log: log})
	defer watchConfig(ctx, rdb, redisx.Keys{Prefix: cfg.RedisPrefix}, resolver, log)()
	defer startJournal(ctx, cfg, home, api, rdb, db, secret, log)() // stops the turn consumer before Redis and PostgreSQL close
	ln, err := svchttp.Listen(ctx, cfg.Listener, cfg.Addr)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "listening", "addr", ln.Addr().String(), "data_home", cfg.DataHome)
	return svchttp.Serve(ctx, api, ln, cfg.ShutdownTimeout, log)
}

// allowedRoots is the resolver of every route that takes a user's path:
// the roots, less svc-code's secrets, with ~ standing for home.
func allowedRoots(cfg Config, home string, db *pgxpool.Pool, log *slog.Logger) *roots.Resolver {
	return roots.Default(cfg.DataHome, home, db, cfg.ExtraDirs).OnError(roots.LogTo(log)).Private(cfg.Private).ExpandHome(home)
}

// watchConfig drops the cached roots on each change notice chat publishes
// on Redis (libs/confignotice), so that a change of extra_dirs applies to
// the next request; the cache's 2 s life stays as the fallback. It returns
// a function that stops watching and waits for it.
func watchConfig(ctx context.Context, rdb *redis.Client, keys redisx.Keys, r *roots.Resolver, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		confignotice.Watch(ctx, rdb, keys, func(ctx context.Context) {
			r.Invalidate()
			log.InfoContext(ctx, "config change notice: allowed roots re-read")
		})
	}()
	return func() {
		cancel()
		<-done
	}
}
