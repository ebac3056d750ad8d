// Package api is chat's HTTP surface for sessions and providers, registered
// on the service's fiber app: session create, list, read, rename, delete,
// fork, provider and permission-mode changes, the session logs, the
// provider catalog and the provider settings (path, credentials, models and
// prices, defaults, the default provider), and the CLI sessions (Claude
// Code's and Codex's transcripts on disk: list, read, continue). Handlers validate their
// input, answer problems with *protocol.Error (the error envelope) and keep
// state in internal/store; what lives with a running agent process is asked
// of a Runtime.
package api

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/clisessions"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// Runtime is the live side of sessions: their agent processes, which come
// with the /chat runtime. Until it exists, Idle stands in: no session has a
// process.
type Runtime interface {
	// State reports whether a turn of the session is running and whether a
	// compaction is.
	State(ctx context.Context, id string) (running, compacting bool)
	// SetPermissionMode applies mode to the session's live process, if it
	// has one, and tells when it takes effect. The mode is already stored.
	SetPermissionMode(ctx context.Context, id, mode string) (agent.Applied, error)
	// End ends everything live of the session (agent process, terminal,
	// live state) before DELETE removes its record.
	End(ctx context.Context, id string) error
	// Stop interrupts the session's running turn and tells its sockets
	// (`stopped`).
	Stop(ctx context.Context, id string) (agent.InterruptOutcome, error)
	// Active lists the sessions with a live agent process or turn, on any
	// instance.
	Active(ctx context.Context) ([]string, error)
	// SessionChanged and SessionDeleted tell the events sockets of every
	// instance (GET /api/events) that a session's record changed or is
	// gone. They never fail: a lost one is repaired by the sockets'
	// periodic check.
	SessionChanged(ctx context.Context, id string)
	SessionDeleted(ctx context.Context, id string)
}

// Idle is the Runtime of a chat with no processes: nothing runs, a mode
// change applies on the next turn, there is nothing to end.
type Idle struct{}

var _ Runtime = Idle{}

// State implements Runtime.
func (Idle) State(context.Context, string) (running, compacting bool) { return false, false }

// SetPermissionMode implements Runtime.
func (Idle) SetPermissionMode(context.Context, string, string) (agent.Applied, error) {
	return agent.AppliedNextTurn, nil
}

// End implements Runtime.
func (Idle) End(context.Context, string) error { return nil }

// Stop implements Runtime.
func (Idle) Stop(context.Context, string) (agent.InterruptOutcome, error) {
	return agent.InterruptIdle, nil
}

// Active implements Runtime.
func (Idle) Active(context.Context) ([]string, error) { return nil, nil }

// SessionChanged implements Runtime.
func (Idle) SessionChanged(context.Context, string) {}

// SessionDeleted implements Runtime.
func (Idle) SessionDeleted(context.Context, string) {}

// Deps is what the routes need.
type Deps struct {
	Store   *store.Store
	Runtime Runtime
	// LookPath finds a provider's default program; nil means exec.LookPath.
	LookPath func(file string) (string, error)
	Log      *slog.Logger
	// CLI and CLIReader serve the CLI session routes; a nil CLI finds
	// nothing.
	CLI       *clisessions.Finder
	CLIReader *clisessions.Reader
	// Ctx, when set, ends with the server: long polls (a CLI session's
	// follow) answer at once when it is done, not holding the shutdown.
	Ctx context.Context
}

type server struct{ Deps }

// Register adds the routes to app.
func Register(app *fiber.App, d Deps) {
	if d.Runtime == nil {
		d.Runtime = Idle{}
	}
	if d.LookPath == nil {
		d.LookPath = exec.LookPath
	}
	if d.CLI == nil {
		d.CLI = &clisessions.Finder{}
	}
	if d.CLIReader == nil {
		d.CLIReader = &clisessions.Reader{}
	}
	s := &server{d}
	app.Post("/api/sessions", s.createSession)
	app.Get("/api/sessions", s.listSessions)
	app.Get("/api/session/:id", s.getSession)
	app.Patch("/api/session/:id", s.patchSession)
	app.Delete("/api/session/:id", s.deleteSession)
	app.Post("/api/session/:id/fork", s.forkSession)
	app.Get("/api/session/:id/threads", s.threads)
	app.Put("/api/session/:id/provider", s.putProvider)
	app.Put("/api/session/:id/permission-mode", s.putPermissionMode)
	app.Post("/api/session/:id/stop", s.stopSession)
	app.Get("/api/active-sessions", s.activeSessions)
	app.Get("/api/sessions/:id/logs", s.logs)
	app.Get("/api/sessions/:id/logs/messages", s.logMessages)
	app.Get("/api/sessions/:id/logs/raw", s.logRaw)
	app.Get("/api/sessions/:id/logs/tools", s.logTools)
	app.Get("/api/providers", s.providerCatalog)
	app.Get("/api/app/provider-path/:name", s.getProviderPath)
	app.Put("/api/app/provider-path/:name", s.putProviderPath)
	app.Get("/api/app/provider-auth/:name", s.getProviderAuth)
	app.Put("/api/app/provider-auth/:name", s.putProviderAuth)
	app.Get("/api/app/provider-models/:name", s.getProviderModels)
	app.Put("/api/app/provider-models/:name", s.putProviderModels)
	app.Get("/api/app/provider-defaults/:name", s.getProviderDefaults)
	app.Put("/api/app/provider-defaults/:name", s.putProviderDefaults)
	app.Get("/api/app/default-provider", s.getDefaultProvider)
	app.Put("/api/app/default-provider", s.putDefaultProvider)
	s.registerCLI(app)
}

func badRequest(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeBadRequest, format, args...)
}

// storeError maps the store's errors to the envelope; others stay internal.
func storeError(err error, id string) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return protocol.Errorf(protocol.CodeNotFound, "no session %q", id)
	case errors.Is(err, store.ErrProviderLocked):
		return protocol.Errorf(protocol.CodeProviderLocked, "the provider is locked after the session's first turn")
	case errors.Is(err, store.ErrBadCursor):
		return badRequest("malformed cursor: pass next_cursor from a previous page")
	}
	return err
}

// param copies a path parameter out of fasthttp's reused buffer.
func param(c *fiber.Ctx, name string) string {
	return string([]byte(c.Params(name)))
}
