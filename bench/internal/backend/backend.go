// Package backend is the stand-in service the gateway benchmark proxies to:
// like chat, it refuses any request without the internal credential, and
// it answers GET /api/sessions with a small JSON document and echoes
// WebSocket messages on /chat. It does as little work as possible, so that
// what the benchmark sees through the gateway is the gateway's cost.
package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
)

// Paths served, both routed to the chat service by the gateway.
const (
	SessionsPath = "/api/sessions"
	EchoPath     = "/chat"
)

// SessionsBody is the answer to GET SessionsPath (about 200 bytes).
var SessionsBody = []byte(`{"sessions":[` +
	`{"id":"s-1a2b3c","title":"Refactor the proxy","project":"svc-code","updated_at":"2025-01-01T12:00:00Z","turns":42},` +
	`{"id":"s-4d5e6f","title":"Fix login","project":"svc-code","updated_at":"2025-01-02T08:30:00Z","turns":7}]}`)

// Backend is a running stand-in service.
type Backend struct {
	app *fiber.App
	ln  net.Listener
}

// Start serves on a free port of 127.0.0.1, accepting only requests that
// carry secret in protocol.HeaderInternal.
func Start(ctx context.Context, secret internalauth.Secret) (*Backend, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the backend: %w", err)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(func(c *fiber.Ctx) error {
		if !secret.Check(c.Get(protocol.HeaderInternal)) {
			return c.Status(fiber.StatusUnauthorized).JSON(protocol.ErrorBody{
				Error: protocol.CodeUnauthorized, Message: "requests must come through the gateway",
			})
		}
		return c.Next()
	})
	app.Get(SessionsPath, func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(SessionsBody)
	})
	app.Get(EchoPath, func(c *fiber.Ctx) error {
		if !websocket.IsWebSocketUpgrade(c) {
			return fiber.ErrUpgradeRequired
		}
		return c.Next()
	}, websocket.New(echo))

	go func() { _ = app.Listener(ln) }()
	return &Backend{app: app, ln: ln}, nil
}

// echo sends every message back as it came until the connection ends.
func echo(c *websocket.Conn) {
	for {
		mt, msg, err := c.ReadMessage()
		if err != nil {
			return
		}
		if err := c.WriteMessage(mt, msg); err != nil {
			return
		}
	}
}

// Addr is the backend's host:port.
func (b *Backend) Addr() string { return b.ln.Addr().String() }

// Close stops the server. WebSocket connections are not waited for: their
// clients close them.
func (b *Backend) Close() error {
	err := b.app.ShutdownWithTimeout(2 * time.Second)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
