package app

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/terminal/internal/termws"
)

func TestEchoRoundTrip(t *testing.T) {
	h := startHost(t)
	c := h.dial(session("echo"), nil)
	if got := c.connected; !got.Created || got.Session != "echo" || got.PID <= 0 || got.Home != h.home ||
		got.Cwd != h.home || got.Rows != 24 || got.Cols != 80 || got.Host == "" || got.Stream == "" {
		t.Errorf("connected = %+v", got)
	}
	out := c.run("echo hel''lo; echo $TERM", "hello")
	if !strings.Contains(out, "xterm-256color") {
		t.Errorf("output %q: TERM is not xterm-256color", out)
	}
	// Binary input is typed too.
	if err := c.ws.WriteMessage(2, []byte("echo bin''ary\r")); err != nil {
		t.Fatal(err)
	}
	c.waitOutput(c.mark(), "binary")
}

func TestResizeSeenByStty(t *testing.T) {
	h := startHost(t)
	c := h.dial(session("resize"), nil)
	c.run("stty size", "24 80")
	c.send(`{"type":"resize","rows":40,"cols":100}`)
	c.run("stty size", "40 100")
	// A second client sees the size in its connected frame.
	c2 := h.dial(session("resize"), nil)
	if c2.connected.Rows != 40 || c2.connected.Cols != 100 || c2.connected.Created {
		t.Errorf("second client's connected = %+v, want 40x100 and not created", c2.connected)
	}
}

func TestExitWithShellCode(t *testing.T) {
	h := startHost(t)
	a := h.dial(session("exit"), nil)
	b := h.dial(session("exit"), nil)
	a.ready()
	a.send("exit 7\r")
	for _, c := range []*client{a, b} {
		if got := c.waitControl(termws.TypeExit); got["code"] != float64(7) {
			t.Errorf("exit frame %v, want code 7", got)
		}
		if code := c.waitClosed(); code != 1000 {
			t.Errorf("close code %d, want 1000", code)
		}
	}
	waitFor(t, 5*time.Second, "the terminal to go", func() bool { return h.p.mgr.Len() == 0 })
	// The session's next connection gets a new shell, in the same place.
	c := h.dial(session("exit"), nil)
	if !c.connected.Created || c.connected.PID == a.connected.PID || c.connected.Stream == a.connected.Stream {
		t.Errorf("after exit, connected = %+v, want a new shell", c.connected)
	}
}

func TestUpgradeRefusals(t *testing.T) {
	h := startHost(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		q    map[string]string
	}{
		{"no session", map[string]string{}},
		{"empty session", map[string]string{"session": ""}},
		{"bad session", map[string]string{"session": "a/b"}},
		{"long session", map[string]string{"session": strings.Repeat("a", 129)}},
		{"relative cwd", map[string]string{"session": "s", "cwd": "tmp"}},
		{"missing cwd", map[string]string{"session": "s", "cwd": "/does/not/exist"}},
		{"cwd is a file", map[string]string{"session": "s", "cwd": file}},
		{"offset without stream", map[string]string{"session": "s", "offset": "3"}},
		{"stream without offset", map[string]string{"session": "s", "stream": "abc"}},
		{"negative offset", map[string]string{"session": "s", "stream": "abc", "offset": "-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := make(map[string][]string)
			for k, v := range tt.q {
				q[k] = []string{v}
			}
			_, r, err := h.tryDial(q, nil)
			if err == nil {
				t.Fatal("dial succeeded")
			}
			if r.status != 400 || r.body["error"] != "bad_request" || r.body["message"] == "" {
				t.Errorf("got %d %v, want 400 bad_request with a message", r.status, r.body)
			}
		})
	}
	t.Run("not an upgrade", func(t *testing.T) {
		status, body := h.request("GET", "/ws/terminal?session=s", "", "")
		if status != http.StatusUpgradeRequired || body["error"] != "bad_request" {
			t.Errorf("got %d %v, want 426 bad_request", status, body)
		}
	})
	t.Run("no internal credential", func(t *testing.T) {
		d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
		ws, resp, err := d.Dial("ws://"+h.addr+"/ws/terminal?session=s", nil)
		if err == nil {
			ws.Close()
			t.Fatal("upgrade without the internal credential succeeded")
		}
		var body map[string]any
		if resp != nil {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			_ = json.Unmarshal(raw, &body)
		}
		if resp == nil || resp.StatusCode != 401 || body["error"] != protocol.CodeUnauthorized {
			t.Errorf("got %v %v, want 401", resp, body)
		}
	})
	if n := h.p.mgr.Len(); n != 0 {
		t.Errorf("%d terminals started by refused upgrades", n)
	}
}
