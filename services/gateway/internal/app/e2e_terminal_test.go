package app

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/termhosts"
)

// terminalHost is one terminal binary started by startTerminalHost.
type terminalHost struct {
	id     string
	addr   string
	cmd    *exec.Cmd
	exited chan struct{}
	killed bool // by the test, with SIGKILL
	mu     sync.Mutex
	log    []string
}

// kill ends the host with SIGKILL, as a crash would.
func (h *terminalHost) kill(t *testing.T) {
	t.Helper()
	h.killed = true
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-h.exited
}

// startTerminalHost runs the terminal binary as host id on 127.0.0.1:0
// and returns once it listens. Unless killed by the test, it is stopped
// with SIGTERM at the end and must exit 0.
func startTerminalHost(t *testing.T, bin, id string, env []string) *terminalHost {
	t.Helper()
	h := &terminalHost{id: id, exited: make(chan struct{})}
	h.cmd = exec.Command(bin)
	h.cmd.Env = append(env, "TERMINAL_HOST_ID="+id)
	stderr, err := h.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	var waitErr error
	go func() {
		defer close(h.exited)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			h.mu.Lock()
			h.log = append(h.log, sc.Text())
			h.mu.Unlock()
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Addr
			}
		}
		waitErr = h.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.exited:
			if waitErr != nil && !h.killed {
				t.Errorf("terminal %s exited with %v", id, waitErr)
			}
		case <-time.After(15 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.exited
			t.Errorf("terminal %s did not stop within 15 s of SIGTERM", id)
		}
		if t.Failed() {
			h.mu.Lock()
			t.Logf("terminal %s log:\n%s", id, strings.Join(h.log, "\n"))
			h.mu.Unlock()
		}
	})
	select {
	case h.addr = <-addr:
	case <-h.exited:
		t.Fatalf("terminal %s exited before listening: %v", id, waitErr)
	case <-time.After(30 * time.Second):
		t.Fatalf("terminal %s did not listen within 30 s", id)
	}
	return h
}

// termConn is a terminal WebSocket through the gateway.
type termConn struct {
	t         *testing.T
	ws        *websocket.Conn
	connected struct {
		Session string `json:"session"`
		PID     int    `json:"pid"`
		Host    string `json:"host"`
		Created bool   `json:"created"`
	}
	out      strings.Builder
	controls []map[string]any
}

func dialTerminal(t *testing.T, g *gateway, tok, session string) *termConn {
	t.Helper()
	ws, status, err := g.dialWS("/ws/terminal?session="+session, http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		t.Fatalf("dial terminal %s: %v (status %d)", session, err, status)
	}
	t.Cleanup(func() { _ = ws.Close() })
	c := &termConn{t: t, ws: ws}
	kind, msg := c.next()
	if kind != websocket.TextMessage || json.Unmarshal(msg, &c.connected) != nil || c.connected.Session != session {
		t.Fatalf("first frame %d %s, want connected for %s", kind, msg, session)
	}
	return c
}

func (c *termConn) next() (int, []byte) {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	kind, msg, err := c.ws.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v; output so far %q", err, c.out.String())
	}
	return kind, msg
}

// waitOutput reads until the output contains s.
func (c *termConn) waitOutput(s string) {
	c.t.Helper()
	for !strings.Contains(c.out.String(), s) {
		kind, msg := c.next()
		if kind == websocket.BinaryMessage {
			c.out.Write(msg)
			continue
		}
		var m map[string]any
		_ = json.Unmarshal(msg, &m)
		c.controls = append(c.controls, m)
	}
}

// waitControl reads until a control frame of type typ arrives.
func (c *termConn) waitControl(typ string) map[string]any {
	c.t.Helper()
	for {
		for _, m := range c.controls {
			if m["type"] == typ {
				return m
			}
		}
		kind, msg := c.next()
		if kind == websocket.BinaryMessage {
			c.out.Write(msg)
			continue
		}
		var m map[string]any
		_ = json.Unmarshal(msg, &m)
		c.controls = append(c.controls, m)
	}
}

func (c *termConn) typeLine(s string) {
	c.t.Helper()
	if err := c.ws.WriteMessage(websocket.BinaryMessage, []byte(s+"\r")); err != nil {
		c.t.Fatal(err)
	}
}

func processRunning(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// TestTerminalHostsBehindGateway builds the terminal binary, runs it twice
// as two hosts of one deployment behind a real gateway, and checks that
// new sessions land on the least loaded host, sessions come back to their
// host, every host's terminals are listed, DELETE reaches the owning host,
// and that when a host dies (SIGKILL) its session is reported lost and
// starts afresh on the other host once the dead host's heartbeat expires.
func TestTerminalHostsBehindGateway(t *testing.T) {
	bin := buildTerminal(t)
	prefix, env := terminalEnv(t, "TERMINAL_HOST_TTL=1500ms")
	a := startTerminalHost(t, bin, "host-a", env)
	b := startTerminalHost(t, bin, "host-b", env)

	rdb, err := redisx.Connect(context.Background(), redisURL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	reg := termhosts.New(rdb, redisx.Keys{Prefix: prefix}, internalauth.FromString(testSecret), nil)
	ctx := context.Background()
	load := func(id string) int {
		h, ok, err := reg.Host(ctx, id)
		if err != nil || !ok {
			return -1
		}
		return h.Terminals
	}
	waitFor(t, 10*time.Second, "both hosts announced", func() bool { return load("host-a") == 0 && load("host-b") == 0 })

	g := startGateway(t, func(env map[string]string, _ *Config) {
		env[EnvTerminalURL] = "http://" + a.addr
		env["REDIS_PREFIX"] = prefix
	})
	tok := g.token()

	// Least loaded first (a tie goes to the smaller id).
	s1 := dialTerminal(t, g, tok, "s1")
	if s1.connected.Host != "host-a" || !s1.connected.Created {
		t.Fatalf("s1 connected %+v, want a new shell on host-a", s1.connected)
	}
	waitFor(t, 10*time.Second, "host-a to report its terminal", func() bool { return load("host-a") == 1 })
	s2 := dialTerminal(t, g, tok, "s2")
	if s2.connected.Host != "host-b" || !s2.connected.Created {
		t.Fatalf("s2 connected %+v, want a new shell on host-b", s2.connected)
	}
	waitFor(t, 10*time.Second, "host-b to report its terminal", func() bool { return load("host-b") == 1 })
	s2.typeLine("echo through-''the-gateway")
	s2.waitOutput("through-the-gateway")

	// Sessions come back to their host and their shell.
	again := dialTerminal(t, g, tok, "s1")
	if again.connected.Host != "host-a" || again.connected.PID != s1.connected.PID || again.connected.Created {
		t.Errorf("s1 again: %+v, want its shell %d on host-a", again.connected, s1.connected.PID)
	}
	again.ws.Close()

	// Every host's terminals, from whichever host answers.
	r := g.do(req{path: "/api/terminals", headers: bearer(tok)})
	wantStatus(t, r, 200, "")
	var list struct {
		Terminals []struct {
			Session, Host string
			PID           int
		}
	}
	if err := json.Unmarshal([]byte(r.body), &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range list.Terminals {
		got[e.Session] = e.Host
	}
	if len(list.Terminals) != 2 || got["s1"] != "host-a" || got["s2"] != "host-b" {
		t.Errorf("GET /api/terminals = %s, want s1 on host-a and s2 on host-b", r.body)
	}

	// DELETE reaches the host holding the session; an unknown id is 404.
	wantStatus(t, g.do(req{method: "DELETE", path: "/api/terminal/s1", headers: bearer(tok)}), 200, "")
	if exit := s1.waitControl("exit"); exit["code"] == nil {
		t.Errorf("exit frame %v without a code", exit)
	}
	wantStatus(t, g.do(req{method: "DELETE", path: "/api/terminal/s1", headers: bearer(tok)}), 404, "not_found")
	wantStatus(t, g.do(req{method: "DELETE", path: "/api/terminal/never", headers: bearer(tok)}), 404, "not_found")

	// host-b dies without a word. Once its heartbeat expires, s2 goes to
	// host-a, which starts a new shell and says the old one is lost.
	oldPID := s2.connected.PID
	b.kill(t)
	waitFor(t, 10*time.Second, "host-b's heartbeat to expire", func() bool { return load("host-b") == -1 })
	lost := dialTerminal(t, g, tok, "s2")
	if lost.connected.Host != "host-a" || !lost.connected.Created || lost.connected.PID == oldPID {
		t.Fatalf("s2 after host-b died: %+v, want a new shell on host-a", lost.connected)
	}
	kind, msg := lost.next()
	var frame map[string]any
	if kind != websocket.TextMessage || json.Unmarshal(msg, &frame) != nil || frame["type"] != "error" ||
		frame["code"] != "terminal_lost" || !strings.Contains(frame["message"].(string), "host-b") {
		t.Fatalf("frame after connected: %d %s, want error terminal_lost naming host-b", kind, msg)
	}
	lost.typeLine("echo on-''a")
	lost.waitOutput("on-a")
	// The dead host's shell was hung up when its terminal's master closed.
	waitFor(t, 10*time.Second, "the dead host's shell to end", func() bool { return !processRunning(oldPID) })
	// From now on s2 lives on host-a.
	if id, _ := reg.SessionHost(ctx, "s2"); id != "host-a" {
		t.Errorf("s2 is held by %q, want host-a", id)
	}
}

// buildTerminal builds the terminal service's binary for a test.
func buildTerminal(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "terminal")
	build := exec.Command("go", "build", "-o", bin, "./services/terminal/cmd/terminal")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// terminalEnv is a terminal host's environment for a test: a data home and
// HOME of its own, the test's internal secret, Redis under a fresh prefix
// (returned), any port, /bin/sh, and extra settings.
func terminalEnv(t *testing.T, extra ...string) (prefix string, env []string) {
	prefix = "test:" + randomHex(6) + ":"
	home := t.TempDir()
	env = append(os.Environ(),
		"SVC_CODE_HOME="+filepath.Join(home, "data"), "SVC_INTERNAL_SECRET="+testSecret, "SVC_INTERNAL_SECRET_FILE=",
		"REDIS_URL="+redisURL(), "REDIS_PREFIX="+prefix, "LOG_FORMAT=json",
		"TERMINAL_ADDR=127.0.0.1:0", "TERMINAL_SHELL=/bin/sh", "HOME="+home,
	)
	return prefix, append(env, extra...)
}
