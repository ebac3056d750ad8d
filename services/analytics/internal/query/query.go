// Package query is analytics' HTTP surface besides the SQL endpoint: the
// turns (list, one turn), tags on turns and sessions, the database stats
// and schema (/api/shadow-db), costs (summary, per session, per tool,
// trends) and prompts (search, recent, frequent, stats). Handlers check
// their input, answer problems with *protocol.Error (the error envelope)
// and read through internal/store.
package query

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/analytics/internal/schema"
	"github.com/svc-code/svc-code/services/analytics/internal/store"
)

type server struct {
	st  *store.Store
	now func() time.Time
}

// Register adds the routes to app.
func Register(app *fiber.App, st *store.Store) {
	s := &server{st: st, now: time.Now}
	app.Get("/api/turns", s.listTurns)
	app.Get("/api/turns/tags", s.allTags)
	app.Get("/api/turns/sessions/:id/tags", s.sessionTags)
	app.Post("/api/turns/sessions/:id/tags", s.addSessionTags)
	app.Delete("/api/turns/sessions/:id/tags/:tag", s.removeSessionTag)
	app.Get("/api/turns/:id", s.getTurn)
	app.Get("/api/turns/:id/tags", s.turnTags)
	app.Post("/api/turns/:id/tags", s.addTurnTags)
	app.Delete("/api/turns/:id/tags/:tag", s.removeTurnTag)

	app.Get("/api/shadow-db", s.stats)
	app.Get("/api/shadow-db/schema", s.schema)

	app.Get("/api/costs", s.costs)
	app.Get("/api/costs/sessions", s.sessionCosts)
	app.Get("/api/costs/tools", s.toolCosts)
	app.Get("/api/costs/trends", s.trends)

	app.Get("/api/prompts/search", s.searchPrompts)
	app.Get("/api/prompts/recent", s.recentPrompts)
	app.Get("/api/prompts/frequent", s.frequentPrompts)
	app.Get("/api/prompts/stats", s.promptStats)
}

func badRequest(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeBadRequest, format, args...)
}

// storeError maps the store's errors to the envelope; others stay internal.
func storeError(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return protocol.Errorf(protocol.CodeNotFound, "%s", strings.TrimSuffix(err.Error(), ": "+store.ErrNotFound.Error())+" not found")
	case errors.Is(err, store.ErrBadCursor):
		return badRequest("malformed cursor: pass next_cursor from a previous page")
	case errors.Is(err, store.ErrTooManyTags):
		return protocol.Errorf(protocol.CodeConflict, "at most %d tags per turn or session", store.MaxTags)
	}
	return err
}

// param is a path parameter, unescaped and copied out of fasthttp's
// buffer; a bad escape or an empty value is a bad request.
func param(c *fiber.Ctx, name string) (string, error) {
	raw := string([]byte(c.Params(name)))
	v, err := url.PathUnescape(raw)
	if err != nil || v == "" || len(v) > 256 || !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
		return "", badRequest("%s %q: want 1 to 256 bytes of UTF-8 text", name, raw)
	}
	return v, nil
}

// known refuses query parameters other than allowed: a misspelt filter
// must not silently select everything.
func known(c *fiber.Ctx, allowed ...string) error {
	for k := range c.Context().QueryArgs().All() {
		if !slices.Contains(allowed, string(k)) {
			return badRequest("unknown query parameter %q (known: %s)", string(k), strings.Join(allowed, ", "))
		}
	}
	return nil
}

// filterParams are the query parameters of filter.
var filterParams = []string{"session", "project", "model", "tag", "since", "until"}

// filter reads the turn filter from the query.
func filter(c *fiber.Ctx) (store.Filter, error) {
	f := store.Filter{
		Session: c.Query("session"), Project: c.Query("project"),
		Model: c.Query("model"), Tag: c.Query("tag"),
	}
	for k, v := range map[string]string{"session": f.Session, "project": f.Project, "model": f.Model, "tag": f.Tag} {
		if len(v) > 4096 || !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return f, badRequest("%s: want at most 4096 bytes of UTF-8 text", k)
		}
	}
	var err error
	if f.Since, err = timeParam(c, "since"); err != nil {
		return f, err
	}
	if f.Until, err = timeParam(c, "until"); err != nil {
		return f, err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, badRequest("since must be before until")
	}
	return f, nil
}

// timeParam reads an RFC 3339 time or a YYYY-MM-DD date (midnight UTC).
func timeParam(c *fiber.Ctx, name string) (time.Time, error) {
	v := c.Query(name)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, badRequest("%s %q: want an RFC 3339 time (2026-03-01T10:00:00Z) or a date (2026-03-01)", name, v)
}

// limit reads ?limit (1 to store.MaxLimit; default store.DefaultLimit).
func limit(c *fiber.Ctx) (int, error) {
	raw := c.Query("limit")
	if raw == "" {
		return store.DefaultLimit, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > store.MaxLimit {
		return 0, badRequest("limit %q: want a number from 1 to %d", raw, store.MaxLimit)
	}
	return n, nil
}

// checkTag refuses a tag that is empty, too long, or has control
// characters or surrounding spaces.
func checkTag(tag string) error {
	n := utf8.RuneCountInString(tag)
	switch {
	case !utf8.ValidString(tag) || n < 1 || n > store.MaxTagLen:
		return badRequest("tag %q: want 1 to %d characters", tag, store.MaxTagLen)
	case strings.TrimSpace(tag) != tag:
		return badRequest("tag %q: no leading or trailing spaces", tag)
	case strings.IndexFunc(tag, unicode.IsControl) >= 0:
		return badRequest("tag %q: no control characters", tag)
	}
	return nil
}

// schemaAnswer is GET /api/shadow-db/schema.
type schemaAnswer struct {
	Tables []schema.Table `json:"tables"`
}

func schemaTables() []schema.Table { return schema.Describe() }
