// Package workspace is the part of chat's HTTP surface that makes the tool
// pleasant to live in all day: saved prompt drafts, the stash of items put
// aside in a session, favorite sessions and prompts, the open tabs of each
// browser profile, layout presets, the server configuration
// (GET/PUT /api/app/config) and the welcome view (recent sessions,
// projects, full-text search). Every route is documented in docs/api.md
// ("Drafts" to "Welcome").
//
// All state is in PostgreSQL (the tables of the migrations *_drafts_stash,
// *_favorites_tabs and *_welcome, and app_settings), read on every
// request, so every chat instance answers the same at once. Handlers
// validate their input and answer problems with *protocol.Error, changing
// nothing.
//
// The server configuration is one row per key that was set, in the table
// app_settings: key "config/<name>", value the JSON value (absent row: the
// default). Other services read the keys they need straight from there:
//
//	SELECT value FROM app_settings WHERE key = 'config/extra_dirs';                  -- ["/srv/data", ...], default []
//	SELECT value FROM app_settings WHERE key = 'config/shadow_git.max_file_size_mb'; -- 50 (MB, 0: no cap)
//	SELECT value FROM app_settings WHERE key = 'config/shadow_db.sql_timeout_s';     -- 30 (seconds)
//
// Keys lists them all with their types and defaults. After PUT stores a
// change, Deps.ConfigChanged announces it (chat publishes the notice of
// libs/confignotice on Redis), so that those services re-read at once.
package workspace

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/libs/protocol"
)

// Deps is what the routes need.
type Deps struct {
	// DB is chat's pool; its search_path leads to chat's tables.
	DB  *pgxpool.Pool
	Log *slog.Logger
	// Changed, when set, is told of a session whose favorite flag changed
	// (for the events sockets).
	Changed func(ctx context.Context, sessionID string)
	// ConfigChanged, when set, is called after a PUT /api/app/config
	// stored a change: it tells the other services to re-read the keys
	// (libs/confignotice). Its error is logged; the change stands.
	ConfigChanged func(ctx context.Context) error
}

type server struct {
	db            *pgxpool.Pool
	log           *slog.Logger
	changed       func(ctx context.Context, sessionID string)
	configChanged func(ctx context.Context) error
}

// Register adds the workspace routes to app.
func Register(app *fiber.App, d Deps) {
	s := &server{db: d.DB, log: d.Log, changed: d.Changed, configChanged: d.ConfigChanged}
	if s.changed == nil {
		s.changed = func(context.Context, string) {}
	}

	app.Get("/api/drafts", s.listDrafts)
	app.Post("/api/drafts", s.createDraft)
	app.Delete("/api/drafts", s.clearDrafts)
	app.Put("/api/drafts/:draft_id", s.updateDraft)
	app.Delete("/api/drafts/:draft_id", s.deleteDraft)

	app.Get("/api/session/:id/stash", s.listStash)
	app.Post("/api/session/:id/stash", s.addStash)
	app.Delete("/api/session/:id/stash", s.clearStash)
	app.Post("/api/session/:id/stash/sent", s.markStashSent)
	app.Patch("/api/session/:id/stash/:item_id", s.updateStash)
	app.Delete("/api/session/:id/stash/:item_id", s.deleteStash)

	app.Get("/api/favorites", s.listFavorites)
	app.Put("/api/favorites/sessions/:id", s.putFavoriteSession)
	app.Delete("/api/favorites/sessions/:id", s.deleteFavoriteSession)
	app.Put("/api/favorites/prompts/:prompt_id", s.putFavoritePrompt)

	app.Get("/api/app/tabs", s.getTabs)
	app.Post("/api/app/tabs", s.putTabs)
	app.Get("/api/app/presets", s.getPresets)
	app.Get("/api/app/config", s.getConfig)
	app.Put("/api/app/config", s.putConfig)

	app.Get("/api/welcome/sessions", s.welcomeSessions)
	app.Get("/api/welcome/projects", s.welcomeProjects)
	app.Post("/api/welcome/search", s.welcomeSearch)
}

// newID returns a new record id: 26 characters of base32 (128 random
// bits), like session ids.
func newID() string { return rand.Text() }

func badRequest(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeBadRequest, format, args...)
}

func notFound(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeNotFound, format, args...)
}

// goneSession turns a foreign-key violation (the session was deleted
// between the check and the write) into 404; other errors are wrapped
// with op.
func goneSession(err error, op, id string) error {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "23503" {
		return notFound("no session %q", id)
	}
	if _, ok := errors.AsType[*protocol.Error](err); ok {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

// param copies a path parameter out of fasthttp's reused buffer.
func param(c *fiber.Ctx, name string) string {
	return string([]byte(c.Params(name)))
}

// query copies a query parameter out of fasthttp's reused buffer.
func query(c *fiber.Ctx, name string) string {
	return string([]byte(c.Query(name)))
}
