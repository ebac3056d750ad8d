package app

import (
	"context"
	"log/slog"

	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/svchttp"
)

// Run serves shadow until ctx is cancelled, then shuts down within
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

	api := svchttp.New(svchttp.Config{
		Service:   Service,
		Secret:    secret,
		BodyLimit: cfg.BodyLimit,
		Checks: []svchttp.Check{
			{Name: "redis", Ping: redisx.Pinger(rdb)},
		},
		Log: log,
	})
	ln, err := svchttp.Listen(ctx, cfg.Listener, cfg.Addr)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "listening", "addr", ln.Addr().String(), "data_home", cfg.DataHome)
	return svchttp.Serve(ctx, api, ln, cfg.ShutdownTimeout, log)
}
