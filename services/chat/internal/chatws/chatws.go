// Package chatws serves the /chat WebSocket: it resolves or creates the
// session before the upgrade (an unknown session id is answered 404, a bad
// cwd or provider 400, without upgrading), joins the session's room
// (internal/room), sends `connected`, the pending permission requests
// (replay: true), the log after `after_line`, then live frames; and it turns
// client messages into room calls.
//
// Each connection has one reader (the upgrade handler's goroutine, which
// also runs the client's messages) and one writer goroutine, the only one
// that writes to the socket, fed by a bounded queue. A client whose queue
// overflows is closed with CloseTooSlow and may reconnect with after_line.
// Reads have a deadline extended by every frame and pong; writes have a
// deadline; teardown closes the raw connection, which unblocks both.
package chatws

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	fws "github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"

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
)

// Deps is what the route needs.
type Deps struct {
	Store *store.Store
	Rooms *room.Manager
	Home  string // reported as home in connected; "" means $HOME
	Log   *slog.Logger
}

type server struct {
	Deps
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[*conn]bool
}

// Handler serves /chat; Wait blocks until its connections have ended.
type Handler struct{ s *server }

// Register adds GET /chat to app.
func Register(app *fiber.App, d Deps) *Handler {
	if d.Home == "" {
		d.Home, _ = os.UserHomeDir()
	}
	s := &server{Deps: d, conns: map[*conn]bool{}}
	app.Get("/chat", s.prepare, fws.New(s.serve, fws.Config{ReadBufferSize: 16 << 10, WriteBufferSize: 16 << 10}))
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
	} else {
		cwd, prov := c.Query("cwd"), c.Query("provider")
		if prov == "" {
			prov = providers.Default
		}
		if _, ok := providers.Lookup(prov); !ok {
			return protocol.Errorf(protocol.CodeBadRequest, "unknown provider %q", prov)
		}
		if cwd == "" || !filepath.IsAbs(cwd) {
			return protocol.Errorf(protocol.CodeBadRequest, "cwd: want an absolute path (or pass session)")
		}
		cwd = filepath.Clean(cwd)
		if info, err := os.Stat(cwd); err != nil || !info.IsDir() {
			return protocol.Errorf(protocol.CodeBadRequest, "cwd %q: not an existing directory", cwd)
		}
		if sess, err = s.Store.Create(ctx, store.NewSession{Cwd: cwd, Provider: string([]byte(prov))}); err != nil {
			return err
		}
	}
	c.Locals("chat_session", sess)
	c.Locals("chat_after", after)
	c.Locals("chat_reconnect", reconnect)
	return c.Next()
}

// conn is one client connection.
type conn struct {
	ws    *websocket.Conn
	log   *slog.Logger
	queue chan room.Frame
	done  chan struct{}
	once  sync.Once
	code  int // close code, set before done is closed
}

// Send implements room.Sink: it never blocks; an overflow closes c.
func (c *conn) Send(f room.Frame) {
	select {
	case <-c.done:
	case c.queue <- f:
	default:
		c.close(CloseTooSlow)
	}
}

func (c *conn) close(code int) {
	c.once.Do(func() {
		c.code = code
		close(c.done)
	})
}

func (s *server) serve(fc *fws.Conn) {
	s.wg.Add(1)
	defer s.wg.Done()
	sess, _ := fc.Locals("chat_session").(store.Session)
	after, _ := fc.Locals("chat_after").(int64)
	reconnect, _ := fc.Locals("chat_reconnect").(bool)
	log := s.Log.With("session_id", sess.ID)
	c := &conn{ws: fc.Conn, log: log, queue: make(chan room.Frame, QueueSize), done: make(chan struct{})}

	s.mu.Lock()
	s.conns[c] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()

	r, snap := s.Rooms.Join(sess.ID, c)
	defer r.Leave(c)

	desc, _ := providers.Lookup(sess.Provider)
	head := []room.Frame{room.NewFrame(0, map[string]any{
		"type": "connected", "session_id": sess.ID, "cwd": sess.Cwd, "home": s.Home, "workspace": sess.Cwd,
		"is_reconnect": reconnect, "agent_running": snap.Running, "is_compacting": snap.Compacting,
		"provider": sess.Provider, "provider_display_name": desc.DisplayName, "provider_caps": desc.Caps,
		"provider_locked": sess.ProviderLocked, "permission_mode": sess.PermissionMode,
	})}
	for _, p := range snap.Pending {
		head = append(head, room.PermissionRequestFrame(p, true))
	}

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.write(c, sess.ID, head, after)
	}()
	s.read(c, r)
	c.close(websocket.CloseNormalClosure)
	<-writerDone
}

// read runs the client's messages until the connection ends.
func (s *server) read(c *conn, r *room.Room) {
	c.ws.SetReadLimit(HardReadLimit)
	_ = c.ws.SetReadDeadline(time.Now().Add(readTimeout))
	c.ws.SetPongHandler(func(string) error { return c.ws.SetReadDeadline(time.Now().Add(readTimeout)) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-c.done
		cancel()
	}()
	for {
		kind, msg, err := c.ws.ReadMessage()
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				c.close(websocket.CloseMessageTooBig)
			}
			return
		}
		_ = c.ws.SetReadDeadline(time.Now().Add(readTimeout))
		select {
		case <-c.done: // the writer has ended, after its deadline above
			return
		default:
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

// clientMessage is every field of every client message.
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
}

func (s *server) handle(ctx context.Context, c *conn, r *room.Room, raw []byte) {
	var m clientMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		c.Send(room.ErrorFrame("malformed JSON message: " + err.Error()))
		return
	}
	switch m.Type {
	case "ping":
		c.Send(room.NewFrame(0, map[string]string{"type": "pong"}))
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
	case "set_permission_mode":
		r.Do(ctx, c, room.Command{Type: m.Type, Mode: m.Mode})
	case "permission_response":
		if m.RequestID == "" || (m.Behavior != string(agent.Allow) && m.Behavior != string(agent.Deny)) {
			c.Send(room.ErrorFrame(`permission_response: request_id and behavior ("allow" or "deny") are required`))
			return
		}
		r.Do(ctx, c, room.Command{Type: m.Type, RequestID: m.RequestID, Decision: agent.PermissionDecision{
			Behavior: agent.Behavior(m.Behavior), UpdatedInput: m.UpdatedInput,
			SuggestionIndex: m.SuggestionIndex, Message: m.Message,
		}})
	case "tool_answer":
		if m.RequestID == "" || len(m.Answers) == 0 || m.Answers[0] != '{' {
			c.Send(room.ErrorFrame("tool_answer: request_id and answers (an object) are required"))
			return
		}
		r.Do(ctx, c, room.Command{Type: m.Type, RequestID: m.RequestID, Answers: m.Answers})
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

var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// write is the connection's only writer: head, the log after `after` (when
// >= 0), then live frames without the lines already replayed.
func (s *server) write(c *conn, id string, head []room.Frame, after int64) {
	// Unblocks the reader: fasthttp closes a hijacked connection only
	// after its handler returns (Close is a no-op before), so the reader's
	// pending read is ended by a deadline in the past.
	defer func() {
		_ = c.ws.NetConn().SetReadDeadline(time.Now())
		_ = c.ws.NetConn().Close()
	}()
	put := func(f room.Frame) bool {
		_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
		if err := c.ws.WriteMessage(websocket.TextMessage, f.Data); err != nil {
			c.close(0)
			return false
		}
		return true
	}
	for _, f := range head {
		if !put(f) {
			return
		}
	}
	last := int64(-1)
	if after >= 0 {
		last = after
		for {
			msgs, err := s.Store.Messages(context.Background(), id, last, replayPage)
			if err != nil {
				c.log.Error("replay log", "err", err)
				put(room.ErrorFrame("could not replay the log"))
				break
			}
			for _, m := range msgs {
				if !put(room.FrameOf(m)) {
					return
				}
				last = m.Line
			}
			if len(msgs) < replayPage {
				break
			}
		}
	}
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	for {
		select {
		case f := <-c.queue:
			if f.Line != 0 && f.Line <= last {
				continue // already replayed
			}
			if !put(f) {
				return
			}
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeTimeout)); err != nil {
				c.close(0)
				return
			}
		case <-c.done:
			if c.code != 0 {
				reason := ""
				if c.code == CloseTooSlow {
					reason = "too slow: reconnect with after_line"
				}
				_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.code, reason), time.Now().Add(time.Second))
			}
			return
		}
	}
}
