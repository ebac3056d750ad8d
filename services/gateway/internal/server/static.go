package server

import (
	"io/fs"
	"mime"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/web"
)

// static serves the embedded public assets; "/" is the landing page. The
// authentication middleware has already decided who may see what.
func (s *Server) static(c *fiber.Ctx) error {
	if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		return protocol.Errorf(protocol.CodeNotFound, "no route %s %s", c.Method(), c.Path())
	}
	name := strings.TrimPrefix(c.Path(), "/")
	if name == "" {
		name = "index.html"
	}
	name = path.Clean(name)
	b, err := fs.ReadFile(web.Public, "public/"+name)
	if err != nil || strings.HasPrefix(name, "..") {
		return protocol.Errorf(protocol.CodeNotFound, "no route %s %s", c.Method(), c.Path())
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = fiber.MIMEOctetStream
	}
	c.Set(fiber.HeaderContentType, ct)
	switch name {
	case "sw.js":
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set("Service-Worker-Allowed", "/")
	case "index.html":
		c.Set(fiber.HeaderCacheControl, "no-store")
	default:
		c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	}
	return c.Send(b)
}
