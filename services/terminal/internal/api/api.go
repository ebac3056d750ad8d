// Package api is terminal's HTTP surface on the service's fiber app: the
// terminal WebSocket GET /ws/terminal, GET /api/terminals, DELETE
// /api/terminal/{id} and POST /api/exec. Handlers validate their input
// and answer problems with the error envelope before anything starts;
// WebSocket connections then belong to termws.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/libs/termhosts"
	"github.com/svc-code/svc-code/services/terminal/internal/shellexec"
	"github.com/svc-code/svc-code/services/terminal/internal/terminals"
	"github.com/svc-code/svc-code/services/terminal/internal/termws"
)

// Routes served.
const (
	PathSocket    = "/ws/terminal"
	PathTerminals = "/api/terminals"
	PathTerminal  = "/api/terminal/:id"
	PathExec      = "/api/exec"
)

// registryTimeout bounds the read of the other hosts' terminals.
const registryTimeout = 2 * time.Second

// Cwds stores each session's working directory (cwdstore).
type Cwds interface {
	Get(ctx context.Context, session string) (string, error)
	Set(ctx context.Context, session, dir string) error
}

// Deps is what the routes need.
type Deps struct {
	Manager *terminals.Manager
	Hub     *termws.Hub
	Cwds    Cwds
	// Others lists the terminals of the other live hosts.
	Others func(ctx context.Context) ([]termhosts.Terminal, error)
	HostID string
	// Home is where a session with no working directory starts.
	Home   string
	Runner *shellexec.Runner
	// ExecTimeout is /api/exec's default timeout, ExecMaxTimeout the
	// largest a request may ask for.
	ExecTimeout    time.Duration
	ExecMaxTimeout time.Duration
	// KillTimeout bounds DELETE's wait for a terminal to end.
	KillTimeout time.Duration
	// Ctx ends when the service shuts down: commands still running are
	// killed.
	Ctx context.Context
	Log *slog.Logger
}

type server struct {
	Deps
	upgrader websocket.FastHTTPUpgrader
}

// Register adds the routes to app.
func Register(app *fiber.App, d Deps) {
	s := &server{Deps: d, upgrader: websocket.FastHTTPUpgrader{
		HandshakeTimeout: 10 * time.Second,
		ReadBufferSize:   4 << 10,
		WriteBufferSize:  4 << 10,
		// The gateway authenticates upgrades and checks their Origin;
		// nothing reaches here without the internal credential.
		CheckOrigin: func(*fasthttp.RequestCtx) bool { return true },
		// Refusals are answered with the error envelope by the handler.
		Error: func(*fasthttp.RequestCtx, int, error) {},
	}}
	app.Get(PathSocket, s.socket)
	app.Get(PathTerminals, s.terminals)
	app.Delete(PathTerminal, s.deleteTerminal)
	app.Post(PathExec, s.exec)
}

// sessionPattern is what a session id may look like: it names Redis keys
// and travels in paths and query strings.
var sessionPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

func badRequest(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeBadRequest, format, args...)
}

// checkDir accepts an absolute path to an existing directory.
func checkDir(field, dir string) error {
	if !filepath.IsAbs(dir) {
		return badRequest("%s %q is not an absolute path", field, dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return badRequest("%s %q does not exist", field, dir)
	}
	if !fi.IsDir() {
		return badRequest("%s %q is not a directory", field, dir)
	}
	return nil
}

func isDir(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// socket upgrades GET /ws/terminal?session=…&cwd=…[&stream=…&offset=…][&flow=1[&skip_lines=N]].
func (s *server) socket(c *fiber.Ctx) error {
	// Copies: fasthttp reuses the request's memory once this handler
	// returns, and the connection lives on.
	session := strings.Clone(c.Query("session"))
	cwd := strings.Clone(c.Query("cwd"))
	stream, offset, flowParam := c.Query("stream"), c.Query("offset"), c.Query("flow")
	lost := strings.Clone(c.Get(protocol.HeaderTerminalLostHost))
	requestID := strings.Clone(c.Get(protocol.HeaderRequestID))
	switch {
	case session == "":
		return badRequest("the session query parameter is required")
	case !sessionPattern.MatchString(session):
		return badRequest("session %q is not a session id (letters, digits, '.', '_', ':', '-'; at most 128)", session)
	}
	if err := s.checkStartDir(c.UserContext(), session, cwd); err != nil {
		return err
	}
	var resume *terminals.Resume
	if stream != "" || offset != "" {
		off, err := strconv.ParseInt(offset, 10, 64)
		if stream == "" || err != nil || off < 0 {
			return badRequest("resuming needs both stream (from the connected frame) and offset (a byte count, 0 or more)")
		}
		resume = &terminals.Resume{Stream: strings.Clone(stream), Offset: off}
	}
	var flow bool
	switch flowParam {
	case "", "0":
	case "1":
		flow = true
	default:
		return badRequest("flow %q: want 1 (acknowledge output, flow control) or 0", flowParam)
	}
	var skipLines int
	if v := c.Query("skip_lines"); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil || n < 0 || n > terminals.MaxSkipLines:
			return badRequest("skip_lines %q: want the lines of scrollback the client keeps, 0 to %d", v, terminals.MaxSkipLines)
		case n > 0 && !flow:
			return badRequest("skip_lines needs flow=1: only a client that acknowledges can be sent less")
		}
		skipLines = n
	}
	if !websocket.FastHTTPIsWebSocketUpgrade(c.Context()) {
		return &protocol.Error{Code: protocol.CodeBadRequest, Message: "this route needs a WebSocket upgrade", Status: fiber.StatusUpgradeRequired}
	}
	log := s.Log.With("session_id", session, "request_id", requestID)
	attach := func(ctx context.Context) (*terminals.Attachment, error) {
		return s.Manager.Attach(ctx, terminals.AttachRequest{
			Session: session, Resume: resume, Flow: flow, SkipLines: skipLines,
			Cwd: func(ctx context.Context) (string, error) { return s.startDir(ctx, session, cwd, log), nil },
		})
	}
	err := s.upgrader.Upgrade(c.Context(), func(ws *websocket.Conn) {
		s.Hub.Serve(ws, termws.Options{Attach: attach, LostHost: lost, Flow: flow, Log: log})
	})
	if err != nil {
		return badRequest("bad WebSocket handshake: %v", err)
	}
	return nil
}

// checkStartDir refuses a cwd that is not an absolute path, or that is
// not a directory when it would be used: when the session has neither a
// terminal here nor a stored directory. A session that has one ignores
// cwd, so a directory deleted since does not lock its client out.
func (s *server) checkStartDir(ctx context.Context, session, cwd string) error {
	if cwd == "" {
		return nil
	}
	if !filepath.IsAbs(cwd) {
		return badRequest("cwd %q is not an absolute path", cwd)
	}
	if isDir(cwd) || s.Manager.Get(session) != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	if stored, err := s.Cwds.Get(ctx, session); err == nil && stored != "" && isDir(stored) {
		return nil
	}
	return checkDir("cwd", cwd)
}

// startDir picks a new terminal's working directory: the session's stored
// one, else the requested one (which is then stored), else home.
func (s *server) startDir(ctx context.Context, session, requested string, log *slog.Logger) string {
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	stored, err := s.Cwds.Get(ctx, session)
	switch {
	case err != nil:
		log.WarnContext(ctx, "read stored cwd; using the requested one", "err", err)
	case stored != "" && isDir(stored):
		return stored
	case stored != "":
		log.InfoContext(ctx, "stored cwd is gone; using the requested one", "cwd", stored)
	}
	if requested != "" && isDir(requested) {
		if err := s.Cwds.Set(ctx, session, requested); err != nil {
			log.WarnContext(ctx, "store cwd", "err", err)
		}
		return requested
	}
	if isDir(s.Home) {
		return s.Home
	}
	return "/"
}

// terminalJSON is one entry of GET /api/terminals.
type terminalJSON struct {
	Session string    `json:"session"`
	PID     int       `json:"pid"`
	Cwd     string    `json:"cwd"`
	Started time.Time `json:"started"`
	Clients int       `json:"clients"`
	Host    string    `json:"host"`
}

// terminals answers GET /api/terminals: every live host's terminals, this
// host's from memory, the others' from the registry.
func (s *server) terminals(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), registryTimeout)
	defer cancel()
	others, err := s.Others(ctx)
	if err != nil {
		s.Log.WarnContext(ctx, "list other hosts' terminals", "err", err)
		return &protocol.Error{Code: protocol.CodeUnavailable, Message: "the terminal host registry is not reachable"}
	}
	out := make([]terminalJSON, 0, len(others))
	for _, t := range s.Manager.List() {
		out = append(out, terminalJSON{Session: t.Session, PID: t.PID, Cwd: t.Cwd, Started: t.Started, Clients: t.Clients, Host: s.HostID})
	}
	for _, t := range others {
		out = append(out, terminalJSON(t))
	}
	slices.SortStableFunc(out, func(a, b terminalJSON) int { return a.Started.Compare(b.Started) })
	return c.JSON(fiber.Map{"terminals": out})
}

// deleteTerminal answers DELETE /api/terminal/{id}: it ends the session's
// terminal on this host (the gateway routes to the host holding it).
func (s *server) deleteTerminal(c *fiber.Ctx) error {
	id := c.Params("id")
	notFound := protocol.Errorf(protocol.CodeNotFound, "no terminal for session %q", id)
	if !sessionPattern.MatchString(id) {
		return notFound
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), s.KillTimeout)
	defer cancel()
	code, err := s.Manager.Kill(ctx, id)
	switch {
	case errors.Is(err, terminals.ErrNotFound):
		return notFound
	case err != nil:
		return fmt.Errorf("end terminal %s: %w", id, err)
	}
	return c.JSON(fiber.Map{"ok": true, "session": id, "exit_code": code})
}

// execRequest is POST /api/exec's body.
type execRequest = protocol.ExecRequest

// execResult is its answer (with the error envelope's fields on a timeout).
type execResult = protocol.ExecResponse

// exec answers POST /api/exec.
func (s *server) exec(c *fiber.Ctx) error {
	var req execRequest
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Command) == "" {
		return badRequest("command is empty")
	}
	if req.Cwd == "" {
		return badRequest("cwd is required")
	}
	if err := checkDir("cwd", req.Cwd); err != nil {
		return err
	}
	timeout := s.ExecTimeout
	if req.TimeoutS != nil {
		t := *req.TimeoutS
		if !(t > 0) || t > s.ExecMaxTimeout.Seconds() {
			return badRequest("timeout_s must be more than 0 and at most %g (seconds)", s.ExecMaxTimeout.Seconds())
		}
		timeout = time.Duration(t * float64(time.Second))
	}
	res, err := s.Runner.Run(s.Ctx, shellexec.Request{Command: req.Command, Dir: req.Cwd, Timeout: timeout})
	switch {
	case errors.Is(err, shellexec.ErrCancelled):
		return &protocol.Error{Code: protocol.CodeUnavailable, Message: "the terminal host is shutting down; the command was killed", Status: fiber.StatusServiceUnavailable}
	case err != nil:
		return fmt.Errorf("exec: %w", err)
	}
	body := execResult{
		Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode,
		DurationMS: res.Duration.Milliseconds(), Truncated: res.Truncated,
	}
	if res.TimedOut {
		body.Error = protocol.CodeTimeout
		body.Message = fmt.Sprintf("the command ran longer than %s; every process it started was killed", timeout)
		return c.Status(fiber.StatusRequestTimeout).JSON(body)
	}
	return c.JSON(body)
}
