// Package shadowapi serves the shadow journal over HTTP: /api/shadow/*
// (projects, branches, log, search, file timelines, file versions, commit
// diffs, undo, restore) and GET /api/sessions/{id}/changes. Project-scoped
// routes take the project as the query parameter cwd (decisions.md); a
// project without a journal is 404. Undo and restore answer 409 with the
// list of conflicting files rather than overwrite a change of the user's.
package shadowapi

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/shadow/internal/journal"
	"github.com/svc-code/svc-code/services/shadow/internal/project"
)

// RequestTimeout bounds the git work of one request.
const RequestTimeout = 30 * time.Second

// Deps is what the routes need.
type Deps struct {
	Journal *journal.Journal
	// Turns finds a session's project for /api/sessions/{id}/changes.
	Turns *journal.Turns
	// Sessions finds a session's cwd when shadow has no turn of it; may be nil.
	Sessions journal.SessionCwds
	Log      *slog.Logger
}

type server struct{ Deps }

// Register adds the routes to app.
func Register(app *fiber.App, d Deps) {
	s := &server{d}
	app.Get("/api/shadow/projects", s.projects)
	app.Get("/api/shadow/branches", s.branches)
	app.Get("/api/shadow/log", s.log)
	app.Get("/api/shadow/search", s.search)
	app.Get("/api/shadow/timeline", s.timeline)
	app.Get("/api/shadow/file", s.file)
	app.Get("/api/shadow/diff", s.diff)
	app.Post("/api/shadow/undo", s.undo)
	app.Post("/api/shadow/restore", s.restore)
	app.Get("/api/sessions/:id/changes", s.changes)
}

func badRequest(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeBadRequest, format, args...)
}

func query(c *fiber.Ctx, name string) string { return strings.Clone(c.Query(name)) }

// queryInt reads a bounded integer parameter.
func queryInt(c *fiber.Ctx, name string, def, lo, hi int) (int, error) {
	v := c.Query(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s must be a whole number from %d to %d", name, lo, hi)
	}
	return n, nil
}

// queryBool reads a boolean parameter (true/false/1/0).
func queryBool(c *fiber.Ctx, name string, def bool) (bool, error) {
	v := c.Query(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest("%s must be true or false", name)
	}
	return b, nil
}

func timeout(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.UserContext(), RequestTimeout)
}

// open resolves the cwd parameter to a project's journal.
func (s *server) open(c *fiber.Ctx) (*journal.Repo, project.Meta, error) {
	return s.Journal.Open(query(c, "cwd"))
}

// pathParam reads an optional path parameter, relative to the project.
func pathParam(c *fiber.Ctx, r *journal.Repo, required bool) (string, error) {
	p := query(c, "path")
	if p == "" && !required {
		return "", nil
	}
	return r.RelPath(p)
}

// openPath resolves the cwd parameter to a project's journal and reads the
// required path parameter, relative to the project.
func (s *server) openPath(c *fiber.Ctx) (*journal.Repo, string, error) {
	r, _, err := s.open(c)
	if err != nil {
		return nil, "", err
	}
	rel, err := pathParam(c, r, true)
	return r, rel, err
}

func projectJSON(r *journal.Repo, m project.Meta) fiber.Map {
	return fiber.Map{"path": r.Project.Path, "hash": r.Project.Hash, "name": m.Name, "journal": r.Dir()}
}

func (s *server) projects(c *fiber.Ctx) error {
	list, err := s.Journal.Store().List(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"projects": list})
}

func (s *server) branches(c *fiber.Ctx) error {
	r, m, err := s.open(c)
	if err != nil {
		return err
	}
	ctx, cancel := timeout(c)
	defer cancel()
	b, err := r.Branches(ctx)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"project": projectJSON(r, m), "branches": b})
}

func (s *server) log(c *fiber.Ctx) error {
	r, _, err := s.open(c)
	if err != nil {
		return err
	}
	q := journal.LogQuery{Session: query(c, "session")}
	if q.Path, err = pathParam(c, r, false); err != nil {
		return err
	}
	if q.Limit, err = queryInt(c, "limit", journal.DefaultLogLimit, 1, journal.MaxLogLimit); err != nil {
		return err
	}
	if q.Skip, err = queryInt(c, "skip", 0, 0, 1<<30); err != nil {
		return err
	}
	ctx, cancel := timeout(c)
	defer cancel()
	commits, err := r.Log(ctx, q)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"commits": commits})
}

func (s *server) search(c *fiber.Ctx) error {
	r, _, err := s.open(c)
	if err != nil {
		return err
	}
	q := journal.SearchQuery{Pattern: query(c, "q"), Session: query(c, "session")}
	if q.Regex, err = queryBool(c, "regex", false); err != nil {
		return err
	}
	if q.CaseSensitive, err = queryBool(c, "case", false); err != nil {
		return err
	}
	if q.Path, err = pathParam(c, r, false); err != nil {
		return err
	}
	if q.Limit, err = queryInt(c, "limit", journal.DefaultSearchLimit, 1, journal.MaxSearchLimit); err != nil {
		return err
	}
	ctx, cancel := timeout(c)
	defer cancel()
	hits, err := r.Search(ctx, q)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"hits": hits, "limited": len(hits) == q.Limit})
}

func (s *server) timeline(c *fiber.Ctx) error {
	r, rel, err := s.openPath(c)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", journal.DefaultLogLimit*2, 1, journal.MaxLogLimit)
	if err != nil {
		return err
	}
	ctx, cancel := timeout(c)
	defer cancel()
	versions, err := r.Timeline(ctx, rel, limit)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"path": rel, "versions": versions})
}

func (s *server) file(c *fiber.Ctx) error {
	r, rel, err := s.openPath(c)
	if err != nil {
		return err
	}
	ctx, cancel := timeout(c)
	defer cancel()
	content, sha, err := r.FileAt(ctx, query(c, "commit"), rel)
	if err != nil {
		return err
	}
	body := fiber.Map{"path": rel, "commit": sha, "size": len(content)}
	if utf8.Valid(content) {
		body["encoding"], body["content"] = "utf-8", string(content)
	} else {
		body["encoding"], body["content"] = "base64", base64.StdEncoding.EncodeToString(content)
	}
	return c.JSON(body)
}

func (s *server) diff(c *fiber.Ctx) error {
	r, _, err := s.open(c)
	if err != nil {
		return err
	}
	ctx, cancel := timeout(c)
	defer cancel()
	sha, err := r.ResolveCommit(ctx, query(c, "commit"))
	if err != nil {
		return err
	}
	cm, err := r.CommitInfo(ctx, sha)
	if err != nil {
		return err
	}
	diffs, err := r.Diff(ctx, cm)
	if err != nil {
		return err
	}
	return c.JSON(journal.TurnChanges{Commit: cm, Diffs: diffs})
}

type undoBody struct {
	SessionID string `json:"session_id"`
	Force     bool   `json:"force"`
}

type restoreBody struct {
	Commit    string `json:"commit"`
	Path      string `json:"path"`
	SessionID string `json:"session_id"`
	Force     bool   `json:"force"`
}

func (s *server) undo(c *fiber.Ctx) error {
	r, _, err := s.open(c)
	if err != nil {
		return err
	}
	var b undoBody
	if err := svchttp.DecodeJSON(c, &b); err != nil {
		return err
	}
	if b.SessionID == "" {
		return badRequest("session_id is required")
	}
	ctx, cancel := timeout(c)
	defer cancel()
	res, err := s.Journal.Undo(ctx, r, b.SessionID, b.Force)
	if err != nil {
		return conflictOr(c, err)
	}
	return c.JSON(res)
}

func (s *server) restore(c *fiber.Ctx) error {
	r, _, err := s.open(c)
	if err != nil {
		return err
	}
	var b restoreBody
	if err := svchttp.DecodeJSON(c, &b); err != nil {
		return err
	}
	rel := ""
	if b.Path != "" {
		if rel, err = r.RelPath(b.Path); err != nil {
			return err
		}
	}
	ctx, cancel := timeout(c)
	defer cancel()
	res, err := s.Journal.Restore(ctx, r, b.Commit, rel, b.SessionID, b.Force)
	if err != nil {
		return conflictOr(c, err)
	}
	return c.JSON(res)
}

// conflictOr answers a *journal.ConflictError as 409 with its list, and
// hands any other error on.
func conflictOr(c *fiber.Ctx, err error) error {
	var ce *journal.ConflictError
	if !errors.As(err, &ce) {
		return err
	}
	return c.Status(http.StatusConflict).JSON(fiber.Map{
		"error":     protocol.CodeConflict,
		"message":   "files changed since the journal's version; nothing was changed (send force to overwrite them after a snapshot)",
		"conflicts": ce.Conflicts,
	})
}

// changes answers GET /api/sessions/{id}/changes: the session's turns with
// the files and diffs of each.
func (s *server) changes(c *fiber.Ctx) error {
	id := strings.Clone(c.Params("id"))
	if !journal.ValidSession(id) {
		return badRequest("invalid session id")
	}
	limit, err := queryInt(c, "limit", 200, 1, journal.MaxLogLimit)
	if err != nil {
		return err
	}
	ctx, cancel := timeout(c)
	defer cancel()
	r, m, err := s.sessionRepo(ctx, id)
	if err != nil {
		return err
	}
	turns, err := r.SessionChanges(ctx, id, limit)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"session_id": id, "project": projectJSON(r, m), "turns": turns})
}

// sessionRepo finds the journal of a session's project: from the turns
// shadow journaled, else from chat's sessions table.
func (s *server) sessionRepo(ctx context.Context, id string) (*journal.Repo, project.Meta, error) {
	rows, err := s.Turns.Session(ctx, id)
	if err != nil {
		return nil, project.Meta{}, err
	}
	if len(rows) > 0 {
		return s.Journal.OpenHash(rows[len(rows)-1].Project)
	}
	if s.Sessions != nil {
		cwd, err := s.Sessions.SessionCwd(ctx, id)
		if err != nil {
			return nil, project.Meta{}, err
		}
		if cwd != "" {
			return s.Journal.Open(cwd)
		}
	}
	return nil, project.Meta{}, protocol.Errorf(protocol.CodeNotFound, "no journaled turns for session %s", id)
}
