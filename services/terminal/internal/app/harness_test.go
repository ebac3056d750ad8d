package app

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/svchttp/svchttptest"
	"github.com/svc-code/svc-code/services/terminal/internal/termws"
)

func TestMain(m *testing.M) { svchttptest.VerifyTestMain(m) }

const testSecret = "0123456789abcdef-terminal-tests"

// testPrompt is the prompt of the test shells: output can be awaited by it.
const testPrompt = "READY> "

func testRedisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// host is one terminal instance started by startHost.
type host struct {
	t      *testing.T
	addr   string
	base   string
	prefix string
	home   string
	p      parts
	rdb    *redis.Client
	stop   context.CancelFunc
	done   chan error
	logs   *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// hostOption changes a host's environment or configuration.
type hostOption func(env map[string]string, cfg *Config)

func withEnv(k, v string) hostOption {
	return func(env map[string]string, cfg *Config) {
		if cfg == nil {
			env[k] = v
		}
	}
}

// startHost runs Run in-process on 127.0.0.1:0 against the test Redis,
// with bash as the shell (no rc files, a known prompt) and a home of its
// own. It is stopped, and checked to stop cleanly, at the end of the test.
func startHost(t *testing.T, opts ...hostOption) *host {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"HOME":                home,
		"SVC_CODE_HOME":       filepath.Join(dir, "data"),
		"SVC_INTERNAL_SECRET": testSecret,
		"REDIS_URL":           testRedisURL(),
		"REDIS_PREFIX":        "test:" + randomHex(6) + ":",
		"SHUTDOWN_TIMEOUT":    "10s",
		"TERMINAL_SHELL":      "bash",
	}
	for _, o := range opts {
		o(env, nil)
	}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	cfg.ShellArgs = []string{"--norc", "--noprofile"}
	cfg.ShellEnv = []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "PS1=" + testPrompt, "HISTFILE=/dev/null", "LANG=C",
	}
	ready := make(chan parts, 1)
	cfg.started = func(p parts) { ready <- p }
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listener = ln
	for _, o := range opts {
		o(env, &cfg)
	}
	rdb, err := redisx.Connect(context.Background(), testRedisURL())
	if err != nil {
		t.Fatalf("Redis must be reachable (TEST_REDIS_URL): %v", err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	h := &host{
		t: t, addr: ln.Addr().String(), base: "http://" + ln.Addr().String(), prefix: cfg.RedisPrefix, home: home,
		rdb: rdb, stop: cancel, done: make(chan error, 1), logs: logs,
	}
	go func() { h.done <- Run(ctx, cfg, log) }()
	t.Cleanup(h.shutdown)
	select {
	case h.p = <-ready:
	case err := <-h.done:
		t.Fatalf("Run: %v\n%s", err, logs)
	case <-time.After(10 * time.Second):
		t.Fatal("terminal did not start within 10s")
	}
	return h
}

// shutdown stops the host (once) and checks that Run returned cleanly.
func (h *host) shutdown() {
	if h.done == nil {
		return
	}
	h.stop()
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		h.t.Errorf("Run did not return within 20s of its context's end")
	}
	h.done = nil
	keys, _ := h.rdb.Keys(context.Background(), h.prefix+"*").Result()
	if len(keys) > 0 {
		h.rdb.Del(context.Background(), keys...)
	}
	_ = h.rdb.Close()
	if h.t.Failed() {
		h.t.Logf("terminal log:\n%s", h.logs)
	}
}

// request sends an HTTP request with the internal credential.
func (h *host) request(method, path, contentType, body string) (int, map[string]any) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, h.base+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set(protocol.HeaderInternal, testSecret)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := testHTTP.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		h.t.Fatalf("%s %s: %d %q is not JSON: %v", method, path, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, m
}

var testHTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// client is one WebSocket connection to a terminal, read by the test's
// goroutine.
type client struct {
	t         *testing.T
	ws        *websocket.Conn
	connected termws.Connected
	out       []byte // output received (binary frames), replay included
	outBase   int    // bytes trimmed from the front of out (see keep)
	keep      int    // when > 0, out keeps only about its last keep bytes
	pos       int64  // stream offset after the last byte received
	controls  []map[string]any
	closeCode int // set when the server closed
	// Flow clients: screens received (each with the mark of the output
	// that follows it), whether each output frame is acknowledged as it
	// arrives, and a pause for each 4 KiB of output (a slow reader).
	screens []screenAt
	autoAck bool
	delay   time.Duration
	// outFrames counts the binary (output) frames received.
	outFrames int
}

// screenAt is a screen frame and its serialized screen, received when the
// output was at mark.
type screenAt struct {
	termws.Screen
	data []byte
	mark int
}

// dial opens /ws/terminal with the query q and reads the connected frame.
func (h *host) dial(q url.Values, header http.Header) *client {
	h.t.Helper()
	c, refusal, err := h.tryDial(q, header)
	if err != nil {
		h.t.Fatalf("dial %v: %v (%+v)", q, err, refusal)
	}
	return c
}

// refusal is the answer to a refused upgrade.
type refusal struct {
	status int
	body   map[string]any
}

func (h *host) tryDial(q url.Values, header http.Header) (*client, refusal, error) {
	if header == nil {
		header = http.Header{}
	}
	header.Set(protocol.HeaderInternal, testSecret)
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	ws, resp, err := d.Dial("ws://"+h.addr+"/ws/terminal?"+q.Encode(), header)
	var r refusal
	if resp != nil {
		r.status = resp.StatusCode
		raw, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		_ = json.Unmarshal(raw, &r.body)
	}
	if err != nil {
		return nil, r, err
	}
	c := &client{t: h.t, ws: ws}
	h.t.Cleanup(func() { _ = ws.Close() })
	kind, msg := c.next(5 * time.Second)
	if kind != websocket.TextMessage {
		h.t.Fatalf("first frame is %d %q, want the connected frame", kind, msg)
	}
	if err := json.Unmarshal(msg, &c.connected); err != nil || c.connected.Type != termws.TypeConnected {
		h.t.Fatalf("first frame %s is not connected: %v", msg, err)
	}
	c.pos = c.connected.Offset
	// A screen announced by connected (a flow client whose replay would
	// be truncated) comes first.
	if c.connected.Flow && c.connected.ScrollbackTruncated {
		kind, msg := c.next(5 * time.Second)
		if kind != websocket.TextMessage {
			h.t.Fatalf("frame after a truncated flow connected is %d %q, want a screen frame", kind, msg)
		}
		c.readScreen(msg)
	}
	return c, r, nil
}

func session(name string, extra ...string) url.Values {
	q := url.Values{"session": {name}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return q
}

// next reads one frame within d; kind 0 and the error text when the
// connection ended.
func (c *client) next(d time.Duration) (int, []byte) {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(d))
	kind, msg, err := c.ws.ReadMessage()
	if err != nil {
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			c.closeCode = ce.Code
		}
		return 0, []byte(err.Error())
	}
	return kind, msg
}

// pump reads frames until cond holds, failing after d. Output frames are
// added to out; control frames to controls.
func (c *client) pump(d time.Duration, what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		left := time.Until(deadline)
		if left <= 0 {
			c.t.Fatalf("timed out after %v waiting for %s; output so far:\n%q\ncontrols: %v", d, what, tail(c.out), c.controls)
		}
		kind, msg := c.next(left)
		switch kind {
		case websocket.BinaryMessage:
			c.out = append(c.out, msg...)
			c.outFrames++
			c.pos += int64(len(msg))
			if c.keep > 0 && len(c.out) > 2*c.keep {
				cut := len(c.out) - c.keep
				c.out = append(c.out[:0], c.out[cut:]...)
				c.outBase += cut
			}
			if c.delay > 0 {
				// A slow reader (not a synchronisation): delay per 4 KiB.
				time.Sleep(c.delay * time.Duration((len(msg)+4095)/4096))
			}
			if c.autoAck {
				c.ack(c.pos)
			}
		case websocket.TextMessage:
			var m map[string]any
			if err := json.Unmarshal(msg, &m); err != nil {
				c.t.Fatalf("text frame %q is not a control frame: %v", msg, err)
			}
			if m["type"] == termws.TypeResync {
				c.pos = int64(m["offset"].(float64))
			}
			if m["type"] == termws.TypeScreen {
				c.readScreen(msg)
			}
			c.controls = append(c.controls, m)
		default:
			if cond() {
				return
			}
			c.t.Fatalf("connection ended (%s) waiting for %s; output:\n%q\ncontrols: %v", msg, what, tail(c.out), c.controls)
		}
	}
}

// readScreen reads the serialized screen that follows a screen frame.
func (c *client) readScreen(frame []byte) {
	c.t.Helper()
	var s screenAt
	if err := json.Unmarshal(frame, &s.Screen); err != nil {
		c.t.Fatalf("screen frame %s: %v", frame, err)
	}
	kind, data := c.next(10 * time.Second)
	if kind != websocket.BinaryMessage || len(data) != s.Bytes {
		c.t.Fatalf("after %s: frame %d of %d bytes, want the binary screen of %d", frame, kind, len(data), s.Bytes)
	}
	s.data, s.mark = data, c.mark()
	c.screens = append(c.screens, s)
	c.pos = s.Offset
}

// ack acknowledges output up to off.
func (c *client) ack(off int64) {
	c.t.Helper()
	c.send(`{"type":"ack","offset":` + strconv.FormatInt(off, 10) + `}`)
}

func tail(b []byte) []byte {
	if len(b) > 2000 {
		return b[len(b)-2000:]
	}
	return b
}

// mark is the position of the end of the output received so far.
func (c *client) mark() int { return c.outBase + len(c.out) }

// since is the output received after mark (what is still kept of it).
func (c *client) since(mark int) []byte { return c.out[min(max(mark-c.outBase, 0), len(c.out)):] }

// waitOutput reads until the output after mark contains s, and returns
// the new mark.
func (c *client) waitOutput(mark int, s string) int {
	c.t.Helper()
	c.pump(10*time.Second, "output "+strconvQuote(s), func() bool { return bytes.Contains(c.since(mark), []byte(s)) })
	return c.mark()
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// waitControl reads until a control frame of type typ arrives and returns it.
func (c *client) waitControl(typ string) map[string]any {
	c.t.Helper()
	var got map[string]any
	c.pump(10*time.Second, typ+" frame", func() bool {
		for _, m := range c.controls {
			if m["type"] == typ {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// waitClosed reads until the server closes the connection, and closes
// the client's side.
func (c *client) waitClosed() int {
	c.t.Helper()
	defer c.ws.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		kind, msg := c.next(time.Until(deadline))
		switch kind {
		case websocket.BinaryMessage:
			c.out = append(c.out, msg...)
		case websocket.TextMessage:
			var m map[string]any
			_ = json.Unmarshal(msg, &m)
			c.controls = append(c.controls, m)
		default:
			if c.closeCode == 0 {
				c.t.Fatalf("connection ended without a close frame: %s", msg)
			}
			return c.closeCode
		}
	}
}

// send writes a text frame.
func (c *client) send(s string) {
	c.t.Helper()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := c.ws.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		c.t.Fatalf("send %q: %v", s, err)
	}
}

// run types a command line and waits until, after the line's echo, the
// output contains want and the prompt is back; it returns the output
// since the command was sent.
func (c *client) run(cmd, want string) string {
	c.t.Helper()
	mark := c.mark()
	c.send(cmd + "\r")
	prompt := []byte(strings.TrimRight(testPrompt, " "))
	c.pump(10*time.Second, "output "+strconvQuote(want)+" and the prompt after "+strconvQuote(cmd), func() bool {
		out := c.since(mark)
		_, after, ok := bytes.Cut(out, []byte("\n"))
		return ok && bytes.Contains(after, []byte(want)) && bytes.HasSuffix(bytes.TrimRight(out, " "), prompt)
	})
	return string(c.since(mark))
}

// ready waits until the shell has run a command.
func (c *client) ready() {
	c.t.Helper()
	c.run("echo rea''dy", "ready")
}

// close ends the connection from the client side.
func (c *client) close() {
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	_ = c.ws.Close()
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
