package server

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/termhosts"
)

// terminalTarget picks the terminal host for a request. With no host in the
// registry (a single host, or one started without Redis registration) the
// configured TERMINAL_URL serves everything. Otherwise a session's requests
// go to the live host that holds it, and a new session (or one whose host
// died) to the least loaded live host, told which host was lost.
func (s *Server) terminalTarget(c *fiber.Ctx) (target string, headers map[string]string, err error) {
	if s.d.Terminals == nil {
		return s.d.Backends["terminal"], nil, nil
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	h, lostOn, err := s.d.Terminals.Route(ctx, terminalSession(c))
	switch {
	case errors.Is(err, termhosts.ErrNoHost):
		return s.d.Backends["terminal"], nil, nil
	case err != nil:
		s.d.Log.Warn("terminal_registry_failed", "err", err)
		return "", nil, &protocol.Error{Code: protocol.CodeUnavailable, Message: "the terminal host registry is not reachable", Status: fiber.StatusBadGateway}
	}
	target, err = hostPort(h.URL)
	if err != nil {
		return "", nil, err
	}
	if lostOn != "" {
		headers = map[string]string{protocol.HeaderTerminalLostHost: lostOn}
	}
	return target, headers, nil
}

// terminalSession is the session a terminal request is about:
// /ws/terminal?session=X, /api/terminal/X; "" for the others.
func terminalSession(c *fiber.Ctx) string {
	if c.Path() == "/ws/terminal" {
		return c.Query("session")
	}
	if id, ok := strings.CutPrefix(c.Path(), "/api/terminal/"); ok && !strings.Contains(id, "/") {
		return id
	}
	return ""
}

func hostPort(u string) (string, error) {
	rest, ok := strings.CutPrefix(u, "http://")
	if !ok || rest == "" || strings.ContainsAny(rest, "/?#") {
		return "", &protocol.Error{Code: protocol.CodeUnavailable, Message: "a terminal host announced an unusable address", Status: fiber.StatusBadGateway}
	}
	return rest, nil
}
