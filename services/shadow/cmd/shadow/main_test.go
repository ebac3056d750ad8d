package main

import (
	"context"
	"log/slog"
	"net"
	"testing"

	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/libs/svchttp/svchttptest"
	"github.com/svc-code/svc-code/services/shadow/internal/app"
)

func TestMain(m *testing.M) { svchttptest.VerifyTestMain(m) }

// service is shadow as the backend contract sees it.
var service = svchttptest.Service{
	Name:     app.Service,
	AddrVar:  app.EnvAddr,
	Postgres: []svchttptest.Postgres{{Var: svcenv.EnvDatabaseURL, Check: "postgres"}},
	Start: func(ctx context.Context, getenv func(string) string, ln net.Listener, log *slog.Logger) error {
		cfg, err := app.LoadConfig(getenv)
		if err != nil {
			return err
		}
		cfg.Listener = ln
		return app.Run(ctx, cfg, log)
	},
}

// TestContract runs app.Run in-process against the test Redis and
// PostgreSQL, through
// every check a backend must pass.
func TestContract(t *testing.T) { svchttptest.RunContract(t, service) }

// TestBinary builds shadow and runs it as docker does.
func TestBinary(t *testing.T) { svchttptest.RunBinary(t, service) }
