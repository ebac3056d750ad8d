package svchttp

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/svc-code/svc-code/libs/logging"
	"github.com/svc-code/svc-code/libs/svcenv"
)

// Binary is everything a backend's main needs to know about its service.
type Binary[C any] struct {
	Service string
	// Load reads the configuration from the environment.
	Load func(getenv func(string) string) (C, error)
	// Run serves until its context ends.
	Run func(ctx context.Context, cfg C, log *slog.Logger) error
	// Target gives the shared settings and the listen address that
	// -healthcheck asks.
	Target func(cfg C) (common svcenv.Common, addr string)
}

// Main is a backend binary's whole main: flags (-healthcheck), SIGINT and
// SIGTERM as the end of the context, the configuration, the logger, Run.
// It exits 1 with the error on standard error when anything fails.
func (b Binary[C]) Main() {
	healthcheck := flag.Bool("healthcheck", false, "check the running service's health and exit 0 if it answers 200")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	keepSIGHUP()
	if err := b.run(ctx, *healthcheck); err != nil {
		fmt.Fprintln(os.Stderr, b.Service+":", err)
		stop()
		os.Exit(1)
	}
}

// keepSIGHUP has the service outlive a hang-up (as under nohup) without
// ignoring SIGHUP: an ignored signal stays ignored in every program the
// service starts, so a shell of the terminal service started under
// nohup would outlive its terminal's hang-up; a handled one is reset
// for them.
// (Nobody reads the channel: a hang-up changes nothing, and Notify drops
// what does not fit.)
func keepSIGHUP() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
}

func (b Binary[C]) run(ctx context.Context, healthcheck bool) error {
	cfg, err := b.Load(os.Getenv)
	if err != nil {
		return err
	}
	common, addr := b.Target(cfg)
	if healthcheck {
		return Healthcheck(ctx, common, addr, b.Service)
	}
	log, err := logging.New(os.Stderr, b.Service, common.LogFormat, common.LogLevel)
	if err != nil {
		return err
	}
	return b.Run(ctx, cfg, log)
}
