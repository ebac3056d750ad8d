package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/services/terminal/internal/httpapi"
)

// Run serves terminal until ctx is cancelled, then shuts down within
// cfg.ShutdownTimeout. It starts only if Redis answers; if Redis goes away
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

	api := httpapi.New(httpapi.Config{
		Secret:    secret,
		BodyLimit: cfg.BodyLimit,
		Checks:    []httpapi.Check{{Name: "redis", Ping: pingRedis(rdb)}},
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

// Healthcheck asks the terminal running at cfg.Addr for its health, with the
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
