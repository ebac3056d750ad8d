package svchttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svcenv"
)

// DefaultHealthTimeout bounds each dependency check of the health route.
const DefaultHealthTimeout = 2 * time.Second

// Check is one dependency the health route pings ("redis", "postgres").
type Check struct {
	Name string
	Ping func(ctx context.Context) error
}

// HealthPath is the health route of service: /api/health/<service>.
func HealthPath(service string) string { return "/api/health/" + service }

// healthBody is the health answer. When a check fails it is also an error
// envelope: "error" and "message" are set and the status is 503.
type healthBody struct {
	Error   string            `json:"error,omitempty"`
	Message string            `json:"message,omitempty"`
	Service string            `json:"service"`
	Status  string            `json:"status"`
	Checks  map[string]string `json:"checks"`
}

// health pings every check at once, each within timeout.
func health(service string, checks []Check, timeout time.Duration, log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx, cancel := context.WithTimeout(c.UserContext(), timeout)
		defer cancel()
		errs := make([]error, len(checks))
		var wg sync.WaitGroup
		for i, check := range checks {
			wg.Go(func() { errs[i] = check.Ping(ctx) })
		}
		wg.Wait()

		body := healthBody{Service: service, Status: "ok", Checks: make(map[string]string, len(checks))}
		var failed []string
		for i, check := range checks {
			if errs[i] == nil {
				body.Checks[check.Name] = "ok"
				continue
			}
			log.WarnContext(ctx, "health check failed", "check", check.Name, "err", errs[i])
			body.Checks[check.Name] = checkMessage(errs[i], timeout)
			failed = append(failed, check.Name)
		}
		if len(failed) == 0 {
			return c.JSON(body)
		}
		body.Status = "degraded"
		body.Error = protocol.CodeUnavailable
		body.Message = strings.Join(failed, ", ") + " not answering"
		return c.Status(fiber.StatusServiceUnavailable).JSON(body)
	}
}

func checkMessage(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", timeout)
	}
	return err.Error()
}

// Healthcheck asks the service running at addr (its listen address) for its
// health, with the internal credential from common, as the container
// healthcheck does: a service binary's -healthcheck flag runs it.
func Healthcheck(ctx context.Context, common svcenv.Common, addr, service string) error {
	secret, err := common.Prepare()
	if err != nil {
		return err
	}
	target, err := svcenv.LocalURL(addr, HealthPath(service))
	if err != nil {
		return err
	}
	return svcenv.Healthcheck(ctx, target, secret)
}
