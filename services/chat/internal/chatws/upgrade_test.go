package chatws

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"
)

// upgraded serves WebSocket upgrades on loopback as Register does (fasthttp,
// its upgrader, a hijacked connection) and runs each connection the way
// serve does, with the reader (no room: only messages that need none may
// be sent). first, written with the upgrade request in one write, is what
// the client sends before it has the answer. It returns the client's end,
// after the 101, with its reader, and the server's conn.
func upgraded(t *testing.T, first []byte) (net.Conn, *bufio.Reader, *conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pool := newWriters(2)
	s := &server{Deps: Deps{Log: slog.New(slog.DiscardHandler)}}
	up := websocket.FastHTTPUpgrader{ReadBufferSize: readBufferSize, WriteBufferSize: writeBufferSize}
	conns := make(chan *conn, 1)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		err := up.Upgrade(ctx, func(ws *websocket.Conn) {
			rctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := newConn(ws, s.Log, pool, cancel)
			conns <- c
			c.start(nil, nil)
			s.read(rctx, c, nil)
			c.close(websocket.CloseNormalClosure)
			<-c.ended
		})
		if err != nil {
			t.Errorf("upgrade: %v", err)
		}
	}}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	req := "GET /chat HTTP/1.1\r\nHost: chat\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := client.Write(append([]byte(req), first...)); err != nil {
		t.Fatal(err)
	}
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(client)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %s", resp.Status)
	}
	var c *conn
	select {
	case c = <-conns:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection served")
	}
	return client, r, c
}

// clientFrame encodes a client's (masked) text frame with n bytes of
// payload: the header alone when payload is nil (the caller sends the n
// bytes); the mask key is zero, so the payload goes as it is.
func clientFrame(payload []byte, n int) []byte {
	b := []byte{0x81}
	switch {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n <= 0xFFFF:
		b = binary.BigEndian.AppendUint16(append(b, 0x80|126), uint16(n))
	default:
		b = binary.BigEndian.AppendUint64(append(b, 0x80|127), uint64(n))
	}
	return append(append(b, 0, 0, 0, 0), payload...)
}

// A hijacked connection writes through its descriptor, and the bytes a
// client sent before the 101 (buffered by fasthttp) are read first.
func TestUpgradedConnReadsBufferedBytes(t *testing.T) {
	msg := []byte(`{"type":"ping"}`)
	client, r, c := upgraded(t, clientFrame(msg, len(msg)))
	if c.raw == nil {
		t.Error("the hijacked connection has no descriptor: every write goes the slow way")
	}
	f := readFrame(t, r, client, time.Now().Add(10*time.Second))
	if f.opcode != 1 || string(f.payload) != `{"type":"pong"}` {
		t.Fatalf("got opcode %d %q, want the pong", f.opcode, f.payload)
	}
}

// A message over HardReadLimit closes the socket with 1009, one close
// frame: the connection's writer is the only one to write to the socket
// (the WebSocket library's own limit would write a close frame of its own,
// past the writer, which then sends a second one).
func TestUpgradedConnMessageTooBig(t *testing.T) {
	client, r, c := upgraded(t, nil)
	go func() {
		if _, err := client.Write(clientFrame(nil, HardReadLimit+1)); err != nil {
			return
		}
		_, _ = client.Write(make([]byte, HardReadLimit+1))
	}()
	wantCloseThenNothing(t, r, client, c, websocket.CloseMessageTooBig)
}

// A client's protocol error (here a frame with an unknown opcode) is
// answered by the library's close frame (1002) and nothing after it: the
// writer sends no second close frame.
func TestUpgradedConnProtocolError(t *testing.T) {
	client, r, c := upgraded(t, nil)
	if _, err := client.Write([]byte{0x83, 0x80, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	wantCloseThenNothing(t, r, client, c, websocket.CloseProtocolError)
}

// waitTornDown waits, up to 10 s, for c's connection to be torn down.
func waitTornDown(t *testing.T, c *conn) {
	t.Helper()
	select {
	case <-c.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection was not torn down")
	}
}

// wantCloseThenNothing reads a close frame with code, checks nothing
// follows it, and waits for c's teardown.
func wantCloseThenNothing(t *testing.T, r *bufio.Reader, client net.Conn, c *conn, code int) {
	t.Helper()
	f := readFrame(t, r, client, time.Now().Add(10*time.Second))
	if f.opcode != 8 || len(f.payload) < 2 || int(binary.BigEndian.Uint16(f.payload)) != code {
		t.Fatalf("got opcode %d %q, want a close with %d", f.opcode, f.payload, code)
	}
	streamEnds(t, r, client)
	waitTornDown(t, c)
}

// streamEnds checks that nothing follows the close frame just read: the
// server ends the connection.
func streamEnds(t *testing.T, r *bufio.Reader, client net.Conn) {
	t.Helper()
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := r.ReadByte()
	var ne net.Error
	switch {
	case err == nil:
		t.Fatalf("after the close frame: byte %#x (a second frame), want the end of the stream", b)
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatal("the server did not end the connection after its close frame")
	case !errors.Is(err, io.EOF):
		t.Logf("after the close frame: %v", err) // a reset also ends it
	}
}
