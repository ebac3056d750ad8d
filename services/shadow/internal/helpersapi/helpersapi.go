// Package helpersapi serves the install and freshness routes of svc-code's
// companion helpers (shadow-git, shadow-query, the shadow-git-helper agent
// template), which deploy/helpers packages:
//
//	GET  /api/app/helpers/status   per-file install and freshness state, by content hash
//	POST /api/app/helpers/install  installs every helper in update mode (local edits replaced)
//
// The helpers go to the home directory of the user shadow runs as, as
// deploy/helpers/install.sh puts them.
package helpersapi

import (
	"bytes"
	"log/slog"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/deploy/helpers"
	"github.com/svc-code/svc-code/libs/protocol"
)

// Deps is what the routes need.
type Deps struct {
	// Targets are where the helpers are installed
	// (helpers.DefaultTargets for the service's user).
	Targets helpers.Targets
	Log     *slog.Logger
}

// Register adds the helper routes to app.
func Register(app *fiber.App, d Deps) {
	app.Get("/api/app/helpers/status", func(c *fiber.Ctx) error {
		st, err := helpers.CheckStatus(d.Targets)
		if err != nil {
			return err
		}
		return c.JSON(st)
	})
	app.Post("/api/app/helpers/install", func(c *fiber.Ctx) error {
		// No options: the install always replaces. An empty body or {} is
		// accepted; anything else is a mistake worth reporting.
		if b := bytes.TrimSpace(c.Body()); len(b) > 0 && !bytes.Equal(b, []byte("{}")) {
			return protocol.Errorf(protocol.CodeBadRequest, "this route takes no body (or {}): it always installs in update mode")
		}
		st, err := helpers.Install(d.Targets)
		if err != nil {
			return err
		}
		d.Log.InfoContext(c.UserContext(), "helpers installed", "bin_dir", d.Targets.BinDir, "agents_dir", d.Targets.AgentsDir)
		return c.JSON(st)
	})
}
