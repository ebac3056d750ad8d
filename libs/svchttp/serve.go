package svchttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Serve answers on ln until ctx ends, then stops accepting and waits up to
// timeout for the requests in flight. It returns nil after a clean
// shutdown, and an error if serving stops on its own.
func Serve(ctx context.Context, app *fiber.App, ln net.Listener, timeout time.Duration, log *slog.Logger) error {
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
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
	err := app.ShutdownWithContext(sctx)
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

// Listen returns ln when a caller (a test on 127.0.0.1:0) handed one in,
// else a new TCP listener on addr.
func Listen(ctx context.Context, ln net.Listener, addr string) (net.Listener, error) {
	if ln != nil {
		return ln, nil
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}
