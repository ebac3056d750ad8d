package app

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
)

// TestTerminalFlowThroughGateway: a flow=1 connection through the
// gateway's WebSocket tunnel: connected says flow, acks pace the output
// (the client receives everything in windows of the high watermark), a
// bad ack is answered bad_request, and a flow client that reattaches with
// an offset the ring no longer holds gets the screen frame and its binary
// frame, then live output.
func TestTerminalFlowThroughGateway(t *testing.T) {
	bin := buildTerminal(t)
	prefix, env := terminalEnv(t, "TERMINAL_SCROLLBACK_KB=16", "TERMINAL_FLOW_HIGH=16", "TERMINAL_FLOW_LOW=4")
	h := startTerminalHost(t, bin, "host-f", env)
	g := startGateway(t, func(env map[string]string, _ *Config) {
		env[EnvTerminalURL] = "http://" + h.addr
		env["REDIS_PREFIX"] = prefix
	})
	tok := g.token()

	type connected struct {
		Flow                bool   `json:"flow"`
		Stream              string `json:"stream"`
		Offset              int64  `json:"offset"`
		ScrollbackTruncated bool   `json:"scrollback_truncated"`
	}
	dial := func(query string) (*websocket.Conn, connected) {
		t.Helper()
		ws, status, err := g.dialWS("/ws/terminal?session=flow1"+query, http.Header{"Authorization": {"Bearer " + tok}})
		if err != nil {
			t.Fatalf("dial: %v (status %d)", err, status)
		}
		t.Cleanup(func() { _ = ws.Close() })
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		kind, msg, err := ws.ReadMessage()
		var c connected
		if err != nil || kind != websocket.TextMessage || json.Unmarshal(msg, &c) != nil || !c.Flow {
			t.Fatalf("first frame %d %s %v, want connected with flow", kind, msg, err)
		}
		return ws, c
	}
	send := func(ws *websocket.Conn, s string) {
		t.Helper()
		if err := ws.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	ack := func(ws *websocket.Conn, off int64) {
		send(ws, `{"type":"ack","offset":`+strconv.FormatInt(off, 10)+`}`)
	}

	ws, c := dial("&flow=1")
	pos := c.Offset
	var out strings.Builder
	var controls []map[string]any
	// read reads one frame: output is added and acknowledged.
	read := func() {
		t.Helper()
		_ = ws.SetReadDeadline(time.Now().Add(20 * time.Second))
		kind, msg, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v; output so far %q", err, out.String())
		}
		if kind == websocket.BinaryMessage {
			out.Write(msg)
			pos += int64(len(msg))
			ack(ws, pos)
			return
		}
		var m map[string]any
		_ = json.Unmarshal(msg, &m)
		controls = append(controls, m)
	}
	send(ws, "seq 1 20000; echo do''ne\r")
	for !strings.Contains(out.String(), "20000\r\ndone\r\n") {
		read()
	}
	for _, m := range controls {
		if m["type"] == "screen" || m["type"] == "resync" {
			t.Fatalf("the only flow client was resynchronised: %v", m)
		}
	}
	if !strings.Contains(out.String(), "\r\n9999\r\n10000\r\n10001\r\n") {
		t.Errorf("output through the gateway has a gap")
	}

	// A bad ack: bad_request, through the tunnel.
	ack(ws, pos+1)
	for n := len(controls); ; {
		read()
		if len(controls) > n && controls[len(controls)-1]["type"] == "error" {
			if e := controls[len(controls)-1]; e["code"] != "bad_request" {
				t.Fatalf("bad ack answered %v", e)
			}
			break
		}
	}

	// Reattach from offset 0, long gone from the 16 KiB ring: a screen.
	ws2, c2 := dial("&flow=1&stream=" + c.Stream + "&offset=0")
	if !c2.ScrollbackTruncated || c2.Offset == 0 {
		t.Fatalf("reattach connected %+v, want truncated at the live end", c2)
	}
	_ = ws2.SetReadDeadline(time.Now().Add(10 * time.Second))
	kind, msg, err := ws2.ReadMessage()
	var screen struct {
		Type   string `json:"type"`
		Offset int64  `json:"offset"`
		Bytes  int    `json:"bytes"`
	}
	if err != nil || kind != websocket.TextMessage || json.Unmarshal(msg, &screen) != nil || screen.Type != "screen" || screen.Offset != c2.Offset {
		t.Fatalf("frame after connected: %d %s %v, want a screen at %d", kind, msg, err, c2.Offset)
	}
	kind, data, err := ws2.ReadMessage()
	if err != nil || kind != websocket.BinaryMessage || len(data) != screen.Bytes || !strings.Contains(string(data), "done") {
		t.Fatalf("screen bytes: %d %q %v, want %d bytes showing the end of the output", kind, data, err, screen.Bytes)
	}
	send(ws2, "echo li''ve\r")
	var live strings.Builder
	for !strings.Contains(live.String(), "live\r\n") {
		_ = ws2.SetReadDeadline(time.Now().Add(10 * time.Second))
		kind, msg, err := ws2.ReadMessage()
		if err != nil {
			t.Fatalf("read after the screen: %v (%q)", err, live.String())
		}
		if kind == websocket.BinaryMessage {
			live.Write(msg)
		}
	}
}
