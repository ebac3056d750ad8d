// Command chat serves svc-code's chat backend: sessions, the /chat protocol
// and the agent processes behind them. It listens on CHAT_ADDR and answers
// only requests that carry the internal credential, i.e. that come through
// the gateway. With -healthcheck it instead asks the running chat for its
// health and exits 0 if healthy, 1 if not (for container healthchecks).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/svc-code/svc-code/libs/logging"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/chat/internal/app"
)

func main() {
	healthcheck := flag.Bool("healthcheck", false, "check the running service's health and exit 0 if it answers 200")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *healthcheck); err != nil {
		fmt.Fprintln(os.Stderr, app.Service+":", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, healthcheck bool) error {
	cfg, err := app.LoadConfig(os.Getenv)
	if err != nil {
		return err
	}
	if healthcheck {
		return svchttp.Healthcheck(ctx, cfg.Common, cfg.Addr, app.Service)
	}
	log, err := logging.New(os.Stderr, app.Service, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return err
	}
	return app.Run(ctx, cfg, log)
}
