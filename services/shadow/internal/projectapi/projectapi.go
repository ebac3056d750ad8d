// Package projectapi serves the per-project settings kept in
// <data home>/projects/<hash>/project.json: GET and PUT /api/project/config
// and POST /api/project/rename, the project named by the query parameter
// cwd. The settings are the display name, extra ignore patterns for the
// shadow journal and a per-project override of the journal's size cap.
package projectapi

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/shadow/internal/journal"
	"github.com/svc-code/svc-code/services/shadow/internal/project"
)

// Deps is what the routes need.
type Deps struct {
	Store *project.Store
	// MaxFileMB is the server-wide size cap (for the effective value).
	MaxFileMB journal.SizeCap
	// Allow, when set, vets a cwd (the allowed roots) before anything is
	// read or created for it.
	Allow func(ctx context.Context, cwd string) error
}

type server struct{ Deps }

// Register adds the routes to app.
func Register(app *fiber.App, d Deps) {
	if d.MaxFileMB == nil {
		d.MaxFileMB = func(context.Context) int { return journal.DefaultMaxFileMB }
	}
	s := &server{d}
	app.Get("/api/project/config", s.get)
	app.Put("/api/project/config", s.put)
	app.Post("/api/project/rename", s.rename)
}

// Config is the answer of every route.
type Config struct {
	Path string `json:"path"`
	Hash string `json:"hash"`
	Name string `json:"name"`
	// Ignore: the project's extra ignore patterns (gitignore syntax).
	Ignore []string `json:"ignore"`
	// MaxFileSizeMB: the project's override of the size cap, null when the
	// server's value applies.
	MaxFileSizeMB *int `json:"max_file_size_mb"`
	// EffectiveMaxFileSizeMB: the cap the journal applies (0: none).
	EffectiveMaxFileSizeMB int `json:"effective_max_file_size_mb"`
	// DefaultIgnore: what the journal always skips.
	DefaultIgnore []string `json:"default_ignore"`
	// Journal: whether the project has a directory under the data home
	// yet (GET answers the defaults when it has not).
	Journal bool `json:"journal"`
}

func (s *server) answer(c *fiber.Ctx, p project.Project, m project.Meta, known bool) error {
	cfg := Config{
		Path: p.Path, Hash: p.Hash, Name: m.Name, Ignore: m.Ignore, MaxFileSizeMB: m.MaxFileSizeMB,
		EffectiveMaxFileSizeMB: s.MaxFileMB(c.UserContext()), DefaultIgnore: journal.DefaultIgnore, Journal: known,
	}
	if cfg.Ignore == nil {
		cfg.Ignore = []string{}
	}
	if m.MaxFileSizeMB != nil {
		cfg.EffectiveMaxFileSizeMB = *m.MaxFileSizeMB
	}
	return c.JSON(cfg)
}

func (s *server) cwd(c *fiber.Ctx) (string, error) {
	cwd := strings.Clone(c.Query("cwd"))
	if _, err := project.Resolve(cwd); err != nil {
		return "", err
	}
	if s.Allow != nil {
		if err := s.Allow(c.UserContext(), cwd); err != nil {
			return "", err
		}
	}
	return cwd, nil
}

func (s *server) get(c *fiber.Ctx) error {
	cwd, err := s.cwd(c)
	if err != nil {
		return err
	}
	p, m, err := s.Store.Known(cwd)
	if errors.Is(err, project.ErrUnknown) {
		p, err = s.Store.Of(cwd)
		if err != nil {
			return err
		}
		return s.answer(c, p, project.Meta{Path: p.Path, Hash: p.Hash, Name: defaultName(p.Path)}, false)
	}
	if err != nil {
		return err
	}
	return s.answer(c, p, m, true)
}

func defaultName(path string) string {
	i := strings.LastIndex(path, "/")
	if i < 0 || i == len(path)-1 {
		return path
	}
	return path[i+1:]
}

// putBody is PUT's body: each field present is set; max_file_size_mb null
// removes the override.
type putBody struct {
	Name          *string         `json:"name"`
	Ignore        *[]string       `json:"ignore"`
	MaxFileSizeMB json.RawMessage `json:"max_file_size_mb"`
}

func (s *server) put(c *fiber.Ctx) error {
	cwd, err := s.cwd(c)
	if err != nil {
		return err
	}
	var b putBody
	if err := svchttp.DecodeJSON(c, &b); err != nil {
		return err
	}
	var size *int
	clearSize := false
	if len(b.MaxFileSizeMB) > 0 {
		if string(b.MaxFileSizeMB) == "null" {
			clearSize = true
		} else {
			var n int
			if err := json.Unmarshal(b.MaxFileSizeMB, &n); err != nil {
				return protocol.Errorf(protocol.CodeBadRequest, "max_file_size_mb must be a whole number or null")
			}
			size = &n
		}
	}
	// Validate before anything is created for the project.
	check := project.Meta{Name: "x"}
	if b.Name != nil {
		check.Name = *b.Name
	}
	if b.Ignore != nil {
		check.Ignore = *b.Ignore
	}
	check.MaxFileSizeMB = size
	if err := check.Validate(); err != nil {
		return err
	}
	p, _, err := s.Store.Ensure(cwd)
	if err != nil {
		return err
	}
	m, err := s.Store.Update(p.Hash, func(m *project.Meta) error {
		if b.Name != nil {
			m.Name = strings.TrimSpace(*b.Name)
		}
		if b.Ignore != nil {
			m.Ignore = *b.Ignore
		}
		if size != nil {
			m.MaxFileSizeMB = size
		}
		if clearSize {
			m.MaxFileSizeMB = nil
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.answer(c, p, m, true)
}

type renameBody struct {
	Name string `json:"name"`
}

func (s *server) rename(c *fiber.Ctx) error {
	cwd, err := s.cwd(c)
	if err != nil {
		return err
	}
	var b renameBody
	if err := svchttp.DecodeJSON(c, &b); err != nil {
		return err
	}
	if err := (project.Meta{Name: b.Name}).Validate(); err != nil {
		return err
	}
	p, _, err := s.Store.Ensure(cwd)
	if err != nil {
		return err
	}
	m, err := s.Store.Update(p.Hash, func(m *project.Meta) error {
		m.Name = strings.TrimSpace(b.Name)
		return nil
	})
	if err != nil {
		return err
	}
	return s.answer(c, p, m, true)
}
