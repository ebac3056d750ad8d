package api

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/chat/internal/providers"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// MaxTitleLen is the longest title, in characters.
const MaxTitleLen = 500

// sessionJSON is the session object of every session route.
type sessionJSON = protocol.Session

func (s *server) sessionJSON(ctx context.Context, sess store.Session) sessionJSON {
	running, compacting := s.Runtime.State(ctx, sess.ID)
	out := sessionJSON{
		SessionID: sess.ID, Title: sess.Title, Cwd: sess.Cwd, Provider: sess.Provider,
		ProviderLocked: sess.ProviderLocked, PermissionMode: sess.PermissionMode, Model: sess.Model,
		AgentRunning: running, IsCompacting: compacting,
		CreatedAt: sess.CreatedAt.UTC(), UpdatedAt: sess.UpdatedAt.UTC(), Archived: sess.Archived,
		CostUSD: sess.CostUSD, Turns: sess.Turns, LastLine: sess.LastLine,
	}
	if sess.ParentID != "" {
		out.ParentID = &sess.ParentID
	}
	out.CLISession = cliSessionRef(sess)
	return out
}

// cliSessionRef is the session object's cli_session: the CLI session a
// session made by "Continue here" continues, nil for other sessions.
func cliSessionRef(sess store.Session) *protocol.CLISessionRef {
	if sess.CLISessionID == "" {
		return nil
	}
	return &protocol.CLISessionRef{Provider: cliProvider(sess.Provider), ID: sess.CLISessionID}
}

func validTitle(title string) error {
	if !utf8.ValidString(title) || utf8.RuneCountInString(title) > MaxTitleLen {
		return badRequest("title: at most %d characters of UTF-8", MaxTitleLen)
	}
	return nil
}

func validProvider(name string) error {
	if _, ok := providers.Lookup(name); !ok {
		return badRequest("unknown provider %q: use %q or %q", name, providers.AgentSDK, providers.AppServer)
	}
	return nil
}

type createRequest struct {
	Cwd      string `json:"cwd"`
	Provider string `json:"provider"`
	Title    string `json:"title"`
}

// createSession: POST /api/sessions.
func (s *server) createSession(c *fiber.Ctx) error {
	var req createRequest
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if req.Cwd == "" {
		return badRequest("cwd is required")
	}
	if !filepath.IsAbs(req.Cwd) {
		return badRequest("cwd %q: want an absolute path", req.Cwd)
	}
	cwd := filepath.Clean(req.Cwd)
	if info, err := os.Stat(cwd); err != nil || !info.IsDir() {
		return badRequest("cwd %q: not an existing directory", req.Cwd)
	}
	if req.Provider != "" {
		if err := validProvider(req.Provider); err != nil {
			return err
		}
	}
	if err := validTitle(req.Title); err != nil {
		return err
	}
	ctx := c.UserContext()
	n := store.NewSession{Cwd: cwd, Provider: req.Provider, Title: req.Title}
	if err := providers.FillNewSession(ctx, s.Store, &n); err != nil { // the provider settings' defaults
		return err
	}
	sess, err := s.Store.Create(ctx, n)
	if err != nil {
		return err
	}
	s.Runtime.SessionChanged(ctx, sess.ID)
	return c.Status(fiber.StatusCreated).JSON(s.sessionJSON(ctx, sess))
}

// listSessions: GET /api/sessions?cwd&limit&cursor&archived.
func (s *server) listSessions(c *fiber.Ctx) error {
	q := store.ListQuery{Cwd: c.Query("cwd"), Cursor: c.Query("cursor")}
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > store.MaxLimit {
			return badRequest("limit %q: want a number from 1 to %d", raw, store.MaxLimit)
		}
		q.Limit = n
	}
	switch raw := c.Query("archived", "false"); raw {
	case "false", "true":
		archived := raw == "true"
		q.Archived = &archived
	case "all":
	default:
		return badRequest("archived %q: want true, false or all", raw)
	}
	ctx := c.UserContext()
	page, err := s.Store.List(ctx, q)
	if err != nil {
		return storeError(err, "")
	}
	out := struct {
		Sessions   []sessionJSON `json:"sessions"`
		NextCursor *string       `json:"next_cursor"`
	}{Sessions: make([]sessionJSON, 0, len(page.Sessions))}
	for _, sess := range page.Sessions {
		out.Sessions = append(out.Sessions, s.sessionJSON(ctx, sess))
	}
	if page.NextCursor != "" {
		out.NextCursor = &page.NextCursor
	}
	return c.JSON(out)
}

// getSession: GET /api/session/{id}.
func (s *server) getSession(c *fiber.Ctx) error {
	id := param(c, "id")
	sess, err := s.Store.Get(c.UserContext(), id)
	if err != nil {
		return storeError(err, id)
	}
	return c.JSON(s.sessionJSON(c.UserContext(), sess))
}

// patchSession: PATCH /api/session/{id} {"title"?, "archived"?}: at least
// one, both applied in one statement or neither. Archiving only hides the
// session from the default lists: a running agent keeps running.
func (s *server) patchSession(c *fiber.Ctx) error {
	id := param(c, "id")
	var req protocol.PatchSessionRequest
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if req.Title == nil && req.Archived == nil {
		return badRequest("send title (a string), archived (true or false), or both")
	}
	if req.Title != nil {
		if err := validTitle(*req.Title); err != nil {
			return err
		}
	}
	sess, err := s.Store.Patch(c.UserContext(), id, req.Title, req.Archived)
	if err != nil {
		return storeError(err, id)
	}
	s.Runtime.SessionChanged(c.UserContext(), id)
	return c.JSON(s.sessionJSON(c.UserContext(), sess))
}

// deleteSession: DELETE /api/session/{id}. Whatever runs for the session
// ends first (Runtime.End), then its record and log are deleted.
func (s *server) deleteSession(c *fiber.Ctx) error {
	id := param(c, "id")
	ctx := c.UserContext()
	if _, err := s.Store.Get(ctx, id); err != nil {
		return storeError(err, id)
	}
	if err := s.Runtime.End(ctx, id); err != nil {
		return err
	}
	if err := s.Store.Delete(ctx, id); err != nil {
		return storeError(err, id)
	}
	s.Runtime.SessionDeleted(ctx, id)
	return c.JSON(fiber.Map{"ok": true, "session_id": id})
}

// forkSession: POST /api/session/{id}/fork, with no body or {"line"?}:
// the fork holds the log up to and including that line.
func (s *server) forkSession(c *fiber.Ctx) error {
	id := param(c, "id")
	var req protocol.ForkRequest
	if len(c.Body()) > 0 {
		if err := svchttp.DecodeJSON(c, &req); err != nil {
			return err
		}
	}
	var upTo int64
	if req.Line != nil {
		if *req.Line < 1 {
			return badRequest("line %d: want a line of the session's log, 1 or more", *req.Line)
		}
		upTo = *req.Line
	}
	ctx := c.UserContext()
	fork, err := s.Store.ForkAt(ctx, id, upTo)
	if errors.Is(err, store.ErrBadLine) {
		return badRequest("line %d: past the end of the session's log", upTo)
	}
	if err != nil {
		return storeError(err, id)
	}
	s.Runtime.SessionChanged(ctx, fork.ID)
	return c.Status(fiber.StatusCreated).JSON(s.sessionJSON(ctx, fork))
}

// putProvider: PUT /api/session/{id}/provider {"provider"}.
func (s *server) putProvider(c *fiber.Ctx) error {
	id := param(c, "id")
	var req struct {
		Provider string `json:"provider"`
	}
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if err := validProvider(req.Provider); err != nil {
		return err
	}
	sess, err := s.Store.SetProvider(c.UserContext(), id, req.Provider)
	if errors.Is(err, store.ErrProviderLocked) {
		return s.providerLockedError(c.UserContext(), id, err)
	}
	if err != nil {
		return storeError(err, id)
	}
	s.Runtime.SessionChanged(c.UserContext(), id)
	return c.JSON(s.sessionJSON(c.UserContext(), sess))
}

// providerLockedError says why the session's provider cannot change: it
// continues a CLI session, it resumes an agent conversation, or it has had
// its first turn.
func (s *server) providerLockedError(ctx context.Context, id string, err error) error {
	sess, gerr := s.Store.Get(ctx, id)
	switch {
	case gerr != nil:
		return storeError(err, id)
	case sess.CLISessionID != "":
		return protocol.Errorf(protocol.CodeProviderLocked,
			"the session continues the %s session %s started in a terminal: its provider cannot change (another provider could not resume that conversation)",
			cliDisplayName(cliProvider(sess.Provider)), sess.CLISessionID)
	case sess.ProviderSessionID != "" && sess.Turns == 0:
		return protocol.Errorf(protocol.CodeProviderLocked,
			"the session resumes the agent conversation %s: its provider cannot change", sess.ProviderSessionID)
	}
	return storeError(err, id)
}

// putPermissionMode: PUT /api/session/{id}/permission-mode {"mode"}. The
// mode is stored, then handed to the live process if there is one.
func (s *server) putPermissionMode(c *fiber.Ctx) error {
	id := param(c, "id")
	var req struct {
		Mode string `json:"mode"`
	}
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if !providers.ValidMode(req.Mode) {
		return badRequest("unknown permission mode %q: use one of %v", req.Mode, providers.PermissionModes)
	}
	ctx := c.UserContext()
	if _, err := s.Store.SetPermissionMode(ctx, id, req.Mode); err != nil {
		return storeError(err, id)
	}
	s.Runtime.SessionChanged(ctx, id)
	applied, err := s.Runtime.SetPermissionMode(ctx, id, req.Mode)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"session_id": id, "mode": req.Mode, "applied": applied})
}
