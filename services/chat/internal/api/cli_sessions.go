package api

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/chat/internal/clisessions"
	"github.com/svc-code/svc-code/services/chat/internal/providers"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// Bounds of the CLI session routes.
const (
	DefaultCLIListLimit = 50
	MaxCLIListLimit     = 500
	DefaultCLIPage      = 200
	MaxCLIPage          = 2000
	MaxCLIWait          = 30
)

// registerCLI adds the CLI session routes (docs/api.md "CLI sessions").
func (s *server) registerCLI(app *fiber.App) {
	app.Get("/api/cli-sessions", s.listCLISessions)
	app.Get("/api/cli-sessions/:provider/:id", s.getCLISession)
	app.Get("/api/cli-sessions/:provider/:id/messages", s.cliMessages)
	app.Post("/api/cli-sessions/:provider/:id/continue", s.continueCLISession)
}

// svcProvider is the svc-code provider that runs a CLI's sessions.
func svcProvider(cli string) string {
	if cli == protocol.CLIProviderCodex {
		return providers.AppServer
	}
	return providers.AgentSDK
}

// cliProvider is the CLI of an svc-code provider: the other way round.
func cliProvider(svc string) string {
	if svc == providers.AppServer {
		return protocol.CLIProviderCodex
	}
	return protocol.CLIProviderClaude
}

// cliDisplayName is the CLI's name for people.
func cliDisplayName(cli string) string {
	if cli == protocol.CLIProviderCodex {
		return "Codex"
	}
	return "Claude Code"
}

func cliError(err error, provider, id string) error {
	switch {
	case errors.Is(err, clisessions.ErrBadProvider):
		return badRequest("provider %q: want claude or codex", provider)
	case errors.Is(err, clisessions.ErrBadID):
		return badRequest("session id %q: want letters, digits, '-' and '_' only", id)
	case errors.Is(err, clisessions.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return protocol.Errorf(protocol.CodeNotFound, "no %s session %q", provider, id)
	case errors.Is(err, clisessions.ErrChanged):
		return protocol.Errorf(protocol.CodeConflict, "the transcript of %s session %q changed (it shrank or was replaced): read it again from its end", provider, id)
	}
	return err
}

func queryInt(c *fiber.Ctx, name string, def, lo, hi int) (int, error) {
	raw := c.Query(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s %q: want a number from %d to %d", name, raw, lo, hi)
	}
	return n, nil
}

func queryOffset(c *fiber.Ctx, name string) (int64, bool, error) {
	raw := c.Query(name)
	if raw == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return 0, false, badRequest("%s %q: want a byte offset, 0 or more", name, raw)
	}
	return n, true, nil
}

// link fills the svc_session_id of sessions.
func (s *server) link(c *fiber.Ctx, sessions []protocol.CLISession) error {
	byProvider := map[string][]string{}
	for _, e := range sessions {
		byProvider[e.Provider] = append(byProvider[e.Provider], e.ID)
	}
	for p, ids := range byProvider {
		m, err := s.Store.SessionsByProviderSession(c.UserContext(), svcProvider(p), ids)
		if err != nil {
			return err
		}
		for i := range sessions {
			if sessions[i].Provider == p {
				sessions[i].SvcSessionID = m[sessions[i].ID]
			}
		}
	}
	return nil
}

// listCLISessions: GET /api/cli-sessions?provider&q&limit&offset.
func (s *server) listCLISessions(c *fiber.Ctx) error {
	provider := c.Query("provider")
	if provider != "" && !clisessions.ValidProvider(provider) {
		return cliError(clisessions.ErrBadProvider, provider, "")
	}
	limit, err := queryInt(c, "limit", DefaultCLIListLimit, 1, MaxCLIListLimit)
	if err != nil {
		return err
	}
	offset, err := queryInt(c, "offset", 0, 0, 1<<30)
	if err != nil {
		return err
	}
	entries, err := s.CLI.List(provider)
	if err != nil {
		return err
	}
	page, total := clisessions.Select(entries, clisessions.Query{Text: c.Query("q"), Limit: limit, Offset: offset})
	out := protocol.CLISessionList{Sessions: make([]protocol.CLISession, 0, len(page)), Total: total}
	for _, e := range page {
		out.Sessions = append(out.Sessions, e.Session())
	}
	if err := s.link(c, out.Sessions); err != nil {
		return err
	}
	return c.JSON(out)
}

// findCLI validates the path's provider and id, then finds the file.
func (s *server) findCLI(c *fiber.Ctx) (clisessions.Entry, error) {
	provider, id := param(c, "provider"), param(c, "id")
	e, err := s.CLI.Find(provider, id)
	if err != nil {
		return e, cliError(err, provider, id)
	}
	return e, nil
}

func (s *server) cliSessionJSON(c *fiber.Ctx, e clisessions.Entry) (protocol.CLISession, error) {
	one := []protocol.CLISession{e.Session()}
	if err := s.link(c, one); err != nil {
		return protocol.CLISession{}, err
	}
	one[0].File = e.File
	return one[0], nil
}

// getCLISession: GET /api/cli-sessions/{provider}/{id}.
func (s *server) getCLISession(c *fiber.Ctx) error {
	e, err := s.findCLI(c)
	if err != nil {
		return err
	}
	out, err := s.cliSessionJSON(c, e)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// cliMessages: GET /api/cli-sessions/{provider}/{id}/messages, with
// ?before=<offset>&limit (a page backwards, default from the end) or
// ?after=<offset>&wait=<seconds>&limit (what follows, waiting for it).
func (s *server) cliMessages(c *fiber.Ctx) error {
	provider, id := param(c, "provider"), param(c, "id")
	if !clisessions.ValidProvider(provider) {
		return cliError(clisessions.ErrBadProvider, provider, id)
	}
	if !clisessions.ValidID(id) {
		return cliError(clisessions.ErrBadID, provider, id)
	}
	before, hasBefore, err := queryOffset(c, "before")
	if err != nil {
		return err
	}
	after, hasAfter, err := queryOffset(c, "after")
	if err != nil {
		return err
	}
	if hasBefore && hasAfter {
		return badRequest("send before or after, not both")
	}
	limit, err := queryInt(c, "limit", DefaultCLIPage, 1, MaxCLIPage)
	if err != nil {
		return err
	}
	wait, err := queryInt(c, "wait", 0, 0, MaxCLIWait)
	if err != nil {
		return err
	}
	if wait > 0 && !hasAfter {
		return badRequest("wait goes with after")
	}
	e, err := s.CLI.Find(provider, id)
	if err != nil {
		return cliError(err, provider, id)
	}
	var page clisessions.Page
	if hasAfter {
		ctx, cancel := context.WithCancel(c.UserContext())
		defer cancel()
		if s.Ctx != nil {
			defer context.AfterFunc(s.Ctx, cancel)()
		}
		page, err = s.CLIReader.After(ctx, e.Path, after, limit, clisessions.DefaultMaxBytes, time.Duration(wait)*time.Second)
	} else {
		if !hasBefore {
			before = -1
		}
		page, err = s.CLIReader.Before(e.Path, before, limit, clisessions.DefaultMaxBytes)
	}
	if err != nil {
		return cliError(err, provider, id)
	}
	out := protocol.CLIMessages{
		Messages: make([]protocol.LogMessage, 0, len(page.Lines)),
		Start:    page.Start, End: page.End, Size: page.Size, HasMoreBefore: page.HasMoreBefore,
	}
	for _, l := range page.Lines {
		r := clisessions.Convert(provider, id, e.File, l.Text, l.Number)
		at := r.Time
		if at.IsZero() {
			at = e.ModTime
		}
		out.Messages = append(out.Messages, protocol.LogMessage{
			SID: id + ":" + strconv.FormatInt(l.Number, 10), Line: l.Number, Kind: r.Kind,
			Payload: r.Payload, CreatedAt: at.UTC(),
		})
	}
	return c.JSON(out)
}

// continueCLISession: POST /api/cli-sessions/{provider}/{id}/continue,
// body {} or {"title"}: an svc-code session in the CLI session's project
// whose first turn resumes it (Claude Code --resume, Codex thread/resume).
// When an svc-code session runs it already, that one is the answer (200).
func (s *server) continueCLISession(c *fiber.Ctx) error {
	var req protocol.CLIContinueRequest
	if len(c.Body()) > 0 {
		if err := svchttp.DecodeJSON(c, &req); err != nil {
			return err
		}
	}
	if req.Title != nil {
		if err := validTitle(*req.Title); err != nil {
			return err
		}
	}
	e, err := s.findCLI(c)
	if err != nil {
		return err
	}
	cli, err := s.cliSessionJSON(c, e)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if cli.SvcSessionID != "" {
		sess, err := s.Store.Get(ctx, cli.SvcSessionID)
		if err == nil {
			return c.JSON(protocol.CLIContinueResponse{Session: s.sessionJSON(ctx, sess), CLISession: cli, Existing: true})
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	if e.Project == "" {
		return protocol.Errorf(protocol.CodeConflict, "the transcript does not say which directory the CLI ran in: it cannot be continued here")
	}
	if info, err := os.Stat(e.Project); err != nil || !info.IsDir() {
		return protocol.Errorf(protocol.CodeConflict, "the session's project directory %s is not an existing directory", e.Project)
	}
	title := e.Title
	if req.Title != nil {
		title = *req.Title
	}
	n := store.NewSession{Cwd: e.Project, Provider: svcProvider(e.Provider), Title: title, ProviderSessionID: e.ID, CLISessionID: e.ID}
	if err := providers.FillNewSession(ctx, s.Store, &n); err != nil {
		return err
	}
	sess, err := s.Store.Create(ctx, n)
	if err != nil {
		return err
	}
	s.Runtime.SessionChanged(ctx, sess.ID)
	cli.SvcSessionID = sess.ID
	return c.Status(fiber.StatusCreated).JSON(protocol.CLIContinueResponse{Session: s.sessionJSON(ctx, sess), CLISession: cli})
}
