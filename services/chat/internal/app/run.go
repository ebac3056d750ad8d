package app

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/pgmigrate"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/services/chat/internal/httpapi"
)

// migrationFiles holds chat's schema migrations, applied at every start.
//
//go:embed migrations
var migrationFiles embed.FS

// connectTimeout bounds the first contact with PostgreSQL.
const connectTimeout = 5 * time.Second

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
	db, err := connectPostgres(ctx, cfg.DataHome, svcenv.EnvDatabaseURL, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	migrations, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	if err := pgmigrate.Apply(ctx, db, httpapi.Service, migrations); err != nil {
		return err
	}

	api := httpapi.New(httpapi.Config{
		Secret:    secret,
		BodyLimit: cfg.BodyLimit,
		Checks:    []httpapi.Check{{Name: "redis", Ping: pingRedis(rdb)}, {Name: "postgres", Ping: db.Ping}},
		Log:       log,
	})
	ln := cfg.Listener
	if ln == nil {
		if ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Addr); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
	}
	log.InfoContext(ctx, "listening", "addr", ln.Addr().String(), "data_home", cfg.DataHome)
	return serve(ctx, api, ln, cfg.ShutdownTimeout, log)
}

// connectPostgres opens a pool on the URL of variable key (value, else the
// data home's postgres.env) and checks that the server answers. Errors name
// the variable but never repeat the URL, which holds a password.
func connectPostgres(ctx context.Context, dataHome, key, value string) (*pgxpool.Pool, error) {
	dsn, err := svcenv.PostgresURL(dataHome, key, value)
	if err != nil {
		return nil, err
	}
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", key, err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres pool (%s): %w", key, err)
	}
	pctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("reach postgres at %s:%d (%s): %w", pcfg.ConnConfig.Host, pcfg.ConnConfig.Port, key, err)
	}
	return pool, nil
}

func pingRedis(rdb *redis.Client) func(context.Context) error {
	return func(ctx context.Context) error { return rdb.Ping(ctx).Err() }
}

// serve answers on ln until ctx ends, then stops accepting and waits up to
// timeout for the requests in flight.
func serve(ctx context.Context, api *fiber.App, ln net.Listener, timeout time.Duration, log *slog.Logger) error {
	served := make(chan error, 1)
	go func() { served <- api.Listener(ln) }()
	select {
	case err := <-served:
		if err == nil {
			err = errors.New("listener closed")
		}
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.InfoContext(ctx, "shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	err := api.ShutdownWithContext(sctx)
	// A shutdown that comes before fasthttp has registered ln misses it;
	// closing ln here ends Serve in every case.
	_ = ln.Close()
	if serr := <-served; err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

// Healthcheck asks the chat running at cfg.Addr for its health, with the
// internal credential, as the container healthcheck does (-healthcheck).
func Healthcheck(ctx context.Context, cfg Config) error {
	secret, err := cfg.Prepare()
	if err != nil {
		return err
	}
	target, err := svcenv.LocalURL(cfg.Addr, httpapi.HealthPath)
	if err != nil {
		return err
	}
	return svcenv.Healthcheck(ctx, target, secret)
}
