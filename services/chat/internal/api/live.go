package api

import (
	"slices"

	"github.com/gofiber/fiber/v2"
)

// stopSession: POST /api/session/{id}/stop interrupts the running turn
// (on whichever instance runs it); every socket of the session gets
// `stopped`.
func (s *server) stopSession(c *fiber.Ctx) error {
	id := param(c, "id")
	ctx := c.UserContext()
	if _, err := s.Store.Get(ctx, id); err != nil {
		return storeError(err, id)
	}
	outcome, err := s.Runtime.Stop(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"session_id": id, "stopped": true, "outcome": outcome})
}

// activeSessions: GET /api/active-sessions lists the sessions with a live
// agent process or a running turn, on any instance.
func (s *server) activeSessions(c *fiber.Ctx) error {
	ids, err := s.Runtime.Active(c.UserContext())
	if err != nil {
		return err
	}
	if ids == nil {
		ids = []string{}
	}
	slices.Sort(ids)
	return c.JSON(fiber.Map{"sessions": ids})
}
