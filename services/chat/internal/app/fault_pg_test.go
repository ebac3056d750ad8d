package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/libs/pgtest"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// Fault tests: PostgreSQL crashes (pg_ctl stop -m immediate) under a
// running stream, on a server of the test's own (libs/pgtest), while a
// client records every frame, reconnecting with after_line when its socket
// drops. Afterwards the log must hold every line the client saw, once, in
// order, and any line it does not hold must be covered by a gap notice;
// every prompt acknowledged must be stored. docs/api.md, "When PostgreSQL
// fails", says what a client sees.

// pgRecorder is a /chat client of one session that records every frame and
// reconnects (after_line: the last line it has) when its socket ends.
type pgRecorder struct {
	t  *testing.T
	c  *chat
	id string

	mu      sync.Mutex
	ws      *websocket.Conn
	frames  []frame         // every frame, in arrival order, across sockets
	lines   map[int64]frame // the first frame of each line
	last    int64           // the last line seen
	dials   int             // sockets opened
	changed chan struct{}   // closed when a frame arrives
	closing bool
	done    chan struct{}
}

// record opens the session's socket and records from it until the test
// ends.
func recordPG(t *testing.T, c *chat, id string) *pgRecorder {
	t.Helper()
	r := &pgRecorder{t: t, c: c, id: id, lines: map[int64]frame{}, changed: make(chan struct{}), done: make(chan struct{})}
	if !r.dial(time.Now().Add(10 * time.Second)) {
		t.Fatal("could not open the session's socket")
	}
	go r.run()
	t.Cleanup(func() {
		r.mu.Lock()
		r.closing = true
		ws := r.ws
		r.mu.Unlock()
		_ = ws.Close()
		<-r.done
	})
	return r
}

// dial opens a socket with after_line = the last line seen, trying again
// (a 503 while PostgreSQL is down) until deadline.
func (r *pgRecorder) dial(deadline time.Time) bool {
	for time.Now().Before(deadline) {
		r.mu.Lock()
		q := url.Values{"session": {r.id}, "after_line": {strconv.FormatInt(r.last, 10)}}
		closing := r.closing
		r.mu.Unlock()
		if closing {
			return false
		}
		ws, _, err := r.c.tryDial(q)
		if err == nil {
			r.mu.Lock()
			r.ws = ws
			r.dials++
			r.mu.Unlock()
			return true
		}
		time.Sleep(100 * time.Millisecond) // the next try of a reconnecting client
	}
	return false
}

func (r *pgRecorder) run() {
	defer close(r.done)
	for {
		r.mu.Lock()
		ws := r.ws
		r.mu.Unlock()
		_, b, err := ws.ReadMessage()
		if err != nil {
			_ = ws.Close()
			if !r.dial(time.Now().Add(30 * time.Second)) {
				return
			}
			continue
		}
		var f frame
		if err := json.Unmarshal(b, &f); err != nil {
			r.t.Errorf("frame is not JSON: %s", b)
			continue
		}
		r.mu.Lock()
		r.frames = append(r.frames, f)
		if l := f.line(); l > 0 {
			if _, dup := r.lines[l]; !dup {
				r.lines[l] = f
			}
			r.last = max(r.last, l)
		}
		close(r.changed)
		r.changed = make(chan struct{})
		r.mu.Unlock()
	}
}

// drop ends the current socket as a network cut would; the pgRecorder
// reconnects with after_line.
func (r *pgRecorder) drop() {
	r.mu.Lock()
	ws := r.ws
	r.mu.Unlock()
	_ = ws.NetConn().Close()
}

// sockets returns how many sockets the pgRecorder opened.
func (r *pgRecorder) sockets() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dials
}

// send writes a client message on the current socket.
func (r *pgRecorder) send(v any) {
	r.t.Helper()
	b, _ := json.Marshal(v)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		r.t.Fatalf("send %s: %v", b, err)
	}
}

// wait waits until cond holds for the frames so far, failing the test
// after timeout.
func (r *pgRecorder) wait(what string, timeout time.Duration, cond func([]frame) bool) {
	r.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		ok, ch := cond(r.frames), r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			r.t.Fatalf("no %s within %s; frames: %s", what, timeout, r.dump())
		}
	}
}

// snapshot returns the frames so far and the first frame of each line.
func (r *pgRecorder) snapshot() ([]frame, map[int64]frame) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := make(map[int64]frame, len(r.lines))
	for l, f := range r.lines {
		lines[l] = f
	}
	return append([]frame(nil), r.frames...), lines
}

func (r *pgRecorder) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, f := range r.frames {
		j, _ := json.Marshal(f)
		if len(j) > 200 {
			j = append(j[:200], "..."...)
		}
		b.WriteString("\n  ")
		b.Write(j)
	}
	return b.String()
}

func isStorage(available bool) func(frame) bool {
	return func(f frame) bool { return f.str("type") == "storage" && f["available"] == available }
}

func isLinedAgent(f frame) bool { return f.str("type") == "agent_message" && f.line() > 0 }

// chunkTexts returns the text blocks of the assistant messages of msgs, in
// order.
func chunkTexts(t *testing.T, msgs []store.Message) []string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		if m.Kind != store.KindAgent {
			continue
		}
		var d struct {
			Type    string `json:"type"`
			Message struct {
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal(m.Payload, &d); err != nil {
			t.Fatalf("line %d: %v", m.Line, err)
		}
		if d.Type != "assistant" {
			continue
		}
		for _, c := range d.Message.Content {
			if c.Type == "text" {
				out = append(out, c.Text)
			}
		}
	}
	return out
}

// slowChunks is what fakeclaude's SLOW n streams, one text block each.
func slowChunks(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(" chunk %d", i+1)
	}
	out[0] = "This"
	return out
}

// readLog reads the session's whole log from the server (on a pool of its
// own: the harness's died with the crash).
func readLog(t *testing.T, dbURL, id string) []store.Message {
	t.Helper()
	db, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	msgs, err := store.New(db).Messages(context.Background(), id, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// gapOf returns the lines a gap notice says the log lost (0, 0 if m is
// not one).
func gapOf(m store.Message) (from, to int64) {
	if m.Kind != store.KindNotice {
		return 0, 0
	}
	var p struct {
		Gap *struct {
			From int64 `json:"from_line"`
			To   int64 `json:"to_line"`
		} `json:"gap"`
	}
	if json.Unmarshal(m.Payload, &p) != nil || p.Gap == nil {
		return 0, 0
	}
	return p.Gap.From, p.Gap.To
}

// checkNoSilentGap fails the test unless the log's lines are in order,
// once each, and every line not in the log is covered by a gap notice;
// every line the client saw is either in the log with the payload the
// client got, or covered. It returns the lines covered by gap notices.
func checkNoSilentGap(t *testing.T, msgs []store.Message, seen map[int64]frame) map[int64]bool {
	t.Helper()
	covered := map[int64]bool{}
	byLine := map[int64]store.Message{}
	var prev int64
	for _, m := range msgs {
		if m.Line <= prev {
			t.Errorf("log line %d after %d: not in order, or twice", m.Line, prev)
		}
		prev = m.Line
		byLine[m.Line] = m
		if from, to := gapOf(m); from > 0 {
			for l := from; l <= to; l++ {
				covered[l] = true
			}
		}
	}
	for l := int64(1); l <= prev; l++ {
		if _, ok := byLine[l]; !ok && !covered[l] {
			t.Errorf("line %d is missing from the log and no gap notice covers it", l)
		}
	}
	for l, f := range seen {
		m, ok := byLine[l]
		switch {
		case !ok && !covered[l]:
			t.Errorf("the client saw line %d (%s), which the log lacks without a gap notice", l, f.str("type"))
		case ok:
			got := f["data"]
			if f.str("type") == "message_stored" {
				got = f["message"]
			}
			var want any
			_ = json.Unmarshal(m.Payload, &want)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("line %d: the client got %v, the log holds %v", l, got, want)
			}
		}
	}
	return covered
}

// startFaultChat starts chat on a PostgreSQL server of the test's own,
// agent-sdk's path set to fakeclaude streaming a chunk every 100 ms.
func startFaultChat(t *testing.T, pg *pgtest.Server, extra map[string]string) *chat {
	t.Helper()
	c := startInstance(t, pg.URL(), extra, notFound, []string{"FAKECLAUDE_DELAY=100ms"}, nil)
	c.do(http.MethodPut, "/api/app/provider-path/claude", `{"path":`+quote(fake(t))+`}`).want(t, http.StatusOK, "")
	return c
}

// TestPostgresCrashLosesNothing (issue 17, items 1 and 2): PostgreSQL
// crashes mid-stream (agent messages committed to disk before their frames
// leave: CHAT_SYNC_AGENT_LOG=on) and comes back a few seconds later. No
// agent message reaches a client without its line, none is lost; the
// clients are told of the outage and of the recovery (storage frames);
// GET /api/session/{id} and /chat answer 503 storage_unavailable
// meanwhile; a prompt sent during the outage is acknowledged once
// PostgreSQL is back, stored once, and answered. The recording client's
// socket is cut during the outage: it reconnects (refused with 503 until
// PostgreSQL is back) with after_line and misses nothing.
//
// Before this change: one agent message reached the client without a line
// and was never stored (the batch on a dead pooled connection failed with
// "unexpected EOF", not retried), nothing told the client of the outage,
// the GET answered 500 internal, and the prompt got "could not store the
// message".
func TestPostgresCrashLosesNothing(t *testing.T) {
	pg := pgtest.Start(t)
	c := startFaultChat(t, pg, map[string]string{EnvSyncAgentLog: "on"})
	w0, conn := c.connect() // a second tab: it sends the prompt during the outage
	id := conn.str("session_id")
	r := recordPG(t, c, id)
	const chunks = 60
	r.send(map[string]any{"type": "user_message", "content": fmt.Sprintf("SLOW %d", chunks)})
	r.wait("10 agent messages", 20*time.Second, func(fs []frame) bool { return count(fs, isLinedAgent) >= 10 })

	pg.Crash()
	outage := time.Now()
	// The routes answer 503 with their code while the server is down.
	unavailable := func(path string) {
		t.Helper()
		if got := c.do(http.MethodGet, path, ""); got.status != http.StatusServiceUnavailable || got.str("error") != "storage_unavailable" {
			t.Errorf("GET %s during the outage: %d %s, want 503 storage_unavailable", path, got.status, got.raw)
		}
	}
	unavailable("/api/session/" + id)
	unavailable("/api/sessions")
	if _, status, err := c.tryDial(url.Values{"session": {id}, "after_line": {"0"}}); err == nil || status != http.StatusServiceUnavailable {
		t.Errorf("/chat during the outage: %d %v, want 503", status, err)
	}
	r.wait("storage frame (unavailable)", 10*time.Second, func(fs []frame) bool { return count(fs, isStorage(false)) > 0 })
	// A prompt sent now, while the turn runs: it is to be queued.
	w0.send(map[string]any{"type": "user_message", "content": "sent during the outage"})
	r.drop()
	time.Sleep(3 * time.Second) // the outage's length: the fault, not a synchronisation
	pg.Up()
	t.Logf("PostgreSQL was down for %s", time.Since(outage).Round(time.Millisecond))

	// The sender: told of the outage and of the recovery, then the ack.
	tab := w0.until("the queued prompt's acknowledgement", isType("user_message_queued"))
	if n, m := count(tab, isStorage(false)), count(tab, isStorage(true)); n != 1 || m != 1 {
		t.Errorf("the sender's storage frames: %d unavailable, %d available; want one each", n, m)
	}
	for _, f := range tab {
		if f.str("type") == "error" || f.str("type") == "agent_message" && f.line() == 0 {
			t.Errorf("the sender got %v", f)
		}
	}
	r.wait("both turns' results", 30*time.Second, func(fs []frame) bool { return count(fs, isResult) >= 2 })
	c.do(http.MethodGet, "/api/session/"+id, "").want(t, http.StatusOK, "")
	if n := r.sockets(); n != 2 {
		t.Errorf("the pgRecorder opened %d sockets, want 2 (one reconnect)", n)
	}

	frames, seen := r.snapshot()
	for _, f := range frames {
		switch {
		case f.str("type") == "agent_message" && f.line() == 0:
			t.Errorf("an agent message reached the client without a line: %v", f)
		case f.str("type") == "error":
			t.Errorf("error frame: %v", f)
		}
	}
	if n := count(frames, isStorage(false)); n != 1 {
		t.Errorf("the pgRecorder got %d storage frames (unavailable), want 1", n)
	}

	msgs := readLog(t, pg.URL(), id)
	if covered := checkNoSilentGap(t, msgs, seen); len(covered) != 0 {
		t.Errorf("lines %v are gaps: nothing may be lost with CHAT_SYNC_AGENT_LOG=on", covered)
	}
	for i, m := range msgs {
		if m.Line != int64(i+1) {
			t.Fatalf("log line %d at position %d: the log has a gap", m.Line, i+1)
		}
	}
	if got, want := chunkTexts(t, msgs), append(slowChunks(chunks), helloText); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the log's assistant texts = %q, want %q", got, want)
	}
	var prompts []string
	for _, m := range msgs {
		if m.Kind == store.KindUserPrompt {
			var p struct{ Content string }
			_ = json.Unmarshal(m.Payload, &p)
			prompts = append(prompts, p.Content)
		}
	}
	if want := fmt.Sprintf("[SLOW %d sent during the outage]", chunks); fmt.Sprint(prompts) != want {
		t.Errorf("prompts stored %v, want %s", prompts, want)
	}
	// Every line the log holds reached the pgRecorder, live or replayed.
	for _, m := range msgs {
		if _, ok := seen[m.Line]; !ok {
			t.Errorf("log line %d (%s) never reached the client", m.Line, m.Kind)
		}
	}
}

// helloText is fakeclaude's answer to a prompt without a script keyword.
const helloText = "Hello from the fake model."

// TestPostgresCrashLossLeavesGapNotice (issue 17, item 1): with agent
// messages committed without waiting for the disk (CHAT_SYNC_AGENT_LOG
// off, the default), a crash of PostgreSQL right after some were sent
// loses them (their WAL was still in PostgreSQL's buffers; wal_writer_delay
// is raised so that it is). The lines the client saw and the log lost are
// never silent: a gap notice, stored on the next line and sent to the
// client, names them; the stream then goes on, every other line stored
// once, in order.
//
// Before this change the lost lines were a silent hole: the log went from
// the last line on disk to the next one sent, with nothing in between.
func TestPostgresCrashLossLeavesGapNotice(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Setting("wal_writer_delay", "10s"))
	c := startFaultChat(t, pg, nil)
	_, conn := c.connect()
	id := conn.str("session_id")
	r := recordPG(t, c, id)
	const chunks = 40
	r.send(map[string]any{"type": "user_message", "content": fmt.Sprintf("SLOW %d", chunks)})
	r.wait("10 agent messages", 20*time.Second, func(fs []frame) bool { return count(fs, isLinedAgent) >= 10 })
	pg.Crash()
	pg.Up()
	r.wait("the turn's result", 30*time.Second, func(fs []frame) bool { return count(fs, isResult) >= 1 })

	frames, seen := r.snapshot()
	for _, f := range frames {
		if f.str("type") == "agent_message" && f.line() == 0 {
			t.Errorf("an agent message reached the client without a line: %v", f)
		}
	}
	msgs := readLog(t, pg.URL(), id)
	covered := checkNoSilentGap(t, msgs, seen)
	if len(covered) == 0 {
		t.Fatalf("no gap notice in the log (%d lines): nothing was lost (the crash missed the loss window), or the loss is silent", len(msgs))
	}
	// The client got the gap notice live, as message_stored.
	live := count(frames, func(f frame) bool {
		m, _ := f["message"].(map[string]any)
		return f.str("type") == "message_stored" && m["gap"] != nil && m["level"] == "warning"
	})
	if live != 1 {
		t.Errorf("the client got %d gap notices, want 1: %s", live, r.dump())
	}
	// What the log holds of the stream: the chunks, in order, each once,
	// but for those of the lost lines.
	var lost []string
	want := slowChunks(chunks)
	for l := range covered {
		if f, ok := seen[l]; ok && f.dataType() == "assistant" {
			d, _ := f["data"].(map[string]any)
			m, _ := d["message"].(map[string]any)
			content, _ := m["content"].([]any)
			for _, c := range content {
				if b, _ := c.(map[string]any); b["type"] == "text" {
					lost = append(lost, b["text"].(string))
				}
			}
		}
	}
	kept := want[:0:0]
	for _, w := range want {
		if !containsString(lost, w) {
			kept = append(kept, w)
		}
	}
	if got := chunkTexts(t, msgs); fmt.Sprint(got) != fmt.Sprint(kept) {
		t.Errorf("the log's assistant texts = %q, want %q (lost: %q)", got, kept, lost)
	}
	t.Logf("lost lines %v of %d", covered, len(msgs))
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestPostgresDownLongerThanRetries (issue 17, item 2, and item 1's
// prompt): PostgreSQL shuts down (sessions ended with admin_shutdown,
// 57P01) and stays down past chat's 10 s of retries. The client is told
// (storage frame; 503 storage_unavailable from the routes); a prompt sent
// meanwhile is given up with a clear error carrying the code, and is not
// stored; once PostgreSQL is back the client is told so, without any
// restart of chat, and the next prompt goes through.
//
// Before this change: the GET answered 500 internal, no frame told of the
// outage or the recovery, and the prompt got {"type":"error","message":
// "could not store the message"}, which said neither why nor whether it
// was stored.
func TestPostgresDownLongerThanRetries(t *testing.T) {
	pg := pgtest.Start(t)
	c := startFaultChat(t, pg, nil)
	_, conn := c.connect()
	id := conn.str("session_id")
	r := recordPG(t, c, id)
	r.send(map[string]any{"type": "user_message", "content": "first"})
	r.wait("the first turn's result", 20*time.Second, func(fs []frame) bool { return count(fs, isResult) == 1 })

	pg.Stop()
	if got := c.do(http.MethodGet, "/api/session/"+id, ""); got.status != http.StatusServiceUnavailable || got.str("error") != "storage_unavailable" {
		t.Errorf("GET /api/session/{id} while PostgreSQL is down: %d %s, want 503 storage_unavailable", got.status, got.raw)
	}
	sent := time.Now()
	r.send(map[string]any{"type": "user_message", "content": "sent while down"})
	r.wait("storage frame (unavailable)", 10*time.Second, func(fs []frame) bool { return count(fs, isStorage(false)) == 1 })
	r.wait("the prompt's error", 20*time.Second, func(fs []frame) bool { return count(fs, isType("error")) == 1 })
	if took := time.Since(sent); took < 9*time.Second {
		t.Errorf("the prompt was given up after %s, before the 10 s of retries", took)
	}
	frames, _ := r.snapshot()
	var errFrame frame
	for _, f := range frames {
		if f.str("type") == "error" {
			errFrame = f
		}
	}
	if errFrame.str("code") != "storage_unavailable" || !strings.HasPrefix(errFrame.str("message"), "could not store the message: storage unavailable (retried for 10 s); it ") {
		t.Errorf("error frame %v, want code storage_unavailable and why", errFrame)
	}
	t.Logf("the prompt's error: %s", errFrame.str("message"))

	pg.Up()
	r.wait("storage frame (available)", 10*time.Second, func(fs []frame) bool { return count(fs, isStorage(true)) == 1 })
	c.do(http.MethodGet, "/api/session/"+id, "").want(t, http.StatusOK, "")
	r.send(map[string]any{"type": "user_message", "content": "after"})
	r.wait("the second turn's result", 20*time.Second, func(fs []frame) bool { return count(fs, isResult) == 2 })

	frames, seen := r.snapshot()
	msgs := readLog(t, pg.URL(), id)
	checkNoSilentGap(t, msgs, seen)
	var prompts []string
	for i, m := range msgs {
		if m.Line != int64(i+1) {
			t.Fatalf("log line %d at position %d: the log has a gap", m.Line, i+1)
		}
		if m.Kind == store.KindUserPrompt {
			var p struct{ Content string }
			_ = json.Unmarshal(m.Payload, &p)
			prompts = append(prompts, p.Content)
		}
	}
	if fmt.Sprint(prompts) != "[first after]" {
		t.Errorf("prompts stored %v, want [first after]: the one given up is not stored", prompts)
	}
	if n := count(frames, func(f frame) bool { return f.str("type") == "user_message_stored" }); n != 2 {
		t.Errorf("%d prompts acknowledged, want 2", n)
	}
}

// TestPostgresDownPastRetriesMidStream (issue 17, item 1): PostgreSQL
// crashes mid-stream and stays down longer than chat retries an append
// (10 s). The agent message being stored then is given up: it never
// reaches the client (no frame without a line), and once PostgreSQL is
// back a gap notice counting it ({"gap": {"messages": n}}) is stored and
// sent before the stream goes on. Every other chunk is stored once, in
// order; the log has no hole.
//
// Before this change the message went out without a line and the log
// kept nothing of it.
func TestPostgresDownPastRetriesMidStream(t *testing.T) {
	pg := pgtest.Start(t)
	c := startFaultChat(t, pg, map[string]string{EnvSyncAgentLog: "on"})
	_, conn := c.connect()
	id := conn.str("session_id")
	r := recordPG(t, c, id)
	const chunks = 150
	r.send(map[string]any{"type": "user_message", "content": fmt.Sprintf("SLOW %d", chunks)})
	r.wait("5 agent messages", 20*time.Second, func(fs []frame) bool { return count(fs, isLinedAgent) >= 5 })
	pg.Crash()
	r.wait("storage frame (unavailable)", 10*time.Second, func(fs []frame) bool { return count(fs, isStorage(false)) == 1 })
	time.Sleep(12 * time.Second) // the outage's length, past the 10 s of retries: the fault, not a synchronisation
	pg.Up()
	r.wait("the turn's result", 40*time.Second, func(fs []frame) bool { return count(fs, isResult) == 1 })

	frames, seen := r.snapshot()
	for _, f := range frames {
		if f.str("type") == "agent_message" && f.line() == 0 {
			t.Errorf("an agent message reached the client without a line: %v", f)
		}
	}
	msgs := readLog(t, pg.URL(), id)
	if covered := checkNoSilentGap(t, msgs, seen); len(covered) != 0 {
		t.Errorf("lines %v lost: nothing may be, with CHAT_SYNC_AGENT_LOG=on", covered)
	}
	missing := 0
	for i, m := range msgs {
		if m.Line != int64(i+1) {
			t.Fatalf("log line %d at position %d: the log has a hole", m.Line, i+1)
		}
		var p struct {
			Gap *struct {
				Messages int `json:"messages"`
			} `json:"gap"`
		}
		if m.Kind == store.KindNotice && json.Unmarshal(m.Payload, &p) == nil && p.Gap != nil {
			missing += p.Gap.Messages
			if _, ok := seen[m.Line]; !ok {
				t.Errorf("the gap notice on line %d never reached the client", m.Line)
			}
		}
	}
	if missing == 0 {
		t.Fatalf("no gap notice counts a message given up: %s", r.dump())
	}
	got, want := chunkTexts(t, msgs), slowChunks(chunks)
	if len(got)+missing != len(want) {
		t.Fatalf("the log holds %d chunks and a gap notice for %d messages, want %d chunks in all", len(got), missing, len(want))
	}
	// The chunks it holds are the stream's, in order, each once: the
	// stream without a run of `missing` chunks.
	j := 0
	for _, w := range want {
		if j < len(got) && got[j] == w {
			j++
		}
	}
	if j != len(got) {
		t.Errorf("the log's chunks are not the stream's in order: %q", got)
	}
	t.Logf("%d messages given up, counted by a gap notice", missing)
}
