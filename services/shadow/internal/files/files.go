// Package files is shadow's HTTP surface over the user's files: listing,
// reading and writing text files, content search, raw bytes with ranges,
// the /view page, the local HTML renderer and the URL viewer proxy.
//
// Every path goes through roots.Resolver before anything touches it, and
// only the resolved path is used afterwards. Every answer that a browser
// may render (raw bytes, /view, rendered HTML, proxied pages) carries a
// sandboxing Content-Security-Policy, so a file or page can never run
// script with the server's origin.
package files

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"strings"
	"syscall"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/shadow/internal/browser"
	"github.com/svc-code/svc-code/services/shadow/internal/roots"
	"github.com/svc-code/svc-code/services/shadow/internal/search"
)

// Limits of the file routes.
const (
	// MaxTextBytes bounds what /api/file reads and /api/file/write writes,
	// and the text and images /view shows inline.
	MaxTextBytes = 5 << 20
	// MaxEntries bounds one directory listing.
	MaxEntries = 10000
)

// Deps is what the routes need.
type Deps struct {
	Roots    *roots.Resolver
	Searcher *search.Searcher
	// Fetcher serves /api/browser/proxy; nil means the production one
	// (public addresses only).
	Fetcher *browser.Fetcher
	Log     *slog.Logger
}

type server struct {
	Deps
	locks *pathLocks
}

// Register adds the routes to app.
func Register(app *fiber.App, d Deps) {
	if d.Searcher == nil {
		d.Searcher = search.New()
	}
	if d.Fetcher == nil {
		d.Fetcher = browser.NewFetcher(browser.Options{})
	}
	s := &server{Deps: d, locks: newPathLocks()}
	engine := search.EngineGo
	if d.Searcher.Rg != "" {
		engine = search.EngineRipgrep + " (" + d.Searcher.Rg + ")"
	}
	if d.Log != nil {
		d.Log.Info("file routes ready", "search_engine", engine)
	}
	app.Get("/api/files/roots", s.listRoots)
	app.Get("/api/files", s.listDir)
	app.Get("/api/file", s.readFile)
	app.Post("/api/file/write", s.writeFile)
	app.Post("/api/file/upload", s.uploadFile)
	app.Get("/api/file-raw", s.rawFile)
	app.Get("/api/search", s.search)
	app.Get("/view", s.view)
	app.Get("/api/browser/render", s.render)
	app.Get("/api/browser/proxy", s.proxy)
}

func badRequest(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeBadRequest, format, args...)
}

// query copies a query parameter out of fasthttp's reused buffer. fasthttp
// has percent-decoded it, once.
func query(c *fiber.Ctx, name string) string {
	return strings.Clone(c.Query(name))
}

// queryList is a repeated parameter, each value also split on commas.
func queryList(c *fiber.Ctx, name string) []string {
	var out []string
	for _, v := range c.Context().QueryArgs().PeekMulti(name) {
		for _, part := range strings.Split(string(v), ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// queryBool reads a boolean parameter: absent gives def.
func queryBool(c *fiber.Ctx, name string, def bool) (bool, error) {
	switch v := c.Query(name); v {
	case "":
		return def, nil
	case "1", "true", "yes":
		return true, nil
	case "0", "false", "no":
		return false, nil
	default:
		return false, badRequest("%s must be true or false, not %q", name, v)
	}
}

// resolve checks the path parameter and returns it cleaned (as the client
// named it, a leading ~ expanded) and resolved (what to touch).
func (s *server) resolve(ctx context.Context, p string) (clean, resolved string, err error) {
	if p == "" {
		return "", "", badRequest("the path parameter is required (an absolute path)")
	}
	resolved, err = s.Roots.Resolve(ctx, p)
	if err != nil {
		return "", "", pathError(err, p)
	}
	clean, _ = roots.Clean(s.Roots.Expand(p))
	return clean, resolved, nil
}

// pathError maps a resolution or file system error to the envelope.
func pathError(err error, p string) error {
	switch {
	case errors.Is(err, roots.ErrPrivate):
		return protocol.Errorf(protocol.CodeForbidden, "svc-code keeps its secrets there (its config directory, data home or key files): no file route reaches them")
	case errors.Is(err, roots.ErrInvalid):
		return badRequest("bad path: %s", strings.TrimPrefix(err.Error(), roots.ErrInvalid.Error()+": "))
	case errors.Is(err, roots.ErrForbidden):
		return protocol.Errorf(protocol.CodeForbidden, "the path is outside the allowed roots")
	case errors.Is(err, fs.ErrNotExist):
		return protocol.Errorf(protocol.CodeNotFound, "no such file or directory: %s", p)
	case errors.Is(err, syscall.ELOOP):
		return badRequest("too many levels of symbolic links: %s", p)
	case errors.Is(err, syscall.ENOTDIR):
		return protocol.Errorf(protocol.CodeNotFound, "no such file or directory (a parent is a file): %s", p)
	case errors.Is(err, fs.ErrPermission):
		return protocol.Errorf(protocol.CodeForbidden, "permission denied: %s", p)
	}
	return err
}
