package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/redisx/redistest"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// The fault tests (issue 17): each starts the real processes it breaks
// and records every frame a client gets.

// childEnv, set to 1, makes the test binary run chat itself (Run with the
// process's environment) instead of the tests: a chat the test can kill
// with SIGKILL.
const childEnv = "CHAT_TEST_RUN_CHAT"

// runChild serves chat as cmd/chat does, until SIGTERM or SIGINT.
func runChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := LoadConfig(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("service", Service)
	if err := Run(ctx, cfg, log); err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		return 1
	}
	return 0
}

// chatProc is chat run as a process of its own (runChild) on a fixed
// address, so that it can be killed and started again there.
type chatProc struct {
	*chat
	t    *testing.T
	env  []string
	cmd  *exec.Cmd
	done chan struct{}
}

// startChatProc starts chat as a child process with env (KEY=value) added
// to the test's environment, and waits until it serves.
func startChatProc(t *testing.T, env map[string]string) *chatProc {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	p := &chatProc{t: t, env: append(os.Environ(), childEnv+"=1", EnvAddr+"="+addr)}
	for k, v := range env {
		p.env = append(p.env, k+"="+v)
	}
	p.chat = &chat{t: t, base: "http://" + addr, addr: addr}
	p.start()
	t.Cleanup(p.terminate)
	return p
}

// start runs the process and waits until its health route answers.
func (p *chatProc) start() {
	p.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = p.t.Output(), p.t.Output()
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	done := p.done
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, p.base+svchttp.HealthPath(Service), nil)
		req.Header.Set(protocol.HeaderInternal, testSecret)
		if resp, err := testClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-done:
			p.t.Fatal("chat exited before serving")
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatal("chat did not serve within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill ends the process with SIGKILL and waits for it.
func (p *chatProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// terminate stops the process with SIGTERM, as a supervisor does.
func (p *chatProc) terminate() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.t.Error("chat did not stop within 20s of SIGTERM")
		p.kill()
	}
}

// recorder is a client socket that records every frame it gets, read by
// a goroutine of its own until the socket ends.
type recorder struct {
	t      *testing.T
	ws     *websocket.Conn
	mu     sync.Mutex
	frames []frame
	closed error // why reading ended
	more   chan struct{}
}

func record(t *testing.T, c *chat, q url.Values) *recorder {
	t.Helper()
	ws, status, err := c.tryDial(q)
	if err != nil {
		t.Fatalf("dial /chat?%s: %v (status %d)", q.Encode(), err, status)
	}
	r := &recorder{t: t, ws: ws, more: make(chan struct{}, 1)}
	t.Cleanup(func() { _ = ws.Close() })
	go func() {
		for {
			_, b, err := ws.ReadMessage()
			var f frame
			if err == nil {
				if err = json.Unmarshal(b, &f); err != nil {
					err = fmt.Errorf("frame is not JSON: %w: %s", err, b)
				}
			}
			r.mu.Lock()
			if err != nil {
				r.closed = err
			} else {
				r.frames = append(r.frames, f)
			}
			r.mu.Unlock()
			select {
			case r.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return r
}

func (r *recorder) send(v any) {
	r.t.Helper()
	b, _ := json.Marshal(v)
	if err := r.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// waitFor waits until ok holds for the frames so far (or the socket
// closed), at most d, and returns them.
func (r *recorder) waitFor(what string, d time.Duration, ok func(fs []frame, closed error) bool) []frame {
	r.t.Helper()
	deadline := time.After(d)
	for {
		r.mu.Lock()
		fs, closed := append([]frame(nil), r.frames...), r.closed
		r.mu.Unlock()
		if ok(fs, closed) {
			return fs
		}
		if closed != nil {
			r.t.Fatalf("socket ended (%v) before %s; frames: %v", closed, what, types(fs))
		}
		select {
		case <-r.more:
		case <-deadline:
			r.t.Fatalf("no %s within %v; frames: %v", what, d, types(fs))
		}
	}
}

// count is how many frames of fs match.
func count(fs []frame, match func(frame) bool) int {
	n := 0
	for _, f := range fs {
		if match(f) {
			n++
		}
	}
	return n
}

// types lists the frames' types (agent messages with their data's type
// and line), for failure messages.
func types(fs []frame) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.str("type")
		if d := f.dataType(); d != "" {
			out[i] += "/" + d
		}
		if n := f.line(); n != 0 {
			out[i] += "@" + strconv.FormatInt(n, 10)
		}
	}
	return out
}

// storedNotice is the cause and content of a message_stored notice, ok
// false for another frame.
func storedNotice(f frame) (cause, content string, ok bool) {
	if f.str("type") != "message_stored" {
		return "", "", false
	}
	m, _ := f["message"].(map[string]any)
	if m["role"] != "notice" {
		return "", "", false
	}
	cause, _ = m["cause"].(string)
	content, _ = m["content"].(string)
	return cause, content, true
}

func isCauseNotice(cause string) func(frame) bool {
	return func(f frame) bool { c, _, ok := storedNotice(f); return ok && c == cause }
}

// logLine is a line of GET /api/sessions/{id}/logs.
type logLine struct {
	Line    int64           `json:"line"`
	Kind    string          `json:"kind"`
	Payload json.RawMessage `json:"payload"`
}

// wholeLog reads the session's log and checks that its lines are 1..n,
// each once, in order.
func wholeLog(t *testing.T, c *chat, id string) []logLine {
	t.Helper()
	got := c.do(http.MethodGet, "/api/sessions/"+id+"/logs/messages?since=0&limit=1000", "")
	got.want(t, http.StatusOK, "")
	var body struct {
		Messages []logLine `json:"messages"`
	}
	if err := json.Unmarshal([]byte(got.raw), &body); err != nil {
		t.Fatal(err)
	}
	for i, m := range body.Messages {
		if m.Line != int64(i+1) {
			t.Fatalf("log line %d at position %d: the log is not 1..n (%s)", m.Line, i+1, got.raw)
		}
	}
	return body.Messages
}

// turnEvents reads the turn stream's events of session id.
func turnEvents(t *testing.T, rdb *redis.Client, stream, id string) []map[string]any {
	t.Helper()
	msgs, err := rdb.XRange(context.Background(), stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, m := range msgs {
		if m.Values["session_id"] == id {
			out = append(out, m.Values)
		}
	}
	return out
}

// waitTurnEvents waits until the turn stream holds n events of session
// id and returns them.
func waitTurnEvents(t *testing.T, rdb *redis.Client, stream, id string, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		evs := turnEvents(t, rdb, stream, id)
		if len(evs) >= n || time.Now().After(deadline) {
			return evs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fakePIDs are the processes the fake agent recorded starting in its log.
func fakePIDs(t *testing.T, path string) []int {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pids []int
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			Msg map[string]any `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			if pid, ok := e.Msg["pid"].(float64); ok && len(e.Msg) == 1 {
				pids = append(pids, int(pid))
			}
		}
	}
	return pids
}

// TestFaultChatKilledMidTurn (issue 17, items 3 and 4): chat is killed
// with SIGKILL while the fake agent streams a turn, then started again.
// The restarted chat closes the turn once: the interrupted notice in the
// log, session_ended to the client that reconnects with after_line, a
// connected that says no agent runs, turn_ended "interrupted" on the turn
// stream. The next prompt works although the agent cannot resume the
// conversation it never saved: a new one, with a notice saying so.
func TestFaultChatKilledMidTurn(t *testing.T) {
	db := pgmigratetest.MustSchema(t)
	prefix := "test:" + t.Name() + ":"
	fakeLog := t.TempDir() + "/fake.log"
	p := startChatProc(t, map[string]string{
		"SVC_CODE_HOME":       t.TempDir(),
		"SVC_INTERNAL_SECRET": testSecret,
		"REDIS_URL":           testRedisURL(),
		"REDIS_PREFIX":        prefix,
		"DATABASE_URL":        db,
		"SHUTDOWN_TIMEOUT":    "5s",
		// The fake agent, as the real CLI, refuses to resume a
		// conversation it has not saved (it saves one at a turn's end).
		"FAKECLAUDE_STATE_DIR": t.TempDir(),
		"FAKECLAUDE_DELAY":     "150ms",
		"FAKECLAUDE_LOG":       fakeLog,
	})
	t.Cleanup(func() { // the agent the killed chat left behind
		for _, pid := range fakePIDs(t, fakeLog) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
	p.do(http.MethodPut, "/api/app/provider-path/claude", `{"path":`+quote(fake(t))+`}`).want(t, http.StatusOK, "")
	rdb := newTestRedis(t)
	stream := prefix + "turns"

	// An idle session the killed chat owns, its agent warm.
	idle := record(t, p.chat, url.Values{"cwd": {t.TempDir()}})
	idle.send(map[string]any{"type": "user_message", "content": "hello there"})
	fs := idle.waitFor("the idle session's result", 20*time.Second, func(fs []frame, _ error) bool { return count(fs, isResult) > 0 })
	idleID := fs[0].str("session_id")

	first := record(t, p.chat, url.Values{"cwd": {t.TempDir()}})
	fs = first.waitFor("connected", 10*time.Second, func(fs []frame, _ error) bool { return len(fs) > 0 })
	id := fs[0].str("session_id")
	first.send(map[string]any{"type": "user_message", "content": "SLOW 200"})
	// Mid-turn: a few of its messages are out.
	first.waitFor("3 assistant messages", 20*time.Second, func(fs []frame, _ error) bool {
		return count(fs, func(f frame) bool { return f.dataType() == "assistant" }) >= 3
	})
	if got := waitTurnEvents(t, rdb, stream, id, 1); len(got) != 1 || got[0]["event"] != "turn_started" {
		t.Fatalf("turn events before the kill: %v", got)
	}
	p.kill()
	before := first.waitFor("the socket's end", 10*time.Second, func(_ []frame, closed error) bool { return closed != nil })
	seen := map[int64]int{}
	last := int64(0)
	for _, f := range before {
		if n := f.line(); n != 0 {
			seen[n]++
			last = max(last, n)
		}
	}

	p.start()
	second := record(t, p.chat, url.Values{"session": {id}, "after_line": {strconv.FormatInt(last, 10)}})
	after := second.waitFor("session_ended", 10*time.Second, func(fs []frame, _ error) bool {
		return count(fs, isType("session_ended")) > 0
	})
	conn := after[0]
	if conn.str("type") != "connected" || conn["agent_running"] != false || conn["is_reconnect"] != true {
		t.Errorf("after the restart: %v, want connected with agent_running false", conn)
	}
	// connected, the lines the first socket missed (agent messages stored
	// as chat died), the notice, session_ended.
	rest := after[1:]
	for i, f := range rest[:len(rest)-2] {
		if f.str("type") != "agent_message" || f.line() == 0 {
			t.Errorf("replayed frame %d: %v, want an agent message the first socket missed", i, f)
		}
	}
	notice, ended := rest[len(rest)-2], rest[len(rest)-1]
	if cause, content, ok := storedNotice(notice); !ok || cause != protocol.NoticeServerRestarted || content != "turn interrupted: the server restarted" {
		t.Errorf("before session_ended: %v, want the interrupted notice", notice)
	}
	if ended.str("reason") != "turn interrupted: the server restarted" || ended.str("cause") != "server_restarted" {
		t.Errorf("session_ended = %v", ended)
	}
	if s := p.do(http.MethodGet, "/api/session/"+id, ""); s.body["agent_running"] != false {
		t.Errorf("GET /api/session after the restart: agent_running %v", s.body["agent_running"])
	}

	// The idle session answers at once (its dead claim is released), in a
	// new process that resumes its saved conversation.
	again := record(t, p.chat, url.Values{"session": {idleID}, "after_line": {"4"}})
	again.send(map[string]any{"type": "user_message", "content": "hello again"})
	got := again.waitFor("the idle session's result", 20*time.Second, func(fs []frame, _ error) bool {
		return count(fs, isResult) > 0 || count(fs, isType("error")) > 0
	})
	if n := count(got, isType("error")) + count(got, isType("session_ended")); n != 0 || count(got, isResult) != 1 {
		t.Errorf("the idle session after the restart: %v", got)
	}

	// The next prompt works: the agent starts a new conversation.
	second.send(map[string]any{"type": "user_message", "content": "hello again"})
	done := second.waitFor("the result", 20*time.Second, func(fs []frame, _ error) bool { return count(fs, isResult) > 0 })
	if n := count(done, isType("session_ended")); n != 1 {
		t.Errorf("%d session_ended frames on the second socket, want 1: %v", n, types(done))
	}
	if n := count(done, isType("error")); n != 0 {
		t.Errorf("error frames on the second socket: %v", done)
	}
	if n := count(done, isCauseNotice(protocol.NoticeResumeLost)); n != 1 {
		t.Errorf("%d resume_lost notices, want 1: %v", n, types(done))
	}
	for _, f := range done {
		if n := f.line(); n != 0 {
			seen[n]++
		}
	}

	// The log: every line once, and every line reached a socket once.
	log := wholeLog(t, p.chat, id)
	for _, m := range log {
		if seen[m.Line] != 1 {
			t.Errorf("line %d reached the client %d times, want 1", m.Line, seen[m.Line])
		}
	}
	interrupted, resumeLost, prompts := 0, 0, 0
	for _, m := range log {
		var n protocol.StoredNotice
		_ = json.Unmarshal(m.Payload, &n)
		switch {
		case m.Kind == "user_prompt":
			prompts++
		case m.Kind == "notice" && n.Cause == protocol.NoticeServerRestarted:
			interrupted++
			if prompts != 1 || n.PromptLine != 1 {
				t.Errorf("interrupted notice at line %d after %d prompts, prompt_line %d", m.Line, prompts, n.PromptLine)
			}
		case m.Kind == "notice" && n.Cause == protocol.NoticeResumeLost:
			resumeLost++
			if prompts != 2 {
				t.Errorf("resume_lost notice at line %d after %d prompts", m.Line, prompts)
			}
		}
	}
	if interrupted != 1 || resumeLost != 1 || prompts != 2 {
		t.Errorf("log: %d interrupted notices, %d resume_lost, %d prompts; want 1, 1, 2", interrupted, resumeLost, prompts)
	}
	if l := log[len(log)-1]; !strings.Contains(string(l.Payload), `"result"`) {
		t.Errorf("the log ends with %s, want the second turn's result", l.Payload)
	}

	// The turn stream: each turn started and ended once, the first
	// interrupted.
	evs := waitTurnEvents(t, rdb, stream, id, 4)
	turn1, turn2 := id+":1", ""
	ends := map[string][]map[string]any{}
	for _, e := range evs {
		if e["event"] == "turn_started" && e["turn_id"] != turn1 {
			turn2, _ = e["turn_id"].(string)
		}
		if e["event"] == "turn_ended" {
			tid, _ := e["turn_id"].(string)
			ends[tid] = append(ends[tid], e)
		}
	}
	if len(evs) != 4 || len(ends[turn1]) != 1 || len(ends[turn2]) != 1 {
		t.Fatalf("turn events: %v, want two turns started and ended once each", evs)
	}
	if e := ends[turn1][0]; e["stop_reason"] != "interrupted" || e["is_error"] != "true" || e["prompt"] != "SLOW 200" {
		t.Errorf("the interrupted turn's turn_ended: %v", e)
	}
	if e := ends[turn2][0]; e["stop_reason"] == "interrupted" || e["is_error"] != "false" {
		t.Errorf("the second turn's turn_ended: %v", e)
	}
	pool, err := pgxpool.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var open int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM open_turns`).Scan(&open); err != nil || open != 0 {
		t.Errorf("open turns left: %d (%v)", open, err)
	}
}

// TestFaultRedisRestartEmpty (issue 17, item 5): the Redis chat uses is
// killed and comes back empty (no persistence) while one session's turn
// streams and another's agent idles. chat takes back the ownership that
// nobody else holds: no agent process ends, no socket gets session_ended,
// the turn's lines reach its client each once, in order, and the idle
// agent answers the next prompt without a new process.
func TestFaultRedisRestartEmpty(t *testing.T) {
	srv := redistest.Start(t, redis.Options{})
	fakeLog := t.TempDir() + "/fake.log"
	c := startInstance(t, pgmigratetest.MustSchema(t), map[string]string{"REDIS_URL": "redis://" + srv.Addr + "/0"},
		notFound, []string{"FAKECLAUDE_DELAY=100ms", "FAKECLAUDE_LOG=" + fakeLog}, nil)
	c.do(http.MethodPut, "/api/app/provider-path/claude", `{"path":`+quote(fake(t))+`}`).want(t, http.StatusOK, "")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = rdb.Close() })

	idle := record(t, c, url.Values{"cwd": {t.TempDir()}})
	idle.send(map[string]any{"type": "user_message", "content": "hello there"})
	fs := idle.waitFor("the result", 20*time.Second, func(fs []frame, _ error) bool { return count(fs, isResult) > 0 })
	idleID := fs[0].str("session_id")

	busy := record(t, c, url.Values{"cwd": {t.TempDir()}})
	busy.send(map[string]any{"type": "user_message", "content": "SLOW 40"})
	fs = busy.waitFor("3 assistant messages", 20*time.Second, func(fs []frame, _ error) bool {
		return count(fs, func(f frame) bool { return f.dataType() == "assistant" }) >= 3
	})
	busyID := fs[0].str("session_id")

	srv.Kill()
	time.Sleep(time.Second) // the outage
	srv.Restart()
	restarted := time.Now()
	prefix := "test:" + t.Name() + ":"

	// Both claims are taken back, by this instance.
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx := context.Background()
		a, b := rdb.Get(ctx, prefix+"chat:owner:"+idleID).Val(), rdb.Get(ctx, prefix+"chat:owner:"+busyID).Val()
		if a != "" && a == b {
			t.Logf("claims taken back %v after Redis came back", time.Since(restarted).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("owners after the restart: %q, %q", a, b)
		}
		time.Sleep(50 * time.Millisecond)
	}

	fs = busy.waitFor("the result", 20*time.Second, func(fs []frame, _ error) bool { return count(fs, isResult) > 0 })
	if n := count(fs, isType("session_ended")); n != 0 {
		t.Errorf("the busy session's socket got session_ended: %v", types(fs))
	}
	if n := count(fs, func(f frame) bool { return f.dataType() == "assistant" }); n != 40 {
		t.Errorf("%d assistant messages, want 40: %v", n, types(fs))
	}
	seen := map[int64]int{}
	for _, f := range fs {
		if f.str("type") == "agent_message" && f.line() == 0 {
			t.Errorf("agent message without a line: %v", f)
		}
		if n := f.line(); n != 0 {
			seen[n]++
		}
	}
	checkLines(t, "busy", fs)
	for _, m := range wholeLog(t, c, busyID) {
		if seen[m.Line] != 1 {
			t.Errorf("line %d reached the client %d times, want 1", m.Line, seen[m.Line])
		}
	}

	idle.send(map[string]any{"type": "user_message", "content": "and again"})
	fs = idle.waitFor("the second result", 20*time.Second, func(fs []frame, _ error) bool { return count(fs, isResult) > 1 })
	if n := count(fs, isType("session_ended")); n != 0 {
		t.Errorf("the idle session's socket got session_ended: %v", types(fs))
	}
	if pids := fakePIDs(t, fakeLog); len(pids) != 2 {
		t.Errorf("agent processes started: %v, want 2 (one per session, none ended)", pids)
	}
	for _, s := range []string{idleID, busyID} {
		if got := c.do(http.MethodGet, "/api/session/"+s, ""); got.body["agent_running"] != false {
			t.Errorf("session %s: agent_running %v after its turn", s, got.body["agent_running"])
		}
	}
}

// A turn of an instance on another host is closed only once that
// instance's heartbeat has been missing for CHAT_OWNER_TTL: never while it
// beats, whatever the session's claim says (an empty Redis loses claims of
// live instances too).
func TestFaultOtherHostsTurnClosedWhenItsHeartbeatStops(t *testing.T) {
	c := startInstance(t, pgmigratetest.MustSchema(t), map[string]string{EnvOwnerTTL: "600ms"}, notFound, nil, nil)
	rdb := newTestRedis(t)
	prefix := "test:" + t.Name() + ":"
	ctx := context.Background()
	id := c.mustSession(t.TempDir())
	if _, err := c.store.AppendMessage(ctx, id, store.KindUserPrompt, json.RawMessage(`{"role":"user","content":"go"}`)); err != nil {
		t.Fatal(err)
	}
	beat := prefix + "chat:instance:elsewhere-1"
	if err := rdb.Set(ctx, beat, "another host", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), beat) })
	if err := c.store.OpenTurn(ctx, store.OpenTurn{
		TurnID: id + ":1", SessionID: id, PromptLine: 1, Instance: "elsewhere-1", Host: "another host", PID: 1, PIDStart: 1,
		StartedAt: time.Now(), Started: json.RawMessage(`{"prompt":"go","provider":"agent-sdk"}`),
	}); err != nil {
		t.Fatal(err)
	}
	w := record(t, c, url.Values{"session": {id}, "after_line": {"1"}})
	w.waitFor("connected", 10*time.Second, func(fs []frame, _ error) bool { return len(fs) > 0 })

	// While it beats: four more sweeps (CHAT_OWNER_TTL apart), nothing closed.
	from := c.sweeps.Load()
	for deadline := time.Now().Add(10 * time.Second); c.sweeps.Load() < from+4; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sweeps in 10s while the turn's instance beats, want 4", c.sweeps.Load()-from)
		}
	}
	if n := len(wholeLog(t, c, id)); n != 1 {
		t.Fatalf("the log has %d lines while the turn's instance beats, want 1", n)
	}
	rdb.Del(ctx, beat)
	stopped := time.Now()
	fs := w.waitFor("session_ended", 10*time.Second, func(fs []frame, _ error) bool { return count(fs, isType("session_ended")) > 0 })
	if d := time.Since(stopped); d < 600*time.Millisecond {
		t.Errorf("closed %v after the heartbeat stopped, before CHAT_OWNER_TTL", d)
	}
	if n := count(fs, isCauseNotice(protocol.NoticeServerRestarted)); n != 1 {
		t.Errorf("%d interrupted notices, want 1: %v", n, types(fs))
	}
	ends := 0
	for _, e := range waitTurnEvents(t, rdb, prefix+"turns", id, 1) {
		if e["event"] == "turn_ended" && e["stop_reason"] == "interrupted" {
			ends++
		}
	}
	if ends != 1 {
		t.Errorf("%d interrupted turn_ended events, want 1", ends)
	}
	if log := wholeLog(t, c, id); len(log) != 2 || log[1].Kind != "notice" {
		t.Errorf("log %v, want the prompt and the notice", log)
	}
}

// TestFaultChatStoppedMidTurn: chat stopped (SIGTERM, as a supervisor or
// a deploy does) during a turn ends the turn itself, as interrupted: the
// notice in the log, turn_ended "interrupted" once; the client that
// reconnects after the restart gets the notice and session_ended, and
// connected says no agent runs.
func TestFaultChatStoppedMidTurn(t *testing.T) {
	db := pgmigratetest.MustSchema(t)
	prefix := "test:" + t.Name() + ":"
	p := startChatProc(t, map[string]string{
		"SVC_CODE_HOME": t.TempDir(), "SVC_INTERNAL_SECRET": testSecret, "REDIS_URL": testRedisURL(),
		"REDIS_PREFIX": prefix, "DATABASE_URL": db, "SHUTDOWN_TIMEOUT": "5s", "FAKECLAUDE_DELAY": "150ms",
	})
	p.do(http.MethodPut, "/api/app/provider-path/claude", `{"path":`+quote(fake(t))+`}`).want(t, http.StatusOK, "")
	rdb := newTestRedis(t)

	first := record(t, p.chat, url.Values{"cwd": {t.TempDir()}})
	fs := first.waitFor("connected", 10*time.Second, func(fs []frame, _ error) bool { return len(fs) > 0 })
	id := fs[0].str("session_id")
	first.send(map[string]any{"type": "user_message", "content": "SLOW 200"})
	first.waitFor("3 assistant messages", 20*time.Second, func(fs []frame, _ error) bool {
		return count(fs, func(f frame) bool { return f.dataType() == "assistant" }) >= 3
	})
	p.terminate()
	before := first.waitFor("the socket's end", 10*time.Second, func(_ []frame, closed error) bool { return closed != nil })
	last := int64(0)
	for _, f := range before {
		last = max(last, f.line())
	}

	p.start()
	second := record(t, p.chat, url.Values{"session": {id}, "after_line": {strconv.FormatInt(last, 10)}})
	after := second.waitFor("session_ended", 10*time.Second, func(fs []frame, _ error) bool {
		return count(fs, isType("session_ended")) > 0
	})
	if conn := after[0]; conn["agent_running"] != false {
		t.Errorf("after the restart: %v, want agent_running false", conn)
	}
	if n := count(after, isCauseNotice(protocol.NoticeServerRestarted)); n != 1 {
		t.Errorf("%d interrupted notices on reconnect, want 1: %v", n, types(after))
	}
	if f := after[len(after)-1]; f.str("cause") != "server_restarted" {
		t.Errorf("session_ended = %v", f)
	}
	interrupted := 0
	for _, m := range wholeLog(t, p.chat, id) {
		var n protocol.StoredNotice
		if json.Unmarshal(m.Payload, &n) == nil && n.Cause == protocol.NoticeServerRestarted {
			interrupted++
		}
	}
	if interrupted != 1 {
		t.Errorf("%d interrupted notices in the log, want 1", interrupted)
	}
	var ends []map[string]any
	for _, e := range waitTurnEvents(t, rdb, prefix+"turns", id, 2) {
		if e["event"] == "turn_ended" {
			ends = append(ends, e)
		}
	}
	if len(ends) != 1 || ends[0]["stop_reason"] != "interrupted" {
		t.Errorf("turn_ended events %v, want one, interrupted", ends)
	}
}
