package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/libs/protocol"
)

// dialEvents opens /api/events on c and reads its first frame, the
// snapshot.
func (c *chat) dialEvents() (*wsClient, frame) {
	c.t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	h := http.Header{}
	h.Set(protocol.HeaderInternal, testSecret)
	ws, resp, err := d.Dial("ws://"+c.addr+"/api/events", h)
	if resp != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		c.t.Fatalf("dial /api/events: %v", err)
	}
	c.t.Cleanup(func() { _ = ws.Close() })
	w := &wsClient{t: c.t, ws: ws}
	snap := w.next()
	if snap.str("type") != "snapshot" {
		c.t.Fatalf("first events frame %v, want snapshot", snap)
	}
	return w, snap
}

// sessionFrame matches a `session` event of session id for which ok holds.
func sessionFrame(id string, ok func(s map[string]any) bool) func(frame) bool {
	return func(f frame) bool {
		if f.str("type") != "session" {
			return false
		}
		s, _ := f["session"].(map[string]any)
		return s["session_id"] == id && ok(s)
	}
}

// snapshotSession finds session id in a snapshot.
func snapshotSession(f frame, id string) map[string]any {
	list, _ := f["sessions"].([]any)
	for _, s := range list {
		if m, _ := s.(map[string]any); m["session_id"] == id {
			return m
		}
	}
	return nil
}

// TestEventsAcrossInstances: a socket on instance B sees what happens on
// instance A: a session created there, its agent_running flipping, a
// permission request with its resolution and answered_by, the session's
// deletion; a socket opened while a request waits finds it in its
// snapshot.
func TestEventsAcrossInstances(t *testing.T) {
	a, b := startPair(t)
	eb, snap := b.dialEvents()
	if list, _ := snap["sessions"].([]any); len(list) != 0 {
		t.Errorf("snapshot of an empty database: %v", snap)
	}
	if p, ok := snap["pending"].([]any); !ok || len(p) != 0 {
		t.Errorf("snapshot pending = %v, want []", snap["pending"])
	}

	created := a.do(http.MethodPost, "/api/sessions", `{"cwd":`+quote(t.TempDir())+`,"title":"made on A"}`)
	created.want(t, http.StatusCreated, "")
	id := created.str("session_id")
	eb.until("the new session", sessionFrame(id, func(s map[string]any) bool {
		return s["title"] == "made on A" && s["agent_running"] == false && s["pending_permissions"] == float64(0)
	}))

	wa, _ := a.join(id, -1)
	wa.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	eb.until("agent_running true", sessionFrame(id, func(s map[string]any) bool { return s["agent_running"] == true }))
	got := eb.until("the permission request", isType("permission_request"))
	req := got[len(got)-1]
	rid := req.str("request_id")
	if req.str("session_id") != id || req.str("tool_name") != "Bash" || rid == "" || req["input"] == nil {
		t.Fatalf("permission_request event = %v", req)
	}
	eb.until("pending_permissions 1", sessionFrame(id, func(s map[string]any) bool { return s["pending_permissions"] == float64(1) }))

	// A socket opened now, on either instance, has it in its snapshot.
	for name, c := range map[string]*chat{"A": a, "B": b} {
		_, s := c.dialEvents()
		p, _ := s["pending"].([]any)
		if len(p) != 1 || p[0].(map[string]any)["request_id"] != rid || p[0].(map[string]any)["session_id"] != id {
			t.Errorf("snapshot on %s: pending = %v, want request %s of %s", name, s["pending"], rid, id)
		}
		if ss := snapshotSession(s, id); ss == nil || ss["agent_running"] != true || ss["pending_permissions"] != float64(1) {
			t.Errorf("snapshot on %s: session = %v, want running with one pending request", name, ss)
		}
	}

	wa.send(map[string]any{"type": "permission_response", "request_id": rid, "behavior": "allow", "answered_by": "Firefox on a phone"})
	got = eb.until("the resolution", isType("permission_resolved"))
	if res := got[len(got)-1]; res.str("request_id") != rid || res.str("session_id") != id || res["ok"] != true ||
		res.str("behavior") != "allow" || res.str("answered_by") != "Firefox on a phone" {
		t.Fatalf("permission_resolved event = %v", res)
	}
	eb.until("the turn's end", sessionFrame(id, func(s map[string]any) bool {
		return s["agent_running"] == false && s["pending_permissions"] == float64(0) && s["turns"] == float64(1)
	}))

	a.do(http.MethodDelete, "/api/session/"+id, "").want(t, http.StatusOK, "")
	got = eb.until("the deletion", isType("session_deleted"))
	if f := got[len(got)-1]; f.str("session_id") != id {
		t.Errorf("session_deleted = %v", f)
	}
}

// TestEventsSessionChanges: renames, favorites and forks reach the
// socket.
func TestEventsSessionChanges(t *testing.T) {
	c := startFakeChat(t)
	id := c.mustSession(t.TempDir())
	e, snap := c.dialEvents()
	if snapshotSession(snap, id) == nil {
		t.Fatalf("snapshot %v lacks session %s", snap, id)
	}
	c.do(http.MethodPatch, "/api/session/"+id, `{"title":"renamed"}`).want(t, http.StatusOK, "")
	e.until("the rename", sessionFrame(id, func(s map[string]any) bool { return s["title"] == "renamed" }))
	c.do(http.MethodPut, "/api/favorites/sessions/"+id, `{}`).want(t, http.StatusOK, "")
	e.until("the favorite", sessionFrame(id, func(s map[string]any) bool { return s["is_favorite"] == true }))
	fork := c.do(http.MethodPost, "/api/session/"+id+"/fork", "")
	fork.want(t, http.StatusCreated, "")
	e.until("the fork", sessionFrame(fork.str("session_id"), func(s map[string]any) bool { return s["parent_id"] == id }))
}

// TestEventsArchive: archiving and unarchiving reach the socket as a
// session frame with archived flipped; archiving a session whose agent
// waits on a permission leaves the agent running and the request pending,
// and the turn finishes once it is answered.
func TestEventsArchive(t *testing.T) {
	c := startFakeChat(t)
	id := c.mustSession(t.TempDir())
	e, _ := c.dialEvents()
	ws, _ := c.join(id, -1)
	ws.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	got := e.until("the permission request", isType("permission_request"))
	rid := got[len(got)-1].str("request_id")

	c.do(http.MethodPatch, "/api/session/"+id, `{"archived":true}`).want(t, http.StatusOK, "")
	e.until("archived true", sessionFrame(id, func(s map[string]any) bool {
		return s["archived"] == true && s["agent_running"] == true && s["pending_permissions"] == float64(1)
	}))
	if _, snap := c.dialEvents(); snapshotSession(snap, id) != nil {
		t.Errorf("a new socket's snapshot lists the archived session: %v", snap)
	}
	if s := c.do(http.MethodGet, "/api/session/"+id, ""); s.body["agent_running"] != true {
		t.Errorf("archiving stopped the agent: %s", s.raw)
	}

	c.do(http.MethodPatch, "/api/session/"+id, `{"archived":false}`).want(t, http.StatusOK, "")
	e.until("archived false", sessionFrame(id, func(s map[string]any) bool { return s["archived"] == false && s["agent_running"] == true }))

	ws.send(map[string]any{"type": "permission_response", "request_id": rid, "behavior": "allow"})
	ws.until("the turn's result", isResult)
	e.until("the turn's end", sessionFrame(id, func(s map[string]any) bool {
		return s["archived"] == false && s["agent_running"] == false && s["turns"] == float64(1)
	}))
}

// TestEventsRepairsLostWake: a change no Wake announced (written straight
// to the database) reaches the socket with the next check, as a snapshot.
func TestEventsRepairsLostWake(t *testing.T) {
	c := startInstance(t, pgmigratetest.MustSchema(t), map[string]string{EnvEventsCheck: "300ms"}, notFound, nil, nil)
	id := c.mustSession(t.TempDir())
	e, _ := c.dialEvents()
	if _, err := c.store.UpdateTitle(context.Background(), id, "changed behind its back"); err != nil {
		t.Fatal(err)
	}
	e.until("a snapshot with the new title", func(f frame) bool {
		s := snapshotSession(f, id)
		return f.str("type") == "snapshot" && s != nil && s["title"] == "changed behind its back"
	})
}

// TestEventsBadInputs: the socket takes only ping; anything else gets an
// error frame and the socket stays; an oversized message closes it; a
// request that is no upgrade, or lacks the internal credential, is
// refused.
func TestEventsBadInputs(t *testing.T) {
	c := startChat(t, notFound)
	e, _ := c.dialEvents()
	e.send(map[string]any{"type": "ping"})
	if f := e.next(); f.str("type") != "pong" {
		t.Fatalf("ping: %v, want pong", f)
	}
	for _, msg := range []string{`{"type":"user_message","content":"x"}`, `not json`, `{}`} {
		e.sendRaw(msg)
		if f := e.next(); f.str("type") != "error" || f.str("message") == "" {
			t.Fatalf("%s: %v, want an error frame", msg, f)
		}
	}
	e.send(map[string]any{"type": "ping"})
	if f := e.next(); f.str("type") != "pong" {
		t.Fatalf("after errors: %v, want pong", f)
	}
	e.sendRaw(`{"type":"ping","pad":"` + strings.Repeat("x", 5000) + `"}`)
	_ = e.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err := e.ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("after an oversized message: %v, want close 1009", err)
	}

	c.do(http.MethodGet, "/api/events", "").want(t, http.StatusUpgradeRequired, "bad_request")
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	_, resp, err := d.Dial("ws://"+c.addr+"/api/events", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the internal credential: %v %v, want 401", err, resp)
	}
	_ = resp.Body.Close()
}

// TestEventsHeartbeat: a silent socket gets heartbeats.
func TestEventsHeartbeat(t *testing.T) {
	c := startInstance(t, pgmigratetest.MustSchema(t), map[string]string{EnvEventsHeartbeat: "200ms"}, notFound, nil, nil)
	e, _ := c.dialEvents()
	_ = e.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, b, err := e.ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if json.Unmarshal(b, &f) != nil || f["type"] != "heartbeat" {
		t.Fatalf("silent socket got %s, want a heartbeat", b)
	}
}
