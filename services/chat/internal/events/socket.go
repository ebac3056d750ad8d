package events

import (
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	fws "github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/svc-code/svc-code/libs/protocol"
)

// Limits and timings of an events socket.
const (
	// DefaultMaxSockets is Config.MaxSockets's default.
	DefaultMaxSockets = 1000
	// DefaultHeartbeat is Config.Heartbeat's default.
	DefaultHeartbeat = 20 * time.Second
	// MaxClientMessage is the largest client message; a larger one
	// closes the socket with 1009.
	MaxClientMessage = 4 << 10
	// QueueSize is how many frames may wait for a slow client; one more
	// closes it with CloseTooSlow (it reconnects and gets a snapshot).
	QueueSize = 256
	// CloseTooSlow closes a client whose queue overflowed.
	CloseTooSlow      = 4001
	closeTryAgain     = 1013
	socketReadTimeout = 90 * time.Second
	pingEvery         = 30 * time.Second
	writeTimeout      = 10 * time.Second

	closeGoingAway = websocket.CloseGoingAway
)

// conn is one events socket: the Hub queues encoded frames with send,
// never blocking; one writer goroutine writes them, the heartbeats and the
// pings; the handler's goroutine reads.
type conn struct {
	ws   *websocket.Conn
	mu   sync.Mutex
	q    [][]byte
	kick chan struct{} // something to write (capacity 1)
	code int           // close code, once closing
	done chan struct{} // closed once closing
	once sync.Once
}

func newConn(ws *websocket.Conn) *conn {
	return &conn{ws: ws, kick: make(chan struct{}, 1), done: make(chan struct{})}
}

// send queues f; a full queue closes the socket with CloseTooSlow.
func (c *conn) send(f []byte) {
	c.mu.Lock()
	if c.code != 0 {
		c.mu.Unlock()
		return
	}
	if len(c.q) >= QueueSize {
		c.mu.Unlock()
		c.close(CloseTooSlow)
		return
	}
	c.q = append(c.q, f)
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// close asks the writer to send a close frame with code and end.
func (c *conn) close(code int) {
	c.once.Do(func() {
		c.mu.Lock()
		c.code = code
		c.q = nil
		c.mu.Unlock()
		close(c.done)
	})
}

// write writes the queued frames, heartbeats and pings until the socket
// closes, then the close frame, then closes the connection (which ends
// the reader).
func (c *conn) write(heartbeat time.Duration) {
	defer c.ws.NetConn().Close()
	hb := time.NewTimer(heartbeat)
	defer hb.Stop()
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	beat := encode(protocol.HeartbeatEvent{Type: protocol.EventHeartbeat})
	for {
		select {
		case <-c.done:
			c.mu.Lock()
			code := c.code
			c.mu.Unlock()
			if code > 0 {
				_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, closeText(code)), time.Now().Add(time.Second))
			}
			return
		case <-c.kick:
			c.mu.Lock()
			q := c.q
			c.q = nil
			c.mu.Unlock()
			for _, f := range q {
				if !c.writeText(f) {
					return
				}
			}
			hb.Reset(heartbeat)
		case <-hb.C:
			if !c.writeText(beat) {
				return
			}
			hb.Reset(heartbeat)
		case <-ping.C:
			if c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeTimeout)) != nil {
				return
			}
		}
	}
}

func (c *conn) writeText(f []byte) bool {
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	return c.ws.WriteMessage(websocket.TextMessage, f) == nil
}

func closeText(code int) string {
	switch code {
	case CloseTooSlow:
		return "too slow: reconnect"
	case closeTryAgain:
		return "try again"
	case websocket.CloseMessageTooBig:
		return "message too big"
	}
	return ""
}

// Register adds GET /api/events to app; the Hub must run.
func Register(app *fiber.App, h *Hub) {
	up := websocket.FastHTTPUpgrader{
		ReadBufferSize: 1 << 10, WriteBufferSize: 4 << 10, WriteBufferPool: &sync.Pool{},
		// Origins are the gateway's business: chat serves only requests
		// that carry the internal credential.
		CheckOrigin: func(*fasthttp.RequestCtx) bool { return true },
	}
	app.Get("/api/events", func(c *fiber.Ctx) error {
		if !fws.IsWebSocketUpgrade(c) {
			return &protocol.Error{Code: protocol.CodeBadRequest, Message: "/api/events needs a WebSocket upgrade", Status: fiber.StatusUpgradeRequired}
		}
		if err := h.reserve(); err != nil {
			return &protocol.Error{Code: protocol.CodeUnavailable, Message: "too many events sockets on this instance (" + strconv.Itoa(h.cfg.MaxSockets) + "): try again later", Status: fiber.StatusServiceUnavailable}
		}
		err := up.Upgrade(c.Context(), func(ws *websocket.Conn) {
			defer h.release()
			h.serve(ws)
		})
		if err != nil {
			h.release()
			return &protocol.Error{Code: protocol.CodeBadRequest, Message: "WebSocket upgrade: " + err.Error(), Status: fiber.StatusBadRequest}
		}
		return nil
	})
}

// serve runs one socket: it is its reader.
func (h *Hub) serve(ws *websocket.Conn) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(closeGoingAway, ""), time.Now().Add(time.Second))
		_ = ws.NetConn().Close()
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	defer h.wg.Done()
	c := newConn(ws)
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		c.write(h.cfg.Heartbeat)
	}()
	defer func() { <-writer }()
	defer c.close(websocket.CloseNormalClosure)
	select {
	case h.joins <- c:
	case <-h.stopped:
		c.close(closeGoingAway)
		return
	}
	defer func() {
		select {
		case h.leave <- c:
		case <-h.stopped:
		}
	}()
	_ = ws.SetReadDeadline(time.Now().Add(socketReadTimeout))
	ws.SetPongHandler(func(string) error { return ws.SetReadDeadline(time.Now().Add(socketReadTimeout)) })
	ws.SetPingHandler(func(string) error { return nil }) // the writer pings; a client's ping needs no answer
	ws.SetCloseHandler(func(code int, _ string) error {
		c.close(code)
		return nil
	})
	pong := encode(protocol.PongEvent{Type: protocol.EventPong})
	for {
		kind, r, err := ws.NextReader()
		if err != nil {
			return
		}
		msg, err := io.ReadAll(io.LimitReader(r, MaxClientMessage+1))
		if err != nil {
			return
		}
		if len(msg) > MaxClientMessage {
			c.close(websocket.CloseMessageTooBig)
			return
		}
		_ = ws.SetReadDeadline(time.Now().Add(socketReadTimeout))
		var m struct {
			Type string `json:"type"`
		}
		switch {
		case kind != websocket.TextMessage:
			c.send(errorFrame("send JSON text messages"))
		case json.Unmarshal(msg, &m) != nil:
			c.send(errorFrame("malformed JSON message"))
		case m.Type == "ping":
			c.send(pong)
		default:
			c.send(errorFrame("unknown message type " + strconv.Quote(m.Type) + ": the events socket takes only ping"))
		}
	}
}
