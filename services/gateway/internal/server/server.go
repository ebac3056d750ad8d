// Package server is the gateway's HTTP surface: the fiber app with the
// security headers, the authentication and Origin gate, the login and
// logout, revocation, info and health routes, the static assets and the
// proxy to the backends by the routing table.
package server

import (
	"errors"
	"html/template"
	"log/slog"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/termhosts"
	"github.com/svc-code/svc-code/services/gateway/internal/credential"
	"github.com/svc-code/svc-code/services/gateway/internal/origin"
	"github.com/svc-code/svc-code/services/gateway/internal/peer"
	"github.com/svc-code/svc-code/services/gateway/internal/proxy"
	"github.com/svc-code/svc-code/services/gateway/internal/route"
	"github.com/svc-code/svc-code/services/gateway/internal/throttle"
	"github.com/svc-code/svc-code/web"
)

// Deps is everything the server needs; app.Run builds it.
type Deps struct {
	Store *credential.Store
	Proxy *proxy.Proxy
	// Backends maps a service name (route.Chat, ...) to host:port.
	Backends  map[string]string
	Secret    internalauth.Secret
	Log       *slog.Logger
	Version   string
	Instance  string
	Started   time.Time
	BodyLimit int
	Limiter   *throttle.Limiter
	// Terminals is the terminal host registry; nil routes every terminal
	// request to Backends["terminal"].
	Terminals *termhosts.Registry
	// Hosts are the host names answered besides the config file's
	// allowed_hosts; Proxies are the trusted proxies.
	Hosts   []string
	Proxies []netip.Prefix
	// PasswordChanged runs after POST /api/auth/password set a new
	// password (the first password's file is void then); may be nil.
	PasswordChanged func()
}

// Server is the gateway's fiber application.
type Server struct {
	d       Deps
	app     *fiber.App
	login   *template.Template
	origins atomic.Pointer[origin.Checker]
	peers   atomic.Pointer[peer.Policy]
	reqSeq  atomic.Uint64
	verify  chan struct{} // bounds concurrent password hashing
}

// New builds the app and subscribes to credential changes so that
// WebSockets opened with a revoked credential are closed.
func New(d Deps) (*Server, error) {
	tpl, err := template.ParseFS(web.Templates, "templates/login.html")
	if err != nil {
		return nil, err
	}
	s := &Server{d: d, login: tpl, verify: make(chan struct{}, 2)}
	s.reloadOrigins()
	d.Store.OnChange(func() {
		s.reloadOrigins()
		n := d.Proxy.Tunnels().CloseIf(func(owner any) bool {
			id, ok := owner.(credential.Identity)
			return ok && !d.Store.StillValid(id)
		}, 1008, "credential revoked")
		if n > 0 {
			d.Log.Info("websockets_closed", "reason", "credential revoked", "count", n)
		}
	})

	s.app = fiber.New(fiber.Config{
		AppName:      "svc-code gateway",
		ErrorHandler: s.errorHandler,
		// Bodies are streamed: the handlers run on the headers, so the
		// credential is checked before any body is read (bodyGate,
		// finishBody); BodyLimit then only bounds what fasthttp reads
		// ahead.
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		BodyLimit:                    d.BodyLimit,
		CaseSensitive:                true,
		StrictRouting:                true,
		DisableStartupMessage:        true,
		ReadTimeout:                  2 * time.Minute,
		IdleTimeout:                  2 * time.Minute,
		ReadBufferSize:               16 << 10,
	})
	s.app.Use(recover.New(recover.Config{EnableStackTrace: true, StackTraceHandler: func(c *fiber.Ctx, e any) {
		d.Log.Error("handler_panic", "panic", e, "path", c.Path())
	}}))
	s.app.Use(s.headers)
	s.app.Use(s.authenticate)
	s.app.Use(s.bodyGate)

	s.app.Get("/health", s.health)
	s.app.Get("/login", s.loginPage)
	s.app.Post("/api/login", s.loginSubmit)
	s.app.Post("/api/logout", s.logout)
	s.app.Post("/api/auth/revoke", s.revoke)
	s.app.Post("/api/auth/password", s.changePassword)
	s.app.Get("/api/info", s.info)
	s.app.Use(s.dispatch)
	return s, nil
}

// App is the fiber application (for Listener, Test and Shutdown).
func (s *Server) App() *fiber.App { return s.app }

func (s *Server) reloadOrigins() {
	s.peers.Store(peer.NewPolicy(append(append([]string{}, s.d.Hosts...), s.d.Store.AllowedHosts()...), s.d.Proxies))
	c, bad := origin.NewChecker(s.d.Store.AllowedOrigins())
	for _, b := range bad {
		s.d.Log.Warn("allowed_origin_ignored", "origin", b, "reason", "not a scheme://host[:port] origin")
	}
	s.origins.Store(c)
}

// errorHandler answers every error with decisions.md's envelope. Internal
// errors are logged here, once, and never shown.
func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	var fe *fiber.Error
	var status int
	var body protocol.ErrorBody
	if errors.As(err, &fe) {
		status = fe.Code
		body = protocol.ErrorBody{Error: protocol.CodeForStatus(fe.Code), Message: publicFiberMessage(fe)}
	} else {
		var internal bool
		status, body, internal = protocol.Public(err)
		if internal {
			s.d.Log.Error("request_failed", "err", err, "path", c.Path(), "request_id", c.Locals(localRequestID))
		}
	}
	c.Response().Header.Del(fiber.HeaderContentEncoding)
	return c.Status(status).JSON(body)
}

func publicFiberMessage(fe *fiber.Error) string {
	switch fe.Code {
	case fiber.StatusRequestEntityTooLarge:
		return "the request body is larger than the limit"
	case fiber.StatusNotFound:
		return "no such route"
	case fiber.StatusMethodNotAllowed:
		return "method not allowed on this route"
	}
	if fe.Code >= 500 {
		return ""
	}
	return fe.Message
}

// dispatch proxies routed paths and serves the remaining static pages.
func (s *Server) dispatch(c *fiber.Ctx) error {
	svc := route.Match(route.Table, c.Path())
	if svc == "" {
		return s.static(c)
	}
	target := s.d.Backends[svc]
	var headers map[string]string
	if svc == route.Terminal {
		var err error
		if target, headers, err = s.terminalTarget(c); err != nil {
			return err
		}
	}
	if target == "" {
		return &protocol.Error{Code: protocol.CodeUnavailable, Message: "the " + svc + " service is not configured", Status: fiber.StatusBadGateway}
	}
	id, _ := c.Locals(localIdentity).(credential.Identity)
	v := view(c)
	m := proxy.Meta{AuthKind: string(id.Kind), RequestID: requestID(c), Headers: headers, Client: v.Client.String(), Host: v.Host, Scheme: v.Scheme}
	if proxy.IsUpgrade(c) {
		if bodyLength(c) != 0 {
			return protocol.Errorf(protocol.CodeBadRequest, "a WebSocket upgrade has no body")
		}
		return s.d.Proxy.WebSocket(c, svc, target, m, id)
	}
	m.BodyLimit = s.d.BodyLimit
	return s.d.Proxy.HTTP(c, svc, target, m)
}

func (s *Server) health(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

func retryAfter(d time.Duration) string {
	secs := int((d + time.Second - 1) / time.Second)
	return strconv.Itoa(max(secs, 1))
}
