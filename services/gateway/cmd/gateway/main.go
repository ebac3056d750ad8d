// Command gateway is svc-code's front door: it serves the login page and the
// static UI, enforces every authentication and Origin rule, and proxies
// HTTP and WebSocket traffic to the chat, terminal, shadow and analytics
// services.
//
//	gateway                 serve (configured by environment variables)
//	gateway passwd          set a new password (read from stdin, or generated)
//	gateway -healthcheck    exit 0 when the local gateway answers /health
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/svc-code/svc-code/libs/logging"
	"github.com/svc-code/svc-code/services/gateway/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	healthcheck := fs.Bool("healthcheck", false, "check that the local gateway answers /health, then exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := app.LoadConfig(os.Getenv)
	if err != nil {
		return err
	}
	switch {
	case *healthcheck:
		return app.Healthcheck(ctx, cfg)
	case fs.Arg(0) == "passwd":
		return app.Passwd(ctx, cfg, os.Stdin, os.Stdout)
	case fs.NArg() > 0:
		return fmt.Errorf("unknown command %q (commands: passwd; flags: -healthcheck)", fs.Arg(0))
	}
	log, err := logging.New(os.Stderr, "gateway", cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return err
	}
	return app.Run(ctx, cfg, log)
}
