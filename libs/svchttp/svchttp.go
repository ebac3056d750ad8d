// Package svchttp is the backend service kit: the HTTP front that chat,
// terminal, shadow and analytics share. New builds a service's fiber app
// with the internal-credential gate in front of everything, panic recovery,
// the JSON error envelope of decisions.md and the health route
// GET /api/health/<service>; Serve runs it until its context ends;
// Healthcheck is what a service binary's -healthcheck flag runs;
// DecodeJSON reads a strict JSON body the same way on every route.
//
// It is the one package of libs allowed to import fiber (a repocheck test
// holds the rule). The gate is a security rule: every backend must refuse a
// request that did not come through the gateway in exactly the same way,
// and four copies of it can drift. Feature routes join each service's app
// in the service itself.
package svchttp

import (
	"errors"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
)

// stackKey is the Locals key under which a recovered panic leaves its stack.
const stackKey = "svchttp.panic_stack"

// Config is what the app needs from a service's wiring.
type Config struct {
	// Service is the name the app answers with ("chat"); it names the
	// health route.
	Service   string
	Secret    internalauth.Secret
	BodyLimit int // bytes
	Checks    []Check
	// HealthTimeout bounds each check; zero means DefaultHealthTimeout.
	HealthTimeout time.Duration
	Log           *slog.Logger
}

// New returns the service's fiber app, ready to serve.
func New(cfg Config) *fiber.App {
	app := fiber.New(fiber.Config{
		AppName:               cfg.Service,
		BodyLimit:             cfg.BodyLimit,
		DisableStartupMessage: true,
		ErrorHandler:          errorHandler(cfg.Log),
	})
	app.Use(requireInternal(cfg.Secret))
	app.Use(recover.New(recover.Config{
		EnableStackTrace:  true,
		StackTraceHandler: func(c *fiber.Ctx, _ any) { c.Locals(stackKey, string(debug.Stack())) },
	}))
	timeout := cfg.HealthTimeout
	if timeout <= 0 {
		timeout = DefaultHealthTimeout
	}
	app.Get(HealthPath(cfg.Service), health(cfg.Service, cfg.Checks, timeout, cfg.Log))
	return app
}

var errNotFromGateway = &protocol.Error{Code: protocol.CodeUnauthorized, Message: "requests must come through the gateway"}

// requireInternal refuses every request that lacks the internal credential,
// so nothing reaches a handler around the gateway's auth rules.
func requireInternal(secret internalauth.Secret) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if !secret.Check(c.Get(protocol.HeaderInternal)) {
			return errNotFromGateway
		}
		return c.Next()
	}
}

// errorHandler answers every error with the JSON envelope. Internal errors
// are logged here, once, and reach the client as "internal" with no detail.
func errorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		status, body, internal := public(err)
		if internal {
			attrs := []any{
				"method", c.Method(), "path", c.Path(), "status", status,
				"request_id", c.Get(protocol.HeaderRequestID), "err", err,
			}
			if stack, ok := c.Locals(stackKey).(string); ok {
				attrs = append(attrs, "stack", stack)
			}
			log.Error("request failed", attrs...)
		}
		return c.Status(status).JSON(body)
	}
}

// public maps err to what the client sees. fiber's own errors (unknown
// route, oversized body, ...) keep their status and get the matching code,
// without fiber's message.
func public(err error) (status int, body protocol.ErrorBody, internal bool) {
	var fe *fiber.Error
	if errors.As(err, &fe) {
		return fe.Code, protocol.ErrorBody{Error: protocol.CodeForStatus(fe.Code)}, fe.Code >= fiber.StatusInternalServerError
	}
	return protocol.Public(err)
}
