package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/svc-code/svc-code/libs/configfile"
	"github.com/svc-code/svc-code/libs/datahome"
	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/termhosts"
	"github.com/svc-code/svc-code/services/gateway/internal/connlimit"
	"github.com/svc-code/svc-code/services/gateway/internal/credential"
	"github.com/svc-code/svc-code/services/gateway/internal/proxy"
	"github.com/svc-code/svc-code/services/gateway/internal/server"
	"github.com/svc-code/svc-code/services/gateway/internal/throttle"
)

// Run serves the gateway until ctx is cancelled, then shuts down within
// cfg.ShutdownTimeout: it stops accepting, closes the WebSocket tunnels
// with 1001, and closes Redis last.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	home, err := datahome.Ensure(cfg.getenv)
	if err != nil {
		return err
	}
	secret, err := internalauth.Load(envconf.New(cfg.getenv), home)
	if err != nil {
		return err
	}
	rdb, err := redisx.Connect(ctx, cfg.RedisURL)
	if err != nil {
		return fmt.Errorf("%w (the gateway mirrors credential epochs in Redis; start Redis or set REDIS_URL)", err)
	}
	defer func() { _ = rdb.Close() }()

	store, generated, err := credential.Open(ctx, credential.Options{
		File:      configfile.New(cfg.ConfigPath),
		Redis:     rdb,
		Keys:      redisx.Keys{Prefix: cfg.RedisPrefix},
		Log:       log,
		Params:    cfg.HashParams,
		Poll:      cfg.Poll,
		CookieTTL: cfg.CookieTTL,
	}, cfg.FirstPassword)
	if err != nil {
		return err
	}
	if generated != "" {
		if err := showFirstPassword(cfg, generated); err != nil {
			return err
		}
	}

	ln := cfg.Listener
	if ln == nil {
		if ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Addr); err != nil {
			return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
		}
	}
	ln = connlimit.Wrap(ln, cfg.MaxConnsPerClient)
	px := proxy.New(secret, log)
	limiter := cfg.Limiter
	if limiter == nil {
		limiter = throttle.New()
	}
	srv, err := server.New(server.Deps{
		Store:     store,
		Proxy:     px,
		Backends:  cfg.Backends,
		Secret:    secret,
		Log:       log,
		Version:   cfg.version(),
		Instance:  instanceID(),
		Started:   time.Now(),
		BodyLimit: cfg.BodyLimit,
		Hosts:     cfg.hosts(),
		Proxies:   cfg.TrustedProxies,
		Limiter:   limiter,
		Terminals: termhosts.New(rdb, redisx.Keys{Prefix: cfg.RedisPrefix}, secret, log),
		PasswordChanged: func() {
			if err := removeFirstPassword(cfg); err != nil {
				log.WarnContext(ctx, "first_password_file_not_removed", "err", err)
			}
		},
	})
	if err != nil {
		return err
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		store.Run(gctx)
		return nil
	})
	g.Go(func() error {
		log.InfoContext(gctx, "gateway_listening", "addr", ln.Addr().String(), "config", cfg.ConfigPath)
		if err := srv.App().Listener(ln); err != nil && !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("serve: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		px.Tunnels().Shutdown(cfg.ShutdownTimeout / 2)
		if err := srv.App().ShutdownWithTimeout(cfg.ShutdownTimeout / 2); err != nil {
			log.WarnContext(gctx, "shutdown_incomplete", "err", err)
		}
		return nil
	})
	err = g.Wait()
	log.InfoContext(ctx, "gateway_stopped")
	return err
}

func instanceID() string {
	return strconv.FormatInt(time.Now().UnixNano()%(1<<40), 36)
}
