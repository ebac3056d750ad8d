package catalog

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
)

// Deps is what the routes need.
type Deps struct {
	Catalog *Catalog
	Log     *slog.Logger
}

type server struct{ Deps }

// Register adds the catalog routes to app.
func Register(app *fiber.App, d Deps) {
	s := &server{d}
	app.Get("/api/commands", s.listCommands)
	app.Post("/api/commands", s.createCommand)
	app.Get("/api/commands/:name", s.getCommand)
	app.Put("/api/commands/:name", s.updateCommand)
	app.Delete("/api/commands/:name", s.deleteCommand)
	app.Get("/api/agents", s.list("agents", s.Catalog.Agents))
	app.Get("/api/skills", s.list("skills", s.Catalog.Skills))
	app.Get("/api/plugins", s.plugins)
}

func badRequest(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeBadRequest, format, args...)
}

// projectDir checks a project directory (the query or body field cwd):
// "" (none) or an absolute path of an existing directory, cleaned.
func projectDir(cwd string) (string, error) {
	if cwd == "" {
		return "", nil
	}
	if !filepath.IsAbs(cwd) {
		return "", badRequest("cwd %q: want an absolute path", cwd)
	}
	cwd = filepath.Clean(cwd)
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return "", badRequest("cwd %q: not an existing directory", cwd)
	}
	return cwd, nil
}

// editError maps the catalog's errors to the envelope.
func editError(err error) error {
	switch {
	case errors.Is(err, ErrInvalid):
		return badRequest("%s", err.Error())
	case errors.Is(err, ErrNotFound):
		return protocol.Errorf(protocol.CodeNotFound, "%s", err.Error())
	case errors.Is(err, ErrOutside):
		return protocol.Errorf(protocol.CodeForbidden, "%s", err.Error())
	case errors.Is(err, ErrExists):
		return protocol.Errorf(protocol.CodeConflict, "%s: edit it with PUT or pick another name", err.Error())
	}
	return err
}

// summaries drops the contents of listed entries.
func summaries(entries []Entry) []Entry {
	if entries == nil {
		return []Entry{}
	}
	for i := range entries {
		entries[i].Content = nil
	}
	return entries
}

func (s *server) listCommands(c *fiber.Ctx) error {
	cwd, err := projectDir(c.Query("cwd"))
	if err != nil {
		return err
	}
	provider := c.Query("provider")
	if provider != "" && provider != "claude" && provider != "codex" {
		return badRequest("provider %q: use claude or codex", provider)
	}
	all, err := s.Catalog.Commands(cwd)
	if err != nil {
		return err
	}
	out := all[:0]
	for _, e := range all {
		if provider == "" || e.Provider == provider {
			out = append(out, e)
		}
	}
	return c.JSON(fiber.Map{"commands": summaries(out)})
}

func (s *server) list(key string, read func(cwd string) ([]Entry, error)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		cwd, err := projectDir(c.Query("cwd"))
		if err != nil {
			return err
		}
		entries, err := read(cwd)
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{key: summaries(entries)})
	}
}

func (s *server) plugins(c *fiber.Ctx) error {
	cwd, err := projectDir(c.Query("cwd"))
	if err != nil {
		return err
	}
	plugins, err := s.Catalog.Plugins(cwd)
	if errors.Is(err, ErrRegistry) {
		// The user's file, not a failure of the request: say what is wrong.
		return c.JSON(fiber.Map{"plugins": []Plugin{}, "error": err.Error()})
	}
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"plugins": plugins})
}

// scopeOf reads the scope of a single-command route, required.
func scopeOf(scope string) (string, error) {
	switch scope {
	case ScopePersonal, ScopeProject, ScopeCodex:
		return scope, nil
	case "":
		return "", badRequest("scope is required: %q, %q or %q", ScopePersonal, ScopeProject, ScopeCodex)
	}
	return "", badRequest("scope %q: use %q, %q or %q", scope, ScopePersonal, ScopeProject, ScopeCodex)
}

// target reads the scope, cwd and name of a single-command request.
func target(scope, cwd, name string) (string, string, error) {
	scope, err := scopeOf(scope)
	if err != nil {
		return "", "", err
	}
	cwd, err = projectDir(cwd)
	if err != nil {
		return "", "", err
	}
	if scope == ScopeProject && cwd == "" {
		return "", "", badRequest("cwd is required for the project scope")
	}
	if err := ValidName(scope, name); err != nil {
		return "", "", badRequest("%s", err.Error())
	}
	return scope, cwd, nil
}

func (s *server) getCommand(c *fiber.Ctx) error {
	name := string([]byte(c.Params("name")))
	scope, cwd, err := target(c.Query("scope"), c.Query("cwd"), name)
	if err != nil {
		return err
	}
	e, err := s.Catalog.Command(scope, cwd, name)
	if err != nil {
		return editError(err)
	}
	return c.JSON(e)
}

// commandBody is the body of POST and PUT /api/commands.
type commandBody struct {
	Scope   string  `json:"scope"`
	Cwd     string  `json:"cwd"`
	Name    string  `json:"name"` // POST only
	Content *string `json:"content"`
}

func (s *server) createCommand(c *fiber.Ctx) error {
	var b commandBody
	if err := svchttp.DecodeJSON(c, &b); err != nil {
		return err
	}
	if b.Name == "" {
		return badRequest("name is required")
	}
	scope, cwd, err := target(b.Scope, b.Cwd, b.Name)
	if err != nil {
		return err
	}
	if b.Content == nil {
		return badRequest("content is required")
	}
	e, err := s.Catalog.CreateCommand(scope, cwd, b.Name, *b.Content)
	if err != nil {
		return editError(err)
	}
	s.Log.InfoContext(c.UserContext(), "command created", "scope", scope, "name", b.Name, "path", e.Path)
	return c.Status(fiber.StatusCreated).JSON(e)
}

func (s *server) updateCommand(c *fiber.Ctx) error {
	name := string([]byte(c.Params("name")))
	var b commandBody
	if err := svchttp.DecodeJSON(c, &b); err != nil {
		return err
	}
	if b.Name != "" && b.Name != name {
		return badRequest("name %q differs from the path's %q: renaming is not supported", b.Name, name)
	}
	scope, cwd, err := target(b.Scope, b.Cwd, name)
	if err != nil {
		return err
	}
	if b.Content == nil {
		return badRequest("content is required")
	}
	e, err := s.Catalog.UpdateCommand(scope, cwd, name, *b.Content)
	if err != nil {
		return editError(err)
	}
	s.Log.InfoContext(c.UserContext(), "command updated", "scope", scope, "name", name, "path", e.Path)
	return c.JSON(e)
}

func (s *server) deleteCommand(c *fiber.Ctx) error {
	name := string([]byte(c.Params("name")))
	scope, cwd, err := target(c.Query("scope"), c.Query("cwd"), name)
	if err != nil {
		return err
	}
	path, err := s.Catalog.DeleteCommand(scope, cwd, name)
	if err != nil {
		return editError(err)
	}
	s.Log.InfoContext(c.UserContext(), "command deleted", "scope", scope, "name", name, "path", path)
	return c.JSON(fiber.Map{"ok": true, "name": name, "scope": scope, "path": path})
}
