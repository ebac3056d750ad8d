package api

import (
	"github.com/gofiber/fiber/v2"
)

// threadJSON is a session of the family with its place in it.
type threadJSON struct {
	sessionJSON
	// Relation is "self", "ancestor", "fork" (a descendant still in use)
	// or "archived" (a descendant kept by clear_session).
	Relation string `json:"relation"`
	Depth    int    `json:"depth"`
}

// threads: GET /api/session/{id}/threads, the conversation family of a
// session: what it was forked or archived from, itself, and what was
// forked or archived from it, oldest first.
func (s *server) threads(c *fiber.Ctx) error {
	id := param(c, "id")
	family, err := s.Store.Threads(c.UserContext(), id)
	if err != nil {
		return storeError(err, id)
	}
	out := make([]threadJSON, 0, len(family))
	for _, t := range family {
		rel := "self"
		switch {
		case t.Depth < 0:
			rel = "ancestor"
		case t.Depth > 0 && t.Archived:
			rel = "archived"
		case t.Depth > 0:
			rel = "fork"
		}
		out = append(out, threadJSON{sessionJSON: s.sessionJSON(c.UserContext(), t.Session), Relation: rel, Depth: t.Depth})
	}
	return c.JSON(fiber.Map{"session_id": id, "threads": out})
}
