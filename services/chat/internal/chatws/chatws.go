// Package chatws serves the /chat WebSocket: it resolves or creates the
// session before the upgrade (an unknown session id is answered 404, a bad
// cwd or provider 400, without upgrading), joins the session's room
// (internal/room), sends `connected`, the pending permission requests
// (replay: true), the log after `after_line`, then live frames; and it turns
// client messages into room calls.
//
// Each connection has one reader (the upgrade handler's goroutine, which
// also runs the client's messages); the server's few writer goroutines
// write every connection's frames, taking in turn the connections whose
// bounded queue holds some (see conn and writers). A
// client whose queue overflows is closed with CloseTooSlow and may
// reconnect with after_line. Reads have a deadline extended by every frame
// and pong; writes have a deadline; teardown closes the raw connection,
// which unblocks both.
package chatws

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fasthttp/websocket"
	fws "github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/providers"
	"github.com/svc-code/svc-code/services/chat/internal/room"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// Limits and timings of a connection.
const (
	// MaxMessage is the largest client message handled; a larger one gets
	// an error frame and is dropped, the socket stays open.
	MaxMessage = 8 << 20
	// HardReadLimit is the largest message read at all; a larger one
	// closes the socket with 1009 (message too big).
	HardReadLimit = 16 << 20
	// QueueSize is how many frames may wait for a slow client.
	QueueSize = 1024
	// CloseTooSlow closes a client whose queue overflowed.
	CloseTooSlow = 4001
	readTimeout  = 90 * time.Second
	pingEvery    = 30 * time.Second
	writeTimeout = 10 * time.Second
	replayPage   = 500
	// replayTimeout bounds reading one page of the log for a replay.
	replayTimeout = 30 * time.Second
	// A connection's read buffer: small, as idle sockets are the common
	// case; larger messages are read in several pieces. The upgrader's
	// write buffers go unused: conn encodes every frame, control frames
	// too, into buffers of its own.
	readBufferSize  = 1 << 10
	writeBufferSize = 1 << 10
)

// writerCount is how many writer goroutines run at most (see writers):
// one processor fewer than the process has, at least one. Their writes
// never block, so through a burst they keep their processors busy; while
// every processor has a goroutine to run, the Go scheduler checks for
// ready network and pipe I/O only when its monitor thread finds it has not
// for 10 ms, and the agent's next line, PostgreSQL's answer to a commit
// and a frame relayed through Redis (each a step of every frame's way to
// the sockets) wait for that. A processor left to the rest picks them up
// as they come (the chat benchmark's turn starts, BENCHMARKS.md).
func writerCount() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// Deps is what the route needs.
type Deps struct {
	Store *store.Store
	Rooms *room.Manager
	Home  string // reported as home in connected; "" means $HOME
	Log   *slog.Logger
	// Visibility, when set, is told what the sockets say with their
	// visibility messages, and that a socket closed (visible false).
	Visibility Visibility
}

// Visibility records which sockets are visible to their user
// (internal/push holds Web Push back while one of a session is).
type Visibility interface {
	SetVisible(sessionID string, socket any, visible bool)
}

type server struct {
	Deps
	// writers write to the connections (see writers).
	writers *writers
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[*conn]bool
}

// Handler serves /chat; Wait blocks until its connections have ended.
type Handler struct{ s *server }

// Register adds GET /chat to app.
func Register(app *fiber.App, d Deps) *Handler {
	if d.Home == "" {
		d.Home, _ = os.UserHomeDir()
	}
	s := &server{Deps: d, conns: map[*conn]bool{}, writers: newWriters(writerCount())}
	// The upgrader is used directly rather than through gofiber's
	// websocket handler, which copies every header, query and cookie of
	// the request into maps kept for the connection's life.
	up := websocket.FastHTTPUpgrader{
		ReadBufferSize: readBufferSize, WriteBufferSize: writeBufferSize, WriteBufferPool: &sync.Pool{},
		// Origins are the gateway's business: chat serves only requests
		// that carry the internal credential.
		CheckOrigin: func(*fasthttp.RequestCtx) bool { return true },
	}
	app.Get("/chat", s.prepare, func(c *fiber.Ctx) error {
		u, _ := c.Locals(upgradeKey).(upgrade)
		if err := up.Upgrade(c.Context(), func(ws *websocket.Conn) { s.serve(ws, u) }); err != nil {
			return &protocol.Error{Code: protocol.CodeBadRequest, Message: "WebSocket upgrade: " + err.Error(), Status: fiber.StatusBadRequest}
		}
		return nil
	})
	return &Handler{s: s}
}

// Wait blocks until every connection's handler has returned.
func (h *Handler) Wait() { h.s.wg.Wait() }

// CloseAll closes every connection with 1001 (going away), for shutdown.
func (h *Handler) CloseAll() {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	for c := range h.s.conns {
		c.close(websocket.CloseGoingAway)
	}
}

// prepare resolves the session before the upgrade and passes it on.
func (s *server) prepare(c *fiber.Ctx) error {
	if !fws.IsWebSocketUpgrade(c) {
		return &protocol.Error{Code: protocol.CodeBadRequest, Message: "/chat needs a WebSocket upgrade", Status: fiber.StatusUpgradeRequired}
	}
	ctx := c.UserContext()
	after := int64(-1)
	if v := c.Query("after_line"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return protocol.Errorf(protocol.CodeBadRequest, "after_line: want a line number >= 0")
		}
		after = n
	}
	var sess store.Session
	var err error
	reconnect := false
	if id := string([]byte(c.Query("session"))); id != "" {
		if sess, err = s.Store.Get(ctx, id); errors.Is(err, store.ErrNotFound) {
			return protocol.Errorf(protocol.CodeNotFound, "no session %q", id)
		} else if err != nil {
			return err
		}
		reconnect = true
		if after > sess.LastLine {
			// The client saw lines the log lost: the next ones come after.
			sctx, cancel := context.WithTimeout(ctx, skipTimeout)
			skipped, err := s.Store.SkipLostLines(sctx, id, after)
			cancel()
			if err != nil {
				return err
			}
			if skipped {
				s.Log.WarnContext(ctx, "a client saw lines the log no longer holds: the next messages come after them",
					"session_id", id, "log_end", sess.LastLine, "after_line", after)
			}
		}
	} else {
		cwd, prov := c.Query("cwd"), c.Query("provider")
		if _, ok := providers.Lookup(prov); !ok && prov != "" {
			return protocol.Errorf(protocol.CodeBadRequest, "unknown provider %q", prov)
		}
		if cwd == "" || !filepath.IsAbs(cwd) {
			return protocol.Errorf(protocol.CodeBadRequest, "cwd: want an absolute path (or pass session)")
		}
		cwd = filepath.Clean(cwd)
		if info, err := os.Stat(cwd); err != nil || !info.IsDir() {
			return protocol.Errorf(protocol.CodeBadRequest, "cwd %q: not an existing directory", cwd)
		}
		n := store.NewSession{Cwd: cwd, Provider: string([]byte(prov))}
		if err := providers.FillNewSession(ctx, s.Store, &n); err != nil { // the provider settings' defaults
			return err
		}
		if sess, err = s.Store.Create(ctx, n); err != nil {
			return err
		}
		s.Rooms.SessionChanged(ctx, sess.ID)
	}
	c.Locals(upgradeKey, upgrade{sess: sess, after: after, reconnect: reconnect})
	return c.Next()
}

// skipTimeout bounds SkipLostLines in prepare (it waits for the session's
// row and for the disk).
const skipTimeout = 5 * time.Second

// upgradeKey is the Locals key of what prepare resolved.
const upgradeKey = "chat_upgrade"

// upgrade is what prepare resolved for serve.
type upgrade struct {
	sess      store.Session
	after     int64 // -1: no after_line
	reconnect bool
}

// serve runs one connection; it is the connection's reader.
func (s *server) serve(ws *websocket.Conn, u upgrade) {
	s.wg.Add(1)
	defer s.wg.Done()
	sess, after, reconnect := u.sess, u.after, u.reconnect
	log := s.Log.With("session_id", sess.ID)
	defer func() {
		if v := recover(); v != nil {
			log.Error("chat connection panicked", "panic", fmt.Sprint(v))
			_ = ws.NetConn().Close()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newConn(ws, log, s.writers, cancel)

	s.mu.Lock()
	s.conns[c] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()

	// Joining (Redis and PostgreSQL calls) and encoding the first frames
	// run on a goroutine of their own: this one lives as long as the
	// socket, mostly idle, and its stack would keep their depth.
	var r *room.Room
	var head []room.Frame
	var kick bool
	joined := make(chan struct{})
	go func() {
		defer close(joined)
		r, head, kick = s.join(c, sess, reconnect)
	}()
	<-joined
	defer r.Leave(c)
	if s.Visibility != nil {
		defer s.Visibility.SetVisible(sess.ID, c, false)
	}
	var replay func(func(...room.Frame) error) (int64, error)
	if after >= 0 {
		replay = func(put func(...room.Frame) error) (int64, error) { return s.replay(c, sess.ID, after, put) }
	}
	c.start(head, replay)
	if kick {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			r.KickQueue(ctx, c)
		}()
	}
	s.read(ctx, c, r)
	c.close(websocket.CloseNormalClosure)
	<-c.ended
}

// join attaches c to the session's room and returns the room and the first
// frames: connected, then the pending permission requests (replay: true).
func (s *server) join(c *conn, sess store.Session, reconnect bool) (*room.Room, []room.Frame, bool) {
	r, snap := s.Rooms.Join(sess.ID, c)
	desc, _ := providers.Lookup(sess.Provider)
	queue := []protocol.QueuedPrompt{}
	kick := false
	// A new session has none, nor has one whose owner (this instance)
	// knows its queue to be empty.
	if reconnect && !r.QueueEmpty() {
		ctx, cancel := context.WithTimeout(context.Background(), replayTimeout)
		q, err := s.Store.Queue(ctx, sess.ID)
		cancel()
		if err != nil {
			c.log.Error("read the prompt queue", "err", err)
		}
		for _, it := range q {
			queue = append(queue, it.JSON())
		}
		if err == nil {
			r.NoteQueueLen(len(q))
		}
		// Prompts wait and nothing runs (chat restarted, the agent
		// process ended): the owner is to send the first.
		kick = len(q) > 0 && !snap.Running
	} else {
		r.NoteQueueLen(0)
	}
	head := []room.Frame{room.NewFrame(0, protocol.ConnectedFrame{
		Type: protocol.FrameConnected, SessionID: sess.ID, Cwd: sess.Cwd, Home: s.Home, Workspace: sess.Cwd,
		IsReconnect: reconnect, AgentRunning: snap.Running, IsCompacting: snap.Compacting,
		Provider: sess.Provider, ProviderDisplayName: desc.DisplayName, ProviderCaps: protocol.ProviderCaps(desc.Caps),
		ProviderLocked: sess.ProviderLocked, PermissionMode: sess.PermissionMode, Queue: queue,
	})}
	for _, p := range snap.Pending {
		head = append(head, room.PermissionRequestFrame(p, true))
	}
	return r, head, kick
}

// replay writes the log's lines after `after` and returns the last line
// written.
func (s *server) replay(c *conn, id string, after int64, put func(...room.Frame) error) (int64, error) {
	last := after
	var ended *room.Frame // the session_ended of the last turn a server restart cut off
	for {
		// Bounded: the writer waits for it, and only the writer tears the
		// connection down.
		ctx, cancel := context.WithTimeout(context.Background(), replayTimeout)
		msgs, err := s.Store.Messages(ctx, id, last, replayPage)
		cancel()
		if err != nil {
			c.log.Error("replay log", "err", err)
			return last, put(room.ErrorFrame("could not replay the log"))
		}
		frames := make([]room.Frame, len(msgs))
		for i, m := range msgs {
			frames[i] = room.FrameOf(m)
			switch m.Kind {
			case store.KindUserPrompt:
				ended = nil // a later turn: the session went on
			case store.KindNotice:
				if f, ok := room.EndedByNotice(m); ok {
					ended = &f
				}
			}
		}
		if err := put(frames...); err != nil {
			return last, err
		}
		if len(msgs) > 0 {
			last = msgs[len(msgs)-1].Line
		}
		if len(msgs) < replayPage {
			if ended != nil {
				// The socket was cut when its server died during a turn:
				// it gets the session_ended the sockets attached then got.
				return last, put(*ended)
			}
			return last, nil
		}
	}
}

// read runs the client's messages until the connection ends.
func (s *server) read(ctx context.Context, c *conn, r *room.Room) {
	// HardReadLimit is enforced here, not with the library's SetReadLimit:
	// the library would write its close frame itself, past the writer (two
	// writers on the socket, and a second close frame from the writer).
	_ = c.ws.SetReadDeadline(time.Now().Add(readTimeout))
	c.ws.SetPongHandler(func(string) error { return c.ws.SetReadDeadline(time.Now().Add(readTimeout)) })
	// Every write is the writer's: a ping is answered through it, and a
	// close ends the connection with the client's code, sent back by it.
	c.ws.SetPingHandler(c.pingReceived)
	c.ws.SetCloseHandler(func(code int, _ string) error {
		c.close(code)
		return nil
	})
	for {
		kind, msg, err := readMessage(c.ws)
		if err != nil {
			switch {
			case errors.Is(err, websocket.ErrReadLimit):
				c.close(websocket.CloseMessageTooBig)
			case libraryWrote(c.ws):
				c.close(0) // its close frame was the last
			}
			return
		}
		_ = c.ws.SetReadDeadline(time.Now().Add(readTimeout))
		if c.isClosing() { // the writer has ended or is ending
			return
		}
		if kind != websocket.TextMessage {
			c.Send(room.ErrorFrame("send JSON text messages"))
			continue
		}
		if len(msg) > MaxMessage {
			c.Send(room.ErrorFrame("message too large: at most " + strconv.Itoa(MaxMessage) + " bytes"))
			continue
		}
		s.handle(ctx, c, r, msg)
	}
}

// readMessage reads the next message, as ws.ReadMessage does; one over
// HardReadLimit fails with websocket.ErrReadLimit once HardReadLimit+1
// bytes of it have been read.
func readMessage(ws *websocket.Conn) (int, []byte, error) {
	kind, r, err := ws.NextReader()
	if err != nil {
		return kind, nil, err
	}
	msg, err := io.ReadAll(io.LimitReader(r, HardReadLimit+1))
	if err == nil && len(msg) > HardReadLimit {
		err = websocket.ErrReadLimit
	}
	return kind, msg, err
}

// libraryWrote reports whether the WebSocket library has written (or
// tried to write) to the connection itself, as it does after a client's
// protocol error: a close frame, after which the writer must send none.
// NextWriter then fails with ErrCloseSent (or the write's error); else it
// only prepares a writer, which is never used.
func libraryWrote(ws *websocket.Conn) bool {
	_, err := ws.NextWriter(websocket.TextMessage)
	return err != nil
}

// clientMessage is every field of every client message (the types of
// libs/protocol: UserMessage, PermissionResponseMessage, ...); Content is
// a pointer, to tell a missing content from an empty one.
type clientMessage struct {
	Type            string          `json:"type"`
	Content         *string         `json:"content"`
	Images          []room.Image    `json:"images"`
	Mode            string          `json:"mode"`
	RequestID       string          `json:"request_id"`
	Behavior        string          `json:"behavior"`
	UpdatedInput    json.RawMessage `json:"updated_input"`
	SuggestionIndex *int            `json:"suggestion_index"`
	Message         string          `json:"message"`
	Answers         json.RawMessage `json:"answers"`
	AnsweredBy      string          `json:"answered_by"`
	QueueID         string          `json:"queue_id"`
	Visible         *bool           `json:"visible"`
}

// checkAnsweredBy validates a permission answer's answered_by: at most
// protocol.MaxAnsweredBy bytes of UTF-8 without control characters.
func checkAnsweredBy(s string) error {
	if len(s) > protocol.MaxAnsweredBy || !utf8.ValidString(s) {
		return fmt.Errorf("answered_by: at most %d bytes of UTF-8", protocol.MaxAnsweredBy)
	}
	for _, c := range s {
		if unicode.IsControl(c) {
			return errors.New("answered_by: no control characters")
		}
	}
	return nil
}

func (s *server) handle(ctx context.Context, c *conn, r *room.Room, raw []byte) {
	var m clientMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		c.Send(room.ErrorFrame("malformed JSON message: " + err.Error()))
		return
	}
	switch m.Type {
	case "ping":
		c.Send(pongFrame)
	case "user_message":
		if m.Content == nil {
			c.Send(room.ErrorFrame("user_message: content is required"))
			return
		}
		if err := checkImages(m.Images); err != nil {
			c.Send(room.ErrorFrame("user_message: " + err.Error()))
			return
		}
		r.Do(ctx, c, room.Command{Type: m.Type, Content: *m.Content, Images: m.Images})
	case "stop", "clear_session":
		r.Do(ctx, c, room.Command{Type: m.Type})
	case "cancel_queued", "send_now":
		if m.QueueID == "" {
			c.Send(room.ErrorFrame(m.Type + ": queue_id is required"))
			return
		}
		r.Do(ctx, c, room.Command{Type: m.Type, QueueID: m.QueueID})
	case "set_permission_mode":
		r.Do(ctx, c, room.Command{Type: m.Type, Mode: m.Mode})
	case "permission_response":
		if m.RequestID == "" || (m.Behavior != string(agent.Allow) && m.Behavior != string(agent.Deny)) {
			c.Send(room.ErrorFrame(`permission_response: request_id and behavior ("allow" or "deny") are required`))
			return
		}
		if err := checkAnsweredBy(m.AnsweredBy); err != nil {
			c.Send(room.ErrorFrame("permission_response: " + err.Error()))
			return
		}
		r.Do(ctx, c, room.Command{Type: m.Type, RequestID: m.RequestID, AnsweredBy: m.AnsweredBy, Decision: agent.PermissionDecision{
			Behavior: agent.Behavior(m.Behavior), UpdatedInput: m.UpdatedInput,
			SuggestionIndex: m.SuggestionIndex, Message: m.Message,
		}})
	case "tool_answer":
		if m.RequestID == "" || len(m.Answers) == 0 || m.Answers[0] != '{' {
			c.Send(room.ErrorFrame("tool_answer: request_id and answers (an object) are required"))
			return
		}
		if err := checkAnsweredBy(m.AnsweredBy); err != nil {
			c.Send(room.ErrorFrame("tool_answer: " + err.Error()))
			return
		}
		r.Do(ctx, c, room.Command{Type: m.Type, RequestID: m.RequestID, Answers: m.Answers, AnsweredBy: m.AnsweredBy})
	case protocol.MsgVisibility:
		if m.Visible == nil {
			c.Send(room.ErrorFrame("visibility: visible (true or false) is required"))
			return
		}
		if s.Visibility != nil {
			s.Visibility.SetVisible(r.ID(), c, *m.Visible)
		}
	case "":
		c.Send(room.ErrorFrame("message without a type"))
	default:
		c.Send(room.ErrorFrame("unknown message type " + strconv.Quote(m.Type)))
	}
}

// checkImages validates a user_message's images: base64 image blocks of a
// known media type.
func checkImages(images []room.Image) error {
	for i, im := range images {
		switch {
		case im.Type != "image" || im.Source.Type != "base64":
			return fmt.Errorf(`images[%d]: want {type: "image", source: {type: "base64", media_type, data}}`, i)
		case !imageTypes[im.Source.MediaType]:
			return fmt.Errorf("images[%d]: media_type %q: want image/png, image/jpeg, image/gif or image/webp", i, im.Source.MediaType)
		case im.Source.Data == "":
			return fmt.Errorf("images[%d]: data is empty", i)
		}
		if _, err := base64.StdEncoding.DecodeString(im.Source.Data); err != nil {
			return fmt.Errorf("images[%d]: data is not base64: %w", i, err)
		}
	}
	return nil
}

// pongFrame answers ping; encoded once.
var pongFrame = room.NewFrame(0, protocol.PongFrame{Type: protocol.FramePong})

var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}
