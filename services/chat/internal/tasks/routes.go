package tasks

import (
	"errors"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strconv"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
)

// Limits of the routes.
const (
	DefaultListLimit = 100
	MaxListLimit     = 500
	DefaultReadLimit = 64 << 10
	MaxReadLimit     = 1 << 20
)

// Deps is what the routes need.
type Deps struct {
	Finder *Finder
	// Sessions ties tasks to chat sessions (PGSessions).
	Sessions Sessions
	// Codex holds Codex's background commands; nil lists none.
	Codex *CodexStore
	Log   *slog.Logger
}

type server struct{ Deps }

// Register adds GET /api/tasks and GET /api/tasks/{task_id} to app.
func Register(app *fiber.App, d Deps) {
	s := &server{d}
	app.Get("/api/tasks", s.list)
	app.Get("/api/tasks/:task_id", s.get)
}

func badRequest(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeBadRequest, format, args...)
}

// list answers {"tasks": [...]}, newest first.
func (s *server) list(c *fiber.Ctx) error {
	var filter Filter
	if cwd := c.Query("cwd"); cwd != "" {
		if !filepath.IsAbs(cwd) {
			return badRequest("cwd %q: want an absolute path", cwd)
		}
		filter.Project = ProjectKey(filepath.Clean(cwd))
	}
	if session := string([]byte(c.Query("session"))); session != "" {
		agentID, err := s.Sessions.AgentSession(c.UserContext(), session)
		if errors.Is(err, ErrNoSession) {
			return protocol.Errorf(protocol.CodeNotFound, "no session %q", session)
		}
		if err != nil {
			return err
		}
		filter.AgentSession, filter.OnlyAgentSession, filter.SessionID = agentID, true, session
	}
	switch r := c.Query("running"); r {
	case "":
	case "true", "false":
		b := r == "true"
		filter.Running = &b
	default:
		return badRequest("running %q: want true or false", r)
	}
	limit, err := intQuery(c, "limit", DefaultListLimit, 1, MaxListLimit)
	if err != nil {
		return err
	}
	filter.Limit = int(limit)
	found, err := s.Finder.List(filter)
	if err != nil {
		return err
	}
	if err := s.linkSessions(c, found); err != nil {
		return err
	}
	if s.Codex != nil {
		codex, err := s.Codex.List(c.UserContext(), filter)
		if err != nil {
			return err
		}
		found = mergeNewest(found, codex, filter.Limit)
	}
	if found == nil {
		found = []Task{}
	}
	return c.JSON(fiber.Map{"tasks": found})
}

// get answers {"task": {...}, "offset", "next_offset", "content", "eof"}.
func (s *server) get(c *fiber.Ctx) error {
	id := string([]byte(c.Params("task_id")))
	if !ValidID(id) {
		return badRequest("task id %q: want letters, digits, '_' and '-' (at most 128)", id)
	}
	offset, err := intQuery(c, "offset", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	// At least 4 bytes: a chunk then always holds a whole character.
	limit, err := intQuery(c, "limit", DefaultReadLimit, utf8.UTFMax, MaxReadLimit)
	if err != nil {
		return err
	}
	if IsCodexID(id) {
		return s.getCodex(c, id, offset, limit)
	}
	t, err := s.Finder.Find(id)
	switch {
	case errors.Is(err, ErrNotFound):
		return protocol.Errorf(protocol.CodeNotFound, "no task %q", id)
	case errors.Is(err, ErrOutside):
		return protocol.Errorf(protocol.CodeForbidden, "task %q: its file leaves the task directory", id)
	case err != nil:
		return err
	}
	one := []Task{t}
	if err := s.linkSessions(c, one); err != nil {
		return err
	}
	t = one[0]
	chunk, err := Read(t, offset, limit)
	switch {
	case errors.Is(err, ErrOffset):
		return badRequest("offset %d is past the end of the output: read from 0 again", offset)
	case errors.Is(err, ErrOutside):
		return protocol.Errorf(protocol.CodeForbidden, "task %q: its file leaves the task directory", id)
	case errors.Is(err, fs.ErrNotExist):
		return protocol.Errorf(protocol.CodeNotFound, "no task %q", id)
	}
	if err != nil {
		return err
	}
	return c.JSON(struct {
		Task Task `json:"task"`
		Chunk
	}{t, chunk})
}

// linkSessions sets the chat session of the tasks that have an agent
// session.
func (s *server) linkSessions(c *fiber.Ctx, found []Task) error {
	var ids []string
	for _, t := range found {
		if t.AgentSession != "" {
			ids = append(ids, t.AgentSession)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	chat, err := s.Sessions.ChatSessions(c.UserContext(), ids)
	if err != nil {
		return err
	}
	for i := range found {
		found[i].SessionID = chat[found[i].AgentSession]
	}
	return nil
}

// intQuery reads an integer query parameter within [lo, hi].
func intQuery(c *fiber.Ctx, name string, def, lo, hi int64) (int64, error) {
	raw := c.Query(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s %q: want an integer from %d to %d", name, raw, lo, hi)
	}
	return n, nil
}

// getCodex answers GET /api/tasks/{task_id} for a Codex task.
func (s *server) getCodex(c *fiber.Ctx, id string, offset, limit int64) error {
	if s.Codex == nil {
		return protocol.Errorf(protocol.CodeNotFound, "no task %q", id)
	}
	t, kept, err := s.Codex.Find(c.UserContext(), id)
	if errors.Is(err, ErrNotFound) {
		return protocol.Errorf(protocol.CodeNotFound, "no task %q", id)
	}
	if err != nil {
		return err
	}
	chunk, err := ReadCodex(t, kept, offset, limit)
	if errors.Is(err, ErrOffset) {
		return badRequest("offset %d is past the end of the output: read from 0 again", offset)
	}
	if err != nil {
		return err
	}
	return c.JSON(struct {
		Task Task `json:"task"`
		Chunk
	}{t, chunk})
}

// mergeNewest merges two lists sorted newest first into one, at most
// limit long (0: no limit).
func mergeNewest(a, b []Task, limit int) []Task {
	out := make([]Task, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		if limit > 0 && len(out) == limit {
			break
		}
		if len(b) == 0 || (len(a) > 0 && !b[0].UpdatedAt.After(a[0].UpdatedAt)) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}
