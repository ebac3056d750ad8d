package app

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/chatws"
)

// The flood: two turns with a message of bigBytes (an assistant message
// and a result of that size each) fill the kernel's buffers of the stalled
// socket (a send buffer grows to 4 MiB by default), then a turn of
// floodChunks messages overflows its queue of chatws.QueueSize frames.
const (
	bigBytes    = 1 << 20
	floodChunks = 2 * chatws.QueueSize
	// floodLines is what the flood logs: per BIG turn the prompt,
	// system/init, the message and the result; then the SLOW turn's
	// prompt, system/init, chunks and result.
	floodLines = 2*4 + floodChunks + 3
)

// dialStalled opens the session's socket with a tiny receive buffer and
// reads `connected`; the test then stops reading it.
func (c *chat) dialStalled(id string) *websocket.Conn {
	c.t.Helper()
	nd := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		return errors.Join(err, serr)
	}}
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second, NetDialContext: nd.DialContext, ReadBufferSize: 1024}
	h := http.Header{}
	h.Set(protocol.HeaderInternal, testSecret)
	ws, resp, err := d.DialContext(context.Background(), "ws://"+c.addr+"/chat?"+url.Values{"session": {id}}.Encode(), h)
	if resp != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		c.t.Fatalf("dial the stalled socket: %v", err)
	}
	c.t.Cleanup(func() { _ = ws.Close() })
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var f frame
	if err := ws.ReadJSON(&f); err != nil || f.str("type") != "connected" {
		c.t.Fatalf("stalled socket: first frame %v (%v), want connected", f, err)
	}
	return ws
}

// readLogged reads frames, in the background, until n logged frames (with
// a line) have come, and delivers them by line; an error ends it.
func readLogged(ws *websocket.Conn, n int) <-chan loggedFrames {
	ch := make(chan loggedFrames, 1)
	go func() {
		got := loggedFrames{byLine: map[int64]string{}}
		defer func() { ch <- got }()
		for len(got.byLine) < n {
			_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, raw, err := ws.ReadMessage()
			if err != nil {
				got.err = err
				return
			}
			var f frame
			if err := json.Unmarshal(raw, &f); err != nil {
				got.err = err
				return
			}
			if f.line() != 0 {
				got.byLine[f.line()] = string(raw)
			}
		}
	}()
	return ch
}

type loggedFrames struct {
	byLine map[int64]string
	err    error
}

// check fails the test unless g holds lines 1..n.
func (g loggedFrames) check(t *testing.T, name string, n int) {
	t.Helper()
	if g.err != nil {
		t.Fatalf("%s: after %d logged frames: %v", name, len(g.byLine), g.err)
	}
	for l := int64(1); l <= int64(n); l++ {
		if _, ok := g.byLine[l]; !ok {
			t.Fatalf("%s: line %d missing", name, l)
		}
	}
	if len(g.byLine) != n {
		t.Fatalf("%s: %d logged frames, want %d", name, len(g.byLine), n)
	}
}

// A socket that stops reading while the agent floods is closed with 4001
// ("too slow") without holding up the session's other sockets, which get
// every frame; reconnecting with after_line then gives it every frame.
func TestChatSlowSocketClosedTooSlow(t *testing.T) {
	c := startFakeChat(t, "FAKECLAUDE_DELAY=0s")
	fast, conn := c.connect()
	id := conn.str("session_id")
	other, _ := c.join(id, -1)
	stalled := c.dialStalled(id)

	first, second := readLogged(fast.ws, floodLines), readLogged(other.ws, floodLines)
	for _, p := range []string{"BIG " + strconv.Itoa(bigBytes), "BIG " + strconv.Itoa(bigBytes), "SLOW " + strconv.Itoa(floodChunks)} {
		fast.send(map[string]any{"type": "user_message", "content": p})
	}
	got := <-first
	got.check(t, "first socket", floodLines)
	(<-second).check(t, "second socket", floodLines)

	// The stalled socket, read again, ends with 4001 after some frames.
	_ = stalled.SetReadDeadline(time.Now().Add(30 * time.Second))
	read := 0
	for {
		_, _, err := stalled.ReadMessage()
		if err == nil {
			read++
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != chatws.CloseTooSlow {
			t.Fatalf("stalled socket: after %d frames: %v, want close %d", read, err, chatws.CloseTooSlow)
		}
		break
	}
	if read >= floodLines {
		t.Fatalf("stalled socket read %d frames before its close: it was not too slow", read)
	}

	// Reconnected with after_line=0 it gets every frame of the log.
	back, _ := c.join(id, 0)
	replayed := <-readLogged(back.ws, floodLines)
	replayed.check(t, "reconnected socket", floodLines)
	// The same frames (as JSON values: the log is jsonb, which orders keys
	// its own way).
	for n, live := range got.byLine {
		var a, b any
		if json.Unmarshal([]byte(live), &a) != nil || json.Unmarshal([]byte(replayed.byLine[n]), &b) != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("line %d: replayed %.200s, live %.200s", n, replayed.byLine[n], live)
		}
	}
}

// A client's ping is answered with a pong carrying its payload, and a
// client's close is answered with its code: both go through the socket's
// writer, between frames.
func TestChatPingAndCloseFromClient(t *testing.T) {
	c := startFakeChat(t)
	w, _ := c.connect()
	pongs := make(chan string, 1)
	w.ws.SetPongHandler(func(data string) error {
		pongs <- data
		return nil
	})
	if err := w.ws.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	w.send(map[string]any{"type": "ping"})
	if f := w.next(); f.str("type") != "pong" { // reading also runs the pong handler
		t.Fatalf("after a ping message: %v, want pong", f)
	}
	select {
	case got := <-pongs:
		if got != "are you there" {
			t.Errorf("pong payload %q, want the ping's", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no pong to the client's ping")
	}

	if err := w.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4000, "bye"), time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	_ = w.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _, err := w.ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4000 {
		t.Fatalf("after the client's close: %v, want the close echoed with 4000", err)
	}
}
