package server

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"mime"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/web"
)

// appPage matches the browser app's own paths, each answered with its page:
// the home, the new-session form, a session (/s/{id}) and its panes
// (/s/{id}/terminal, files, changes, git), and the panes of no session
// (/costs, /sql, /settings), and the sessions started in a terminal: their
// list (/cli) and one of them, read-only (/cli/{claude|codex}/{id}; the id's
// characters are those the chat service accepts, which checks it again).
var appPage = regexp.MustCompile(`^/(new|costs|sql|settings|cli(/(claude|codex)/[A-Za-z0-9_-][A-Za-z0-9._-]{0,199})?|s/[A-Z2-7]{10,40}(/(terminal|files|changes|git))?/?)?$`)

// static serves the embedded assets: the app's page at its paths, its
// hashed assets and service worker (web/dist), and the public files
// (web/public). The authentication middleware has already decided who may
// see what.
func (s *Server) static(c *fiber.Ctx) error {
	if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		return protocol.Errorf(protocol.CodeNotFound, "no route %s %s", c.Method(), c.Path())
	}
	p := c.Path()
	if appPage.MatchString(p) {
		b, err := fs.ReadFile(web.App, "dist/index.html")
		if err != nil {
			return protocol.Errorf(protocol.CodeNotFound, "the browser app is not built: run make ui")
		}
		c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
		c.Set(fiber.HeaderCacheControl, "no-store")
		c.Set(fiber.HeaderContentSecurityPolicy, appCSP(c))
		return c.Send(b)
	}
	// A copy: c.Path() points into fasthttp's reused request buffer, and the
	// name outlives the request as a key of gzipCache.
	name := strings.Clone(path.Clean(strings.TrimPrefix(p, "/")))
	if strings.HasPrefix(name, "..") || name == "." {
		return protocol.Errorf(protocol.CodeNotFound, "no route %s %s", c.Method(), p)
	}
	var b []byte
	var err error
	if name == "sw.js" || strings.HasPrefix(name, "assets/") {
		b, err = fs.ReadFile(web.App, "dist/"+name)
	} else {
		b, err = fs.ReadFile(web.Public, "public/"+name)
	}
	if err != nil {
		return protocol.Errorf(protocol.CodeNotFound, "no route %s %s", c.Method(), p)
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = fiber.MIMEOctetStream
	}
	c.Set(fiber.HeaderContentType, ct)
	if strings.HasPrefix(name, "assets/") {
		c.Vary(fiber.HeaderAcceptEncoding)
		if gz := gzipped(name, b); gz != nil && acceptsGzip(c) {
			c.Set(fiber.HeaderContentEncoding, "gzip")
			b = gz
		}
	}
	switch {
	case name == "sw.js":
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set("Service-Worker-Allowed", "/")
	case strings.HasPrefix(name, "assets/"):
		// Content-hashed names: a new build has new names.
		c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	default:
		c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	}
	return c.Send(b)
}

// appCSP is the app page's Content-Security-Policy: scripts from this origin
// only (a message that slipped an inline script past the sanitiser still
// could not run it), sockets to this host, no plugins, no framing by others.
func appCSP(c *fiber.Ctx) string {
	host := c.Hostname()
	return "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
		"img-src 'self' data: blob:; connect-src 'self' ws://" + host + " wss://" + host + "; " +
		"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'"
}

// gzipCache holds the gzipped app assets (compressed once, on first use).
var gzipCache sync.Map // name → []byte (nil when gzip does not pay)

// gzipped is the asset gzipped, or nil for content that does not shrink.
func gzipped(name string, b []byte) []byte {
	if v, ok := gzipCache.Load(name); ok {
		gz, _ := v.([]byte)
		return gz
	}
	var gz []byte
	switch path.Ext(name) {
	case ".js", ".css", ".html", ".json", ".svg":
		var buf bytes.Buffer
		w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = w.Write(b)
		if w.Close() == nil && buf.Len() < len(b) {
			gz = buf.Bytes()
		}
	}
	gzipCache.Store(name, gz)
	return gz
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip
// (a q=0 refuses it).
func acceptsGzip(c *fiber.Ctx) bool {
	for _, part := range strings.Split(c.Get(fiber.HeaderAcceptEncoding), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
