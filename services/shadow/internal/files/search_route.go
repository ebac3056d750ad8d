package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/shadow/internal/search"
)

// SearchTimeout bounds one search.
const SearchTimeout = 30 * time.Second

// searchJSON is the answer of GET /api/search.
type searchJSON struct {
	Path string `json:"path"`
	search.Result
}

func (s *server) search(c *fiber.Ctx) error {
	q := search.Query{
		Pattern: query(c, "q"),
		Case:    search.Case(query(c, "case")),
		Include: queryList(c, "include"),
		Exclude: queryList(c, "exclude"),
	}
	if q.Pattern == "" {
		return badRequest("the q parameter (what to search for) is required")
	}
	var err error
	if q.Regex, err = queryBool(c, "regex", false); err != nil {
		return err
	}
	if v := c.Query("max_results"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > search.MaxMaxResults {
			return badRequest("max_results must be 1 to %d", search.MaxMaxResults)
		}
		q.MaxResults = n
	}
	// The project is cwd, as on every project-scoped route; path, when
	// given, is the directory to search (a part of the project, or any
	// directory inside the roots).
	dir := query(c, "path")
	if dir == "" {
		dir = query(c, "cwd")
	}
	if dir == "" {
		return badRequest("the cwd parameter (the project directory, absolute) or path (a directory) is required")
	}
	shown, resolved, err := s.resolve(c.UserContext(), dir)
	if err != nil {
		return err
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return pathError(err, shown)
	}
	if !fi.IsDir() {
		return badRequest("%s is not a directory: search a directory", shown)
	}
	q.Root = resolved
	denied := s.Roots.Denied()
	q.Private = func(abs string, isDir bool) bool {
		return denied.Path(abs) || !isDir && denied.LinkedPath(abs)
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), SearchTimeout)
	defer cancel()
	res, err := s.Searcher.Search(ctx, q, query(c, "engine"))
	switch {
	case errors.Is(err, search.ErrInvalid):
		return badRequest("%s", strings.TrimPrefix(err.Error(), search.ErrInvalid.Error()+": "))
	case errors.Is(err, context.DeadlineExceeded):
		return &protocol.Error{Code: protocol.CodeTimeout, Status: fiber.StatusGatewayTimeout, Message: "the search took longer than " + SearchTimeout.String() + ": narrow it with path or include"}
	case err != nil:
		return err
	}
	// The matches carry resolved paths; show them under the path asked.
	if shown != resolved {
		for i := range res.Matches {
			if rel, err := filepath.Rel(resolved, res.Matches[i].Path); err == nil {
				res.Matches[i].Path = filepath.Join(shown, rel)
			}
		}
	}
	return c.JSON(searchJSON{Path: shown, Result: res})
}
