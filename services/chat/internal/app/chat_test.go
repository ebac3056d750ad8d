package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/agent/claude/claudetest"
	"github.com/svc-code/svc-code/services/chat/internal/store"
	"github.com/svc-code/svc-code/services/chat/internal/store/storetest"
)

var (
	fakeOnce sync.Once
	fakePath string
	errFake  error
)

// fake returns the path of cmd/fakeclaude, built once per test binary.
func fake(t *testing.T) string {
	t.Helper()
	fakeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chat-fakeclaude-")
		if err != nil {
			errFake = err
			return
		}
		fakePath, errFake = claudetest.BuildFake(context.Background(), dir)
	})
	if errFake != nil {
		t.Fatal(errFake)
	}
	return fakePath
}

func notFound(string) (string, error) { return "", errors.New("executable file not found in $PATH") }

// startFakeChat starts chat with agent-sdk's path set to fakeclaude.
func startFakeChat(t *testing.T, env ...string) *chat {
	t.Helper()
	c := startChatEnv(t, notFound, env)
	c.do(http.MethodPut, "/api/app/provider-path/claude", `{"path":`+quote(fake(t))+`}`).want(t, http.StatusOK, "")
	return c
}

// frame is a server frame, decoded.
type frame map[string]any

func (f frame) str(k string) string { s, _ := f[k].(string); return s }

func (f frame) line() int64 { n, _ := f["line"].(float64); return int64(n) }

// dataType is the type of an agent_message's data.
func (f frame) dataType() string {
	d, _ := f["data"].(map[string]any)
	s, _ := d["type"].(string)
	return s
}

// wsClient is one /chat socket of a test.
type wsClient struct {
	t  *testing.T
	ws *websocket.Conn
}

// dial opens /chat with query q; it fails the test unless the upgrade works.
func (c *chat) dial(q url.Values) *wsClient {
	c.t.Helper()
	ws, status, err := c.tryDial(q)
	if err != nil {
		c.t.Fatalf("dial /chat?%s: %v (status %d)", q.Encode(), err, status)
	}
	w := &wsClient{t: c.t, ws: ws}
	c.t.Cleanup(func() { _ = ws.Close() })
	return w
}

func (c *chat) tryDial(q url.Values) (*websocket.Conn, int, error) {
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	h := http.Header{}
	h.Set(protocol.HeaderInternal, testSecret)
	ws, resp, err := d.Dial("ws://"+c.addr+"/chat?"+q.Encode(), h)
	status := 0
	if resp != nil {
		status = resp.StatusCode
		_ = resp.Body.Close()
	}
	return ws, status, err
}

func (w *wsClient) send(v any) {
	w.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		w.t.Fatal(err)
	}
	w.sendRaw(string(b))
}

func (w *wsClient) sendRaw(s string) {
	w.t.Helper()
	if err := w.ws.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

// next reads one frame, failing the test after 10 s.
func (w *wsClient) next() frame {
	w.t.Helper()
	_ = w.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := w.ws.ReadMessage()
	if err != nil {
		w.t.Fatalf("read frame: %v", err)
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		w.t.Fatalf("frame is not JSON: %v: %s", err, b)
	}
	return f
}

// until reads frames until match returns true and returns them all, the
// matching one last.
func (w *wsClient) until(what string, match func(frame) bool) []frame {
	w.t.Helper()
	var seen []frame
	for {
		f := w.next()
		seen = append(seen, f)
		if match(f) {
			return seen
		}
		if len(seen) > 500 {
			w.t.Fatalf("no %s in 500 frames", what)
		}
	}
}

func isType(typ string) func(frame) bool { return func(f frame) bool { return f.str("type") == typ } }

func isResult(f frame) bool { return f.str("type") == "agent_message" && f.dataType() == "result" }

// connect opens a new session in a temporary cwd and reads `connected`.
func (c *chat) connect() (*wsClient, frame) {
	c.t.Helper()
	w := c.dial(url.Values{"cwd": {c.t.TempDir()}})
	f := w.next()
	if f.str("type") != "connected" {
		c.t.Fatalf("first frame %v, want connected", f)
	}
	return w, f
}

// join opens the session's socket (with after_line when >= 0) and reads
// `connected`.
func (c *chat) join(id string, after int64) (*wsClient, frame) {
	c.t.Helper()
	q := url.Values{"session": {id}}
	if after >= 0 {
		q.Set("after_line", strconv.FormatInt(after, 10))
	}
	w := c.dial(q)
	f := w.next()
	if f.str("type") != "connected" {
		c.t.Fatalf("first frame %v, want connected", f)
	}
	return w, f
}

func TestChatTextTurn(t *testing.T) {
	c := startFakeChat(t)
	w, conn := c.connect()
	for _, k := range []string{
		"session_id", "cwd", "home", "workspace", "is_reconnect", "agent_running",
		"is_compacting", "provider", "provider_display_name", "provider_caps", "provider_locked",
	} {
		if _, ok := conn[k]; !ok {
			t.Errorf("connected lacks %s: %v", k, conn)
		}
	}
	if conn.str("provider") != "agent-sdk" || conn["provider_locked"] != false || conn["is_reconnect"] != false {
		t.Errorf("connected = %v", conn)
	}
	id := conn.str("session_id")

	w.send(map[string]any{"type": "user_message", "content": "hello there"})
	seen := w.until("result", isResult)
	var stored, ack frame
	last := int64(0)
	for _, f := range seen {
		switch f.str("type") {
		case "message_stored":
			stored = f
		case "user_message_stored":
			ack = f
		case "agent_message":
			if f.line() <= last {
				t.Errorf("agent_message line %d after line %d", f.line(), last)
			}
			last = f.line()
		}
	}
	if stored == nil || stored.line() != 1 {
		t.Fatalf("message_stored = %v, want line 1", stored)
	}
	if ack == nil || ack.str("promptId") != id+":1" || ack["isFavorite"] != false {
		t.Fatalf("user_message_stored = %v", ack)
	}
	// The turn is recorded just after its result is broadcast.
	got := c.do(http.MethodGet, "/api/session/"+id, "")
	for deadline := time.Now().Add(5 * time.Second); got.body["turns"] != float64(1) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		got = c.do(http.MethodGet, "/api/session/"+id, "")
	}
	if got.body["turns"] != float64(1) || got.body["provider_locked"] != true {
		t.Errorf("session after a turn = %s, want turns 1 and provider_locked", got.raw)
	}
	if got.body["last_line"] != float64(last) {
		t.Errorf("last_line = %v, want %d", got.body["last_line"], last)
	}
}

func TestChatPermissionAcrossTabs(t *testing.T) {
	c := startFakeChat(t)
	a, conn := c.connect()
	id := conn.str("session_id")
	b, bconn := c.join(id, -1)
	if bconn["is_reconnect"] != true {
		t.Errorf("second tab connected = %v, want is_reconnect", bconn)
	}

	a.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	req := a.until("permission_request", isType("permission_request"))
	pr := req[len(req)-1]
	if pr.str("tool_name") != "Bash" || pr["input"] == nil || pr.str("request_id") == "" {
		t.Fatalf("permission_request = %v", pr)
	}
	breq := b.until("permission_request", isType("permission_request"))
	if got := breq[len(breq)-1].str("request_id"); got != pr.str("request_id") {
		t.Fatalf("tab B request_id %q, want %q", got, pr.str("request_id"))
	}
	for _, f := range breq {
		if f.str("type") == "user_message_stored" {
			t.Errorf("tab B got the sender's user_message_stored")
		}
	}
	if got := c.do(http.MethodGet, "/api/session/"+id, ""); got.body["agent_running"] != true {
		t.Errorf("agent_running while a permission waits = %v, want true", got.body["agent_running"])
	}

	// A bad answered_by is refused and answers nothing: the request stays
	// pending.
	for _, bad := range []string{strings.Repeat("x", 201), `tab\n2`, `tab\u00072`} { // JSON escapes
		b.sendRaw(`{"type":"permission_response","request_id":"` + pr.str("request_id") + `","behavior":"allow","answered_by":"` + bad + `"}`)
		if f := b.next(); f.str("type") != "error" || !strings.Contains(f.str("message"), "answered_by") {
			t.Fatalf("answered_by %q: got %v, want an error frame", bad, f)
		}
	}
	b.send(map[string]any{
		"type": "permission_response", "request_id": pr.str("request_id"), "behavior": "allow",
		"answered_by": "Chromium on Linux · tab 3f2a",
	})
	for name, w := range map[string]*wsClient{"A": a, "B": b} {
		res := w.until("permission_resolved", isType("permission_resolved"))
		if f := res[len(res)-1]; f["ok"] != true || f.str("request_id") != pr.str("request_id") || f.str("behavior") != "allow" ||
			f.str("answered_by") != "Chromium on Linux · tab 3f2a" {
			t.Errorf("tab %s: permission_resolved = %v", name, f)
		}
		w.until("result", isResult)
	}
}

func TestChatReconnectAfterLine(t *testing.T) {
	c := startFakeChat(t)
	a, conn := c.connect()
	id := conn.str("session_id")
	a.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	before := a.until("permission_request", isType("permission_request"))
	pr := before[len(before)-1]
	var lines []int64
	for _, f := range before {
		if f.line() > 0 {
			lines = append(lines, f.line())
		}
	}
	if len(lines) < 2 {
		t.Fatalf("want at least two lines before the ask, got %v", lines)
	}
	_ = a.ws.Close()

	// Missed everything after the prompt (line 1).
	b, bconn := c.join(id, 1)
	if bconn["agent_running"] != true || bconn["is_reconnect"] != true {
		t.Errorf("reconnect connected = %v", bconn)
	}
	replay := b.next()
	if replay.str("type") != "permission_request" || replay["replay"] != true || replay.str("request_id") != pr.str("request_id") {
		t.Fatalf("frame after connected = %v, want the pending permission_request replayed", replay)
	}
	var got []int64
	for len(got) < len(lines)-1 {
		f := b.next()
		if f.line() > 0 {
			got = append(got, f.line())
		}
	}
	for i, l := range got {
		if l != lines[i+1] {
			t.Fatalf("replayed lines %v, want %v", got, lines[1:])
		}
	}
	b.send(map[string]any{"type": "permission_response", "request_id": pr.str("request_id"), "behavior": "deny"})
	rest := b.until("result", isResult)
	seen := map[int64]bool{}
	for _, l := range got {
		seen[l] = true
	}
	for _, f := range rest {
		if l := f.line(); l > 0 {
			if seen[l] {
				t.Errorf("line %d sent twice", l)
			}
			seen[l] = true
		}
	}
}

func TestChatStopMidTurn(t *testing.T) {
	c := startFakeChat(t, "FAKECLAUDE_DELAY=200ms")
	w, _ := c.connect()
	w.send(map[string]any{"type": "user_message", "content": "SLOW 100"})
	w.until("assistant chunk", func(f frame) bool { return f.dataType() == "assistant" })
	w.send(map[string]any{"type": "stop"})
	var stopped, result frame
	for stopped == nil || result == nil {
		f := w.next()
		switch {
		case f.str("type") == "stopped":
			stopped = f
		case isResult(f):
			result = f
		}
	}
	d, _ := result["data"].(map[string]any)
	if d["subtype"] != "error_during_execution" {
		t.Errorf("result of the stopped turn = %v", d)
	}
	// The process stays warm: the next turn works.
	w.send(map[string]any{"type": "user_message", "content": "again"})
	w.until("result", isResult)
}

func TestChatStopOverHTTP(t *testing.T) {
	c := startFakeChat(t, "FAKECLAUDE_DELAY=200ms")
	w, conn := c.connect()
	w.send(map[string]any{"type": "user_message", "content": "SLOW 100"})
	w.until("assistant chunk", func(f frame) bool { return f.dataType() == "assistant" })
	active := c.do(http.MethodGet, "/api/active-sessions", "")
	if !strings.Contains(active.raw, conn.str("session_id")) {
		t.Errorf("active sessions %s lack %s", active.raw, conn.str("session_id"))
	}
	c.do(http.MethodPost, "/api/session/"+conn.str("session_id")+"/stop", "").want(t, http.StatusOK, "")
	w.until("stopped", isType("stopped"))
	w.until("result", isResult)
}

func TestChatPermissionModeLive(t *testing.T) {
	c := startFakeChat(t)
	w, conn := c.connect()
	// No process yet: next_turn.
	w.send(map[string]any{"type": "set_permission_mode", "mode": "plan"})
	if f := w.until("mode change", isType("permission_mode_changed")); f[len(f)-1].str("applied") != "next_turn" {
		t.Errorf("without a process: %v, want next_turn", f[len(f)-1])
	}
	w.send(map[string]any{"type": "user_message", "content": "hi"})
	w.until("result", isResult)
	w.send(map[string]any{"type": "set_permission_mode", "mode": "acceptEdits"})
	f := w.until("mode change", isType("permission_mode_changed"))
	if got := f[len(f)-1]; got.str("applied") != "live" || got.str("mode") != "acceptEdits" {
		t.Errorf("permission_mode_changed = %v, want acceptEdits live", got)
	}
	got := c.do(http.MethodGet, "/api/session/"+conn.str("session_id"), "")
	if got.str("permission_mode") != "acceptEdits" {
		t.Errorf("stored mode %q, want acceptEdits", got.str("permission_mode"))
	}
	// Over HTTP the sockets hear it too.
	c.do(http.MethodPut, "/api/session/"+conn.str("session_id")+"/permission-mode", `{"mode":"default"}`).want(t, http.StatusOK, "")
	f = w.until("mode change", isType("permission_mode_changed"))
	if got := f[len(f)-1]; got.str("applied") != "live" || got.str("mode") != "default" {
		t.Errorf("permission_mode_changed over HTTP = %v", got)
	}
}

func TestChatPermissionModeNacked(t *testing.T) {
	c := startFakeChat(t, "FAKECLAUDE_SET_MODE=nack")
	w, _ := c.connect()
	w.send(map[string]any{"type": "user_message", "content": "hi"})
	w.until("result", isResult)
	w.send(map[string]any{"type": "set_permission_mode", "mode": "acceptEdits"})
	f := w.until("mode change", isType("permission_mode_changed"))
	if got := f[len(f)-1]; got.str("applied") != "next_turn" {
		t.Errorf("nacked change = %v, want next_turn", got)
	}
	w.send(map[string]any{"type": "user_message", "content": "next"})
	w.until("result", isResult)
}

func TestChatBadMessages(t *testing.T) {
	c := startFakeChat(t)
	w, _ := c.connect()
	for _, tc := range []struct{ name, msg string }{
		{"unknown type", `{"type":"dance"}`},
		{"malformed JSON", `{"type":`},
		{"no type", `{}`},
		{"bad mode", `{"type":"set_permission_mode","mode":"yolo"}`},
		{"tool_answer without answers", `{"type":"tool_answer","request_id":"x"}`},
		{"oversized", `{"type":"user_message","content":"` + strings.Repeat("x", 9<<20) + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.sendRaw(tc.msg)
			if f := w.next(); f.str("type") != "error" || f.str("message") == "" {
				t.Fatalf("got %v, want an error frame", f)
			}
		})
	}
	w.send(map[string]any{"type": "permission_response", "request_id": "nope", "behavior": "allow"})
	if f := w.next(); f.str("type") != "permission_resolved" || f["ok"] != false {
		t.Fatalf("response to an unknown request: %v, want permission_resolved ok false", f)
	}
	w.send(map[string]any{"type": "ping"})
	if f := w.next(); f.str("type") != "pong" {
		t.Fatalf("after errors: %v, want pong", f)
	}
}

func TestChatMissingExecutable(t *testing.T) {
	c := startChatEnv(t, notFound, nil)
	w, _ := c.connect()
	w.send(map[string]any{"type": "user_message", "content": "hi"})
	f := w.until("error", isType("error"))
	msg := f[len(f)-1].str("message")
	if !strings.Contains(msg, "claude") || !strings.Contains(msg, "/api/app/provider-path/claude") {
		t.Errorf("error frame %q should name claude and how to set its path", msg)
	}
	w.send(map[string]any{"type": "ping"})
	w.until("pong", isType("pong"))
}

func TestChatUnknownSession(t *testing.T) {
	c := startChat(t, notFound)
	_, status, err := c.tryDial(url.Values{"session": {"NOSUCHSESSION"}})
	if err == nil || status != http.StatusNotFound {
		t.Fatalf("dial unknown session: %v, status %d; want 404", err, status)
	}
	_, status, err = c.tryDial(url.Values{"cwd": {filepath.Join(t.TempDir(), "missing")}})
	if err == nil || status != http.StatusBadRequest {
		t.Fatalf("dial with a missing cwd: %v, status %d; want 400", err, status)
	}
}

func TestChatRawOutputAndStderr(t *testing.T) {
	c := startFakeChat(t)
	w, _ := c.connect()
	w.send(map[string]any{"type": "user_message", "content": "RAW"})
	seen := w.until("result", isResult)
	if !slices.ContainsFunc(seen, func(f frame) bool { return f.str("type") == "raw_output" && f.str("line") != "" }) {
		t.Errorf("no raw_output frame in %v", seen)
	}
	// stderr comes through its own pipe: before or after the result.
	w.send(map[string]any{"type": "user_message", "content": "STDERR"})
	gotStderr, gotResult := false, false
	for !gotStderr || !gotResult {
		f := w.next()
		gotStderr = gotStderr || f.str("type") == "stderr"
		gotResult = gotResult || isResult(f)
	}
}

func TestChatDeleteEndsProcess(t *testing.T) {
	c := startFakeChat(t)
	w, conn := c.connect()
	w.send(map[string]any{"type": "user_message", "content": "hi"})
	w.until("result", isResult)
	c.do(http.MethodDelete, "/api/session/"+conn.str("session_id"), "").want(t, http.StatusOK, "")
	f := w.until("session_ended", isType("session_ended"))
	if f[len(f)-1].str("reason") == "" {
		t.Errorf("session_ended without a reason: %v", f[len(f)-1])
	}
}

// TestReconnectPastLostLines: PostgreSQL and chat crashed together and
// the log lost its last lines, which a tab had seen. The tab reconnects
// with after_line past the log's end: the next messages get lines after
// it (clients de-duplicate by line), so the tab sees them, after a gap
// notice that names the lost lines. An after_line far past the end (not a
// lost tail) moves nothing.
func TestReconnectPastLostLines(t *testing.T) {
	c := startFakeChat(t)
	w, conn := c.connect()
	id := conn.str("session_id")
	w.send(map[string]any{"type": "user_message", "content": "hello"})
	seen := w.until("result", isResult)
	last := seen[len(seen)-1].line()
	if last < 3 {
		t.Fatalf("the turn's last line is %d, want at least 3", last)
	}
	_ = w.ws.Close()
	c.stop()
	storetest.LoseTail(t, c.db, id, 1)

	c2 := startInstance(t, c.dbURL, nil, notFound, nil, nil)
	bogus, _ := c2.join(id, last+store.MaxLostLines+1)
	_ = bogus.ws.Close()
	w2, _ := c2.join(id, last)
	w2.send(map[string]any{"type": "user_message", "content": "again"})
	var stored []frame
	for _, f := range w2.until("result", isResult) {
		if f.str("type") == "message_stored" {
			stored = append(stored, f)
		}
	}
	if len(stored) != 2 {
		t.Fatalf("message_stored frames after the lost lines: %v, want the gap notice and the prompt", stored)
	}
	gap, _ := stored[0]["message"].(map[string]any)["gap"].(map[string]any)
	if stored[0].line() != last+1 || gap["from_line"] != float64(2) || gap["to_line"] != float64(last) {
		t.Errorf("gap notice %v, want lines 2 to %d on line %d", stored[0], last, last+1)
	}
	if stored[1].line() != last+2 {
		t.Fatalf("the prompt after the lost lines: %v, want line %d", stored[1], last+2)
	}
}
