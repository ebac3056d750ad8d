package app

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/svc-code/svc-code/deploy/helpers"
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
	files.Register(api, files.Deps{Roots: roots.Default(cfg.DataHome, home, db, cfg.ExtraDirs).OnError(roots.LogTo(log)), Log: log})
	defer startJournal(ctx, cfg, home, api, rdb, db, secret, log)() // stops the turn consumer before Redis and PostgreSQL close
	ln, err := svchttp.Listen(ctx, cfg.Listener, cfg.Addr)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "listening", "addr", ln.Addr().String(), "data_home", cfg.DataHome)
	return svchttp.Serve(ctx, api, ln, cfg.ShutdownTimeout, log)
}
