package query

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/analytics/internal/store"
)

// filtered checks the query of a filtered route (the filters and extra
// parameters, nothing else) and reads the filters.
func filtered(c *fiber.Ctx, extra ...string) (store.Filter, error) {
	if err := known(c, slices.Concat(filterParams, extra)...); err != nil {
		return store.Filter{}, err
	}
	return filter(c)
}

// filteredPage is filtered for a route that also takes limit (and extra
// parameters after it): the filters and the page size.
func filteredPage(c *fiber.Ctx, extra ...string) (store.Filter, int, error) {
	f, err := filtered(c, append([]string{"limit"}, extra...)...)
	if err != nil {
		return f, 0, err
	}
	n, err := limit(c)
	return f, n, err
}

// listTurns: GET /api/turns?session&project&model&tag&since&until&limit&cursor.
func (s *server) listTurns(c *fiber.Ctx) error {
	f, n, err := filteredPage(c, "cursor")
	if err != nil {
		return err
	}
	turns, next, err := s.st.ListTurns(c.Context(), f, n, c.Query("cursor"))
	if err != nil {
		return storeError(err)
	}
	if turns == nil {
		turns = []store.Turn{}
	}
	var nextCursor *string
	if next != "" {
		nextCursor = &next
	}
	return c.JSON(fiber.Map{"turns": turns, "next_cursor": nextCursor})
}

// getTurn: GET /api/turns/{id}.
func (s *server) getTurn(c *fiber.Ctx) error {
	if err := known(c); err != nil {
		return err
	}
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	t, err := s.st.GetTurn(c.Context(), id)
	if err != nil {
		return storeError(err)
	}
	if t.Tools == nil {
		t.Tools = []store.Tool{}
	}
	return c.JSON(struct {
		store.Turn
		Tools       []store.Tool `json:"tools"`
		Tags        []string     `json:"tags"`
		SessionTags []string     `json:"session_tags"`
	}{t, t.Tools, t.Tags, t.SessionTags})
}

// tagsBody is the body of the tag additions.
type tagsBody struct {
	Tags []string `json:"tags"`
}

func readTags(c *fiber.Ctx) ([]string, error) {
	var b tagsBody
	if err := svchttp.DecodeJSON(c, &b); err != nil {
		return nil, err
	}
	if len(b.Tags) == 0 || len(b.Tags) > store.MaxTags {
		return nil, badRequest("tags: want a list of 1 to %d tags", store.MaxTags)
	}
	for _, t := range b.Tags {
		if err := checkTag(t); err != nil {
			return nil, err
		}
	}
	return b.Tags, nil
}

// tagOp is the store step of a tag route, on the turn or session id.
type tagOp func(ctx context.Context, id string) ([]string, error)

// tagRoute answers a tag route of a turn (kind "turn_id") or a session
// ("session_id"): no query parameters, the {id} path parameter, then the
// tags after op as {kind: id, "tags": [...]}.
func tagRoute(c *fiber.Ctx, kind string, op tagOp) error {
	if err := known(c); err != nil {
		return err
	}
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	tags, err := op(c.Context(), id)
	if err != nil {
		return storeError(err)
	}
	return c.JSON(fiber.Map{kind: id, "tags": tags})
}

// addTags is the op of a POST tag route: it adds the body's tags.
func addTags(c *fiber.Ctx, add func(ctx context.Context, id string, tags []string) ([]string, error)) tagOp {
	return func(ctx context.Context, id string) ([]string, error) {
		tags, err := readTags(c)
		if err != nil {
			return nil, err
		}
		return add(ctx, id, tags)
	}
}

// removeTag is the op of a DELETE tag route: it removes the {tag} path
// parameter.
func removeTag(c *fiber.Ctx, remove func(ctx context.Context, id, tag string) ([]string, error)) tagOp {
	return func(ctx context.Context, id string) ([]string, error) {
		tag, err := param(c, "tag")
		if err != nil {
			return nil, err
		}
		return remove(ctx, id, tag)
	}
}

// turnTags: GET /api/turns/{id}/tags.
func (s *server) turnTags(c *fiber.Ctx) error {
	return tagRoute(c, "turn_id", s.st.TurnTags)
}

// addTurnTags: POST /api/turns/{id}/tags {"tags": [...]}.
func (s *server) addTurnTags(c *fiber.Ctx) error {
	return tagRoute(c, "turn_id", addTags(c, s.st.AddTurnTags))
}

// removeTurnTag: DELETE /api/turns/{id}/tags/{tag}.
func (s *server) removeTurnTag(c *fiber.Ctx) error {
	return tagRoute(c, "turn_id", removeTag(c, s.st.RemoveTurnTag))
}

// sessionTags: GET /api/turns/sessions/{id}/tags.
func (s *server) sessionTags(c *fiber.Ctx) error {
	return tagRoute(c, "session_id", s.st.SessionTags)
}

// addSessionTags: POST /api/turns/sessions/{id}/tags {"tags": [...]}.
func (s *server) addSessionTags(c *fiber.Ctx) error {
	return tagRoute(c, "session_id", addTags(c, s.st.AddSessionTags))
}

// removeSessionTag: DELETE /api/turns/sessions/{id}/tags/{tag}.
func (s *server) removeSessionTag(c *fiber.Ctx) error {
	return tagRoute(c, "session_id", removeTag(c, s.st.RemoveSessionTag))
}

// allTags: GET /api/turns/tags.
func (s *server) allTags(c *fiber.Ctx) error {
	if err := known(c); err != nil {
		return err
	}
	tags, err := s.st.AllTags(c.Context())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"tags": tags})
}

// stats: GET /api/shadow-db.
func (s *server) stats(c *fiber.Ctx) error {
	if err := known(c); err != nil {
		return err
	}
	st, err := s.st.Stats(c.Context())
	if err != nil {
		return err
	}
	return c.JSON(st)
}

// schema: GET /api/shadow-db/schema.
func (s *server) schema(c *fiber.Ctx) error {
	if err := known(c); err != nil {
		return err
	}
	return c.JSON(schemaAnswer{Tables: schemaTables()})
}

// costs: GET /api/costs?filters.
func (s *server) costs(c *fiber.Ctx) error {
	f, err := filtered(c)
	if err != nil {
		return err
	}
	sum, err := s.st.Costs(c.Context(), f)
	if err != nil {
		return err
	}
	return c.JSON(sum)
}

// sessionCosts: GET /api/costs/sessions?filters&limit.
func (s *server) sessionCosts(c *fiber.Ctx) error {
	f, n, err := filteredPage(c)
	if err != nil {
		return err
	}
	out, err := s.st.SessionCosts(c.Context(), f, n)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"sessions": out})
}

// toolCosts: GET /api/costs/tools?filters.
func (s *server) toolCosts(c *fiber.Ctx) error {
	f, err := filtered(c)
	if err != nil {
		return err
	}
	out, err := s.st.ToolCosts(c.Context(), f)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"tools": out})
}

// trendsDefaultDays is the span of /api/costs/trends without since.
const trendsDefaultDays = 30

// trends: GET /api/costs/trends?filters (since defaults to 30 days ago).
func (s *server) trends(c *fiber.Ctx) error {
	f, err := filtered(c)
	if err != nil {
		return err
	}
	if f.Since.IsZero() {
		y, m, d := s.now().UTC().AddDate(0, 0, -trendsDefaultDays+1).Date()
		f.Since = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		if !f.Until.IsZero() && !f.Since.Before(f.Until) {
			return badRequest("until is more than %d days ago: pass since too", trendsDefaultDays)
		}
	}
	out, err := s.st.Trends(c.Context(), f)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"since": f.Since, "trends": out})
}

// maxSearchLen bounds the search text.
const maxSearchLen = 1000

// searchPrompts: GET /api/prompts/search?q&filters&limit.
func (s *server) searchPrompts(c *fiber.Ctx) error {
	if err := known(c, append(filterParams, "q", "limit")...); err != nil {
		return err
	}
	q := c.Query("q")
	if strings.TrimSpace(q) == "" || len(q) > maxSearchLen || !utf8.ValidString(q) || strings.IndexByte(q, 0) >= 0 {
		return badRequest("q: want search words (1 to %d bytes)", maxSearchLen)
	}
	f, err := filter(c)
	if err != nil {
		return err
	}
	n, err := limit(c)
	if err != nil {
		return err
	}
	out, err := s.st.SearchPrompts(c.Context(), q, f, n)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"prompts": out})
}

// recentPrompts: GET /api/prompts/recent?filters&limit.
func (s *server) recentPrompts(c *fiber.Ctx) error {
	f, n, err := filteredPage(c)
	if err != nil {
		return err
	}
	out, err := s.st.RecentPrompts(c.Context(), f, n)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"prompts": out})
}

// frequentPrompts: GET /api/prompts/frequent?filters&limit.
func (s *server) frequentPrompts(c *fiber.Ctx) error {
	f, n, err := filteredPage(c)
	if err != nil {
		return err
	}
	out, err := s.st.FrequentPrompts(c.Context(), f, n)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"prompts": out})
}

// promptStats: GET /api/prompts/stats?filters.
func (s *server) promptStats(c *fiber.Ctx) error {
	f, err := filtered(c)
	if err != nil {
		return err
	}
	out, err := s.st.PromptStats(c.Context(), f)
	if err != nil {
		return err
	}
	return c.JSON(out)
}
