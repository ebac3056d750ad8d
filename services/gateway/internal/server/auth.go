package server

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/gateway/internal/credential"
	"github.com/svc-code/svc-code/services/gateway/internal/origin"
	"github.com/svc-code/svc-code/services/gateway/internal/proxy"
)

const (
	localIdentity  = "svc_identity"
	localRequestID = "svc_request_id"
	localPeer      = "svc_peer"
)

// publicPaths are reachable without a credential, by exact path.
var publicPaths = map[string]bool{
	"/login":                true,
	"/api/login":            true,
	"/api/logout":           true,
	"/health":               true,
	"/sw.js":                true,
	"/manifest.json":        true,
	"/static/css/login.css": true,
}

// publicPosts are reachable without a credential by POST only, and only
// from this server's origin (or an allowed one): POST /api/push/answer,
// whose body carries the credential (a notification's single-use answer
// token), sent by the service worker from a lock screen.
var publicPosts = map[string]bool{
	"/api/push/answer": true,
}

// publicPrefix is the one public folder.
const publicPrefix = "/instance-icons/"

// IsPublic reports whether path needs no credential.
func IsPublic(path string) bool {
	return publicPaths[path] || strings.HasPrefix(path, publicPrefix) && len(path) > len(publicPrefix)
}

// headers sets the security headers on every answer and gives the request
// an id.
//
// It also replaces fiber's raw path with fasthttp's normalised one (dot
// segments resolved, percent-escapes decoded, slashes collapsed), so that
// the allowlist, the routes and the proxy all see the path that is
// forwarded: /instance-icons/../api/info is /api/info everywhere.
//
// A normalised path that holds a control character (NUL, CR, LF, ...) is
// refused with 400 before anything else sees it: decoded, such bytes could
// split the request line the proxy writes to a backend. Everything else
// that needs escaping (a space, "?", "#", "%") is re-escaped by the proxy.
// Then the host the request names is checked against the host list (421),
// and the trusted proxies' X-Forwarded-* applied (resolvePeer). Last, an
// unread body is drained or the connection closed (finishBody).
func (s *Server) headers(c *fiber.Ctx) error {
	c.Path(string(c.Request().URI().Path()))
	c.Locals(localRequestID, s.instanceRequestID())
	// Deferred, so that a panic further in cannot leave an unread body on a
	// kept-alive connection.
	defer s.finishBody(c)
	var err error
	if proxy.HasControlByte(c.Request().URI().Path()) {
		err = protocol.Errorf(protocol.CodeBadRequest, "the path holds a control character")
	} else if v, perr := s.resolvePeer(c); perr != nil {
		err = perr
	} else {
		c.Locals(localPeer, v)
		err = c.Next()
	}
	h := &c.Response().Header
	h.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	h.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	if strings.HasPrefix(c.Path(), "/api/") {
		if sandboxed(h.Peek(fiber.HeaderContentSecurityPolicy)) {
			// Content the UI shows in a frame (a file, rendered HTML, a
			// proxied page): the backend's sandbox policy stays, and so
			// does its frame-ancestors.
			h.Set(fiber.HeaderXFrameOptions, "SAMEORIGIN")
		} else {
			h.Set(fiber.HeaderContentSecurityPolicy, "frame-ancestors 'none'")
			h.Set(fiber.HeaderXFrameOptions, "DENY")
		}
		h.Set(fiber.HeaderCacheControl, "no-store")
	} else if len(h.Peek(fiber.HeaderContentSecurityPolicy)) == 0 {
		h.Set(fiber.HeaderContentSecurityPolicy, "frame-ancestors 'self'")
		h.Set(fiber.HeaderXFrameOptions, "SAMEORIGIN")
	}
	h.Set(protocol.HeaderRequestID, requestID(c))
	return err
}

// sandboxed reports whether a backend's Content-Security-Policy sandboxes
// the answer (a bare "sandbox" directive, so scripts cannot run) and says
// who may frame it.
func sandboxed(csp []byte) bool {
	var sandbox, ancestors bool
	for _, d := range strings.Split(string(csp), ";") {
		name, _, _ := strings.Cut(strings.TrimSpace(d), " ")
		switch strings.ToLower(name) {
		case "sandbox":
			sandbox = strings.EqualFold(strings.TrimSpace(d), "sandbox")
		case "frame-ancestors":
			ancestors = true
		}
	}
	return sandbox && ancestors
}

func (s *Server) instanceRequestID() string {
	return s.d.Instance + "-" + strconv.FormatUint(s.reqSeq.Add(1), 36)
}

func requestID(c *fiber.Ctx) string {
	id, _ := c.Locals(localRequestID).(string)
	return id
}

// authenticate enforces the Authentication rules of the interface: the
// public allowlist, the OPTIONS bypass, the three credentials each in its
// own place, and the Origin gate for ambient credentials.
func (s *Server) authenticate(c *fiber.Ctx) error {
	if c.Method() == fiber.MethodOptions {
		return s.preflight(c)
	}
	s.cors(c)
	if IsPublic(c.Path()) {
		return c.Next()
	}
	if c.Method() == fiber.MethodPost && publicPosts[c.Path()] {
		if !s.originAllowed(c) {
			return &protocol.Error{Code: protocol.CodeOriginForbidden, Message: "this request does not come from this server's origin"}
		}
		return c.Next()
	}
	id, ok := s.identify(c)
	if !ok {
		if isPageRequest(c) {
			return c.Redirect("/login?next="+url.QueryEscape(nextTarget(c)), fiber.StatusFound)
		}
		return &protocol.Error{Code: protocol.CodeUnauthorized, Message: "a valid credential is required: the svc_auth cookie, Authorization: Bearer API_TOKEN, or tkn=API_TOKEN"}
	}
	if id.Kind.Ambient() && needsOriginGate(c) && !s.originAllowed(c) {
		return &protocol.Error{Code: protocol.CodeOriginForbidden, Message: "this request carries a browser credential but does not come from this server's origin"}
	}
	c.Locals(localIdentity, id)
	return c.Next()
}

// identify finds the request's credential. Each credential is looked for
// only in its own place: an API token in Authorization or tkn, a cookie in
// svc_auth. A bad Authorization header fails outright rather than falling
// back to another credential.
func (s *Server) identify(c *fiber.Ctx) (credential.Identity, bool) {
	if authz := c.Get(fiber.HeaderAuthorization); authz != "" {
		scheme, tok, found := strings.Cut(authz, " ")
		if !found || !strings.EqualFold(scheme, "Bearer") {
			return credential.Identity{}, false
		}
		id, err := s.d.Store.CheckToken(credential.KindBearer, strings.TrimSpace(tok))
		return id, err == nil
	}
	if tkn := c.Context().QueryArgs().Peek("tkn"); len(tkn) > 0 {
		id, err := s.d.Store.CheckToken(credential.KindTkn, string(tkn))
		return id, err == nil
	}
	if v := c.Cookies(proxy.CookieName); v != "" {
		id, err := s.d.Store.CheckCookie(v)
		return id, err == nil
	}
	return credential.Identity{}, false
}

// needsOriginGate: state-changing methods, and WebSocket upgrades.
func needsOriginGate(c *fiber.Ctx) bool {
	switch c.Method() {
	case fiber.MethodPost, fiber.MethodPut, fiber.MethodDelete, fiber.MethodPatch:
		return true
	}
	return proxy.IsUpgrade(c)
}

func (s *Server) originAllowed(c *fiber.Ctx) bool {
	o := c.Get(fiber.HeaderOrigin)
	if o == "" && proxy.IsUpgrade(c) {
		return false // browsers always send Origin on a WebSocket
	}
	v := view(c)
	return s.origins.Load().Allowed(origin.Request{
		Scheme:       v.Scheme,
		Host:         v.Host,
		Origin:       o,
		SecFetchSite: c.Get("Sec-Fetch-Site"),
	})
}

// isPageRequest: a browser navigating to a page (not an API call, not a
// WebSocket), which is better answered by the login page than by 401.
func isPageRequest(c *fiber.Ctx) bool {
	if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		return false
	}
	if strings.HasPrefix(c.Path(), "/api/") || c.Path() == "/api" || proxy.IsUpgrade(c) {
		return false
	}
	return strings.Contains(c.Get(fiber.HeaderAccept), "text/html")
}

// nextTarget is the path and query to return to after login, without tkn.
func nextTarget(c *fiber.Ctx) string {
	u := c.Path()
	args := c.Context().QueryArgs()
	if args.Len() == 0 {
		return u
	}
	q := url.Values{}
	for k, v := range args.All() {
		if string(k) != "tkn" {
			q.Add(string(k), string(v))
		}
	}
	if len(q) == 0 {
		return u
	}
	return u + "?" + q.Encode()
}

// safeNext accepts only a local path, refusing anything a browser could
// read as another host (//host, /\host, scheme:, control characters).
func safeNext(next string) string {
	if next == "" || len(next) > 2048 || next[0] != '/' {
		return "/"
	}
	if len(next) > 1 && (next[1] == '/' || next[1] == '\\') {
		return "/"
	}
	for _, r := range next {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return next
}

// preflight answers OPTIONS without a credential. Origins listed in
// allowed_origins get CORS permission; anyone else gets a bare 204, which a
// browser treats as a refusal.
func (s *Server) preflight(c *fiber.Ctx) error {
	if s.cors(c) {
		h := &c.Response().Header
		h.Set(fiber.HeaderAccessControlAllowMethods, "GET, POST, PUT, PATCH, DELETE, OPTIONS")
		h.Set(fiber.HeaderAccessControlAllowHeaders, "Authorization, Content-Type")
		h.Set(fiber.HeaderAccessControlMaxAge, "600")
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// cors grants cross-origin reads to an allowed origin; it reports whether it
// did.
func (s *Server) cors(c *fiber.Ctx) bool {
	o := c.Get(fiber.HeaderOrigin)
	if o == "" {
		return false
	}
	n, ok := origin.Normalize(o)
	if !ok || !s.origins.Load().AllowedExtra(n) {
		return false
	}
	h := &c.Response().Header
	h.Set(fiber.HeaderAccessControlAllowOrigin, o)
	h.Set(fiber.HeaderAccessControlAllowCredentials, "true")
	h.Add(fiber.HeaderVary, fiber.HeaderOrigin)
	return true
}
