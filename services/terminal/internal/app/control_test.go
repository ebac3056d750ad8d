package app

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/services/terminal/internal/cwdstore"
	"github.com/svc-code/svc-code/services/terminal/internal/termws"
)

func TestDeleteTerminal(t *testing.T) {
	h := startHost(t)
	c := h.dial(session("del"), nil)
	out := c.run("sleep 1000 & echo pid=$!.", "pid=")
	i := strings.LastIndex(out, "pid=")
	j := strings.Index(out[i:], ".")
	bg, err := strconv.Atoi(out[i+4 : i+j])
	if err != nil || !running(bg) {
		t.Fatalf("background job pid from %q: %v", out, err)
	}
	status, body := h.request("DELETE", "/api/terminal/del", "", "")
	if status != 200 || body["ok"] != true || body["session"] != "del" || body["exit_code"] != float64(129) {
		t.Errorf("DELETE: %d %v, want 200 ok with exit_code 129 (SIGHUP)", status, body)
	}
	if got := c.waitControl(termws.TypeExit); got["code"] != float64(129) {
		t.Errorf("exit frame %v, want code 129", got)
	}
	if code := c.waitClosed(); code != 1000 {
		t.Errorf("close code %d, want 1000", code)
	}
	if n := h.p.mgr.Len(); n != 0 {
		t.Errorf("%d terminals after DELETE", n)
	}
	waitFor(t, 5*time.Second, "the background job to end", func() bool { return !running(bg) })
	if id, _ := h.p.reg.SessionHost(context.Background(), "del"); id != "" {
		t.Errorf("session still claimed by %q after DELETE", id)
	}
	for _, id := range []string{"del", "unknown", "bad%2Fid", strings.Repeat("x", 200)} {
		status, body := h.request("DELETE", "/api/terminal/"+id, "", "")
		if status != 404 || body["error"] != protocol.CodeNotFound {
			t.Errorf("DELETE %s: %d %v, want 404 not_found", id, status, body)
		}
	}
}

// TestBadControlMessages: bad control messages get an error frame and
// change nothing; text that merely looks like JSON is typed as it is.
func TestBadControlMessages(t *testing.T) {
	h := startHost(t)
	c := h.dial(session("bad"), nil)
	pid := c.connected.PID
	for _, msg := range []string{
		`{"type":"resize","rows":0,"cols":80}`,
		`{"type":"resize","rows":24,"cols":0}`,
		`{"type":"resize","rows":100000,"cols":80}`,
		`{"type":"resize","rows":24,"cols":1001}`,
		`{"type":"resize","rows":-3,"cols":80}`,
		`{"type":"resize","rows":"24","cols":80}`,
		`{"type":"resize","rows":24.5,"cols":80}`,
		`{"type":"resize"}`,
	} {
		n := len(c.controls)
		c.send(msg)
		c.pump(5*time.Second, "error frame for "+msg, func() bool { return len(c.controls) > n })
		if got := c.controls[n]; got["type"] != termws.TypeError || got["code"] != termws.CodeBadRequest || got["message"] == "" {
			t.Errorf("%s: got %v, want an error frame with code bad_request", msg, got)
		}
	}
	c.run("stty size", "24 80")

	// Not control messages: typed unchanged, so the terminal echoes them.
	for _, msg := range []string{
		`{"type":"nope"}`,
		`{"type":"resize",`,
		`{"type":["ping"]}`,
		`{`,
		`{"kind":"ping"}`,
	} {
		mark := c.mark()
		c.send(msg)
		c.waitOutput(mark, msg)
		c.send("\x15") // Ctrl-U: clear the line
	}
	c.send(`{"type":"ping"}`)
	c.waitControl(termws.TypePong)
	for _, m := range c.controls {
		if m["type"] == termws.TypeError && m["code"] != termws.CodeBadRequest {
			t.Errorf("unexpected error frame %v", m)
		}
	}
	c.run("echo st''ill here", "still here")
	if c2 := h.dial(session("bad"), nil); c2.connected.PID != pid {
		t.Errorf("the shell changed after bad input")
	}
}

func TestHeartbeat(t *testing.T) {
	h := startHost(t, withEnv("TERMINAL_HEARTBEAT", "100ms"))
	c := h.dial(session("hb"), nil)
	c.waitControl(termws.TypeHeartbeat)
}

// TestSeveralClients: all see the output, all may type.
func TestSeveralClients(t *testing.T) {
	h := startHost(t)
	a := h.dial(session("multi"), nil)
	b := h.dial(session("multi"), nil)
	a.send("echo from-''a\r")
	a.waitOutput(0, "from-a")
	b.waitOutput(0, "from-a")
	b.send("echo from-''b\r")
	a.waitOutput(0, "from-b")
	b.waitOutput(0, "from-b")
	infos := h.p.mgr.List()
	if len(infos) != 1 || infos[0].Clients != 2 {
		t.Errorf("List = %+v, want one terminal with 2 clients", infos)
	}
}

func TestLostHostIsReported(t *testing.T) {
	h := startHost(t)
	lost := http.Header{protocol.HeaderTerminalLostHost: {"dead-host:1"}}
	c := h.dial(session("lost"), lost)
	if !c.connected.Created {
		t.Errorf("connected = %+v, want a new shell", c.connected)
	}
	// The error frame comes right after connected, before any output.
	kind, msg := c.next(5 * time.Second)
	if kind != 1 || !strings.Contains(string(msg), `"code":"terminal_lost"`) || !strings.Contains(string(msg), "dead-host:1") {
		t.Fatalf("frame after connected: %d %s, want the terminal_lost error", kind, msg)
	}
	c.run("echo al''ive", "alive")
	// Once this host holds the session, the header (a stale route) does
	// not make it report a loss.
	c2 := h.dial(session("lost"), lost)
	c2.send(`{"type":"ping"}`)
	c2.waitControl(termws.TypePong)
	for _, m := range c2.controls {
		if m["type"] == termws.TypeError {
			t.Errorf("attached client got %v", m)
		}
	}

	// The registry says this host holds a session it does not know: it
	// restarted since, and the terminal is gone with its previous life.
	if err := h.p.reg.Claim(context.Background(), "before-restart", h.p.host.ID); err != nil {
		t.Fatal(err)
	}
	c3 := h.dial(session("before-restart"), nil)
	kind, msg = c3.next(5 * time.Second)
	if kind != 1 || !strings.Contains(string(msg), `"code":"terminal_lost"`) || !strings.Contains(string(msg), "restarted") {
		t.Fatalf("frame after connected: %d %s, want the terminal_lost error", kind, msg)
	}
	// A session new to the registry is not reported lost.
	c4 := h.dial(session("brand-new"), nil)
	c4.send(`{"type":"ping"}`)
	c4.waitControl(termws.TypePong)
	for _, m := range c4.controls {
		if m["type"] == termws.TypeError {
			t.Errorf("new session got %v", m)
		}
	}
}

// TestStoredCwd: a session's first working directory is kept in Redis and
// wins over the cwd of later connections.
func TestStoredCwd(t *testing.T) {
	h := startHost(t)
	first, second := t.TempDir(), t.TempDir()
	c := h.dial(session("cwd", "cwd", first), nil)
	if c.connected.Cwd != first {
		t.Errorf("connected cwd = %q, want %q", c.connected.Cwd, first)
	}
	c.run("pwd", first)
	c.send("exit\r")
	c.waitClosed()
	waitFor(t, 5*time.Second, "the terminal to go", func() bool { return h.p.mgr.Len() == 0 })

	c = h.dial(session("cwd", "cwd", second), nil)
	if !c.connected.Created || c.connected.Cwd != first {
		t.Errorf("connected = %+v, want a new shell in the stored %q", c.connected, first)
	}
	store := cwdstore.New(h.rdb, redisx.Keys{Prefix: h.prefix})
	if got, _ := store.Get(context.Background(), "cwd"); got != first {
		t.Errorf("stored cwd = %q, want %q", got, first)
	}
	// A stored directory that went away gives way to the requested one.
	gone := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(gone, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := store.Set(context.Background(), "cwd2", gone); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(gone)
	if c := h.dial(session("cwd2", "cwd", second), nil); c.connected.Cwd != second {
		t.Errorf("connected cwd = %q, want %q", c.connected.Cwd, second)
	}
	// A cwd that no longer exists does not keep a client from a session
	// that does not need it.
	if c := h.dial(session("cwd", "cwd", gone), nil); c.connected.Cwd != first {
		t.Errorf("connected cwd = %q, want the session's %q", c.connected.Cwd, first)
	}
	if _, r, err := h.tryDial(session("cwd3", "cwd", gone), nil); err == nil || r.status != 400 {
		t.Errorf("a new session with a missing cwd: %v %+v, want 400", err, r)
	}
}

func TestIdleTerminalEnds(t *testing.T) {
	h := startHost(t, withEnv("TERMINAL_IDLE_TIMEOUT", "300ms"))
	c := h.dial(session("idle"), nil)
	c.ready()
	start := time.Now()
	c.close()
	waitFor(t, 10*time.Second, "the idle terminal to end", func() bool { return h.p.mgr.Len() == 0 })
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("ended after %v, before the idle timeout", d)
	}
	if c := h.dial(session("idle"), nil); !c.connected.Created {
		t.Errorf("connected = %+v, want a new shell", c.connected)
	}
}

// TestListAcrossHosts: GET /api/terminals on any host lists every live
// host's terminals.
func TestListAcrossHosts(t *testing.T) {
	a := startHost(t, withEnv("TERMINAL_HOST_ID", "host-a"))
	b := startHost(t, withEnv("TERMINAL_HOST_ID", "host-b"), withEnv("REDIS_PREFIX", a.prefix))
	ca := a.dial(session("on-a"), nil)
	cb := b.dial(session("on-b"), nil)
	cb2 := b.dial(session("on-b"), nil)
	want := map[string]struct {
		host    string
		pid     int
		clients int
	}{"on-a": {"host-a", ca.connected.PID, 1}, "on-b": {"host-b", cb.connected.PID, 2}}
	for _, h := range []*host{a, b} {
		var list []any
		waitFor(t, 10*time.Second, "both terminals listed", func() bool {
			status, body := h.request("GET", "/api/terminals", "", "")
			if status != 200 {
				t.Fatalf("GET /api/terminals: %d %v", status, body)
			}
			list, _ = body["terminals"].([]any)
			if len(list) != 2 {
				return false
			}
			for _, e := range list {
				m := e.(map[string]any)
				w := want[m["session"].(string)]
				if m["host"] != w.host || m["pid"] != float64(w.pid) || m["clients"] != float64(w.clients) {
					return false
				}
			}
			return true
		})
		for _, e := range list {
			m := e.(map[string]any)
			if _, err := time.Parse(time.RFC3339, m["started"].(string)); err != nil || m["cwd"] == "" {
				t.Errorf("entry %v: want started and cwd", m)
			}
		}
	}
	cb2.close()
	// A host that withdraws takes its terminals out of the list.
	b.shutdown()
	status, body := a.request("GET", "/api/terminals", "", "")
	if list := body["terminals"].([]any); status != 200 || len(list) != 1 {
		t.Errorf("after b stopped: %d %v, want only a's terminal", status, body)
	}
}

// TestShutdownEndsTerminals: on shutdown clients get their exit frame and
// the host leaves the registry.
func TestShutdownEndsTerminals(t *testing.T) {
	h := startHost(t)
	c := h.dial(session("down"), nil)
	c.ready()
	ctx := context.Background()
	if _, ok, _ := h.p.reg.Host(ctx, h.p.host.ID); !ok {
		t.Fatal("host not announced")
	}
	h.shutdown()
	c.waitControl(termws.TypeExit)
	if code := c.waitClosed(); code != 1000 && code != 1001 {
		t.Errorf("close code %d, want 1000 or 1001", code)
	}
	if _, ok, err := h.p.reg.Host(ctx, h.p.host.ID); err == nil && ok {
		t.Error("host still announced after shutdown")
	}
}
