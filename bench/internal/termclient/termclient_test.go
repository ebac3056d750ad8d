package termclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseControl(t *testing.T) {
	tests := []struct {
		name   string
		msg    string
		want   Control
		wantOK bool
	}{
		{
			"connected",
			`{"type":"connected","session":"s1","cwd":"/w","home":"/h","pid":42,"has_scrollback":true,"stream":"x","offset":0}`,
			Control{Type: TypeConnected, Session: "s1", Cwd: "/w", Home: "/h", PID: 42, HasScrollback: true},
			true,
		},
		{"exit", `{"type":"exit","code":130}`, Control{Type: TypeExit, ExitCode: 130}, true},
		{"heartbeat", `{"type":"heartbeat"}`, Control{Type: TypeHeartbeat}, true},
		{"pong", `{"type":"pong"}`, Control{Type: TypePong}, true},
		{
			"error with a string code",
			`{"type":"error","code":"input_timeout","message":"dropped"}`,
			Control{Type: TypeError, ErrorCode: "input_timeout", Message: "dropped"},
			true,
		},
		{"resync", `{"type":"resync","skipped":4096,"offset":10}`, Control{Type: TypeResync, Skipped: 4096, Offset: 10}, true},
		{"screen", `{"type":"screen","offset":99,"rows":24,"cols":80,"bytes":120}`, Control{Type: TypeScreen, Offset: 99, Bytes: 120}, true},
		{"terminal output that looks like JSON", `{"type":"ls"}`, Control{}, false},
		{"JSON with no type", `{"a":1}`, Control{}, false},
		{"exit with a non-numeric code is output", `{"type":"exit","code":"x"}`, Control{}, false},
		{"broken JSON", `{"type":"exit"`, Control{}, false},
		{"plain output", `$ ls`, Control{}, false},
		{"empty", ``, Control{}, false},
		{"leading space", ` {"type":"pong"}`, Control{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseControl([]byte(tt.msg))
			if ok != tt.wantOK {
				t.Fatalf("ParseControl ok = %v, want %v", ok, tt.wantOK)
			}
			if got != tt.want {
				t.Errorf("ParseControl = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzParseControl(f *testing.F) {
	f.Add(`{"type":"exit","code":1}`)
	f.Add(`{"type":"error","code":"x","message":"y"}`)
	f.Add(`{"type":"connected","pid":1}`)
	f.Fuzz(func(t *testing.T, msg string) {
		c, ok := ParseControl([]byte(msg))
		if ok && c.Type == "" {
			t.Errorf("ParseControl(%q) accepted a frame with no type", msg)
		}
		if !ok && c != (Control{}) {
			t.Errorf("ParseControl(%q) rejected the frame but returned %+v", msg, c)
		}
	})
}

// serve runs a terminal socket that sends the connected frame, then
// script's frames (a string starting "text:" goes as a text frame, others
// as binary), then waits for the client to close.
func serve(t *testing.T, script []string) string {
	t.Helper()
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test") != "yes" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"connected","session":"s","pid":7}`))
		for _, f := range script {
			if text, ok := strings.CutPrefix(f, "text:"); ok {
				_ = ws.WriteMessage(websocket.TextMessage, []byte(text))
			} else {
				_ = ws.WriteMessage(websocket.BinaryMessage, []byte(f))
			}
		}
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func dialTest(t *testing.T, url string) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), url, http.Header{"X-Test": []string{"yes"}}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestConnReadsOutputAroundControlFrames(t *testing.T) {
	c := dialTest(t, serve(t, []string{
		"hello ",
		`text:{"type":"heartbeat"}`,
		"text:world",
		`text:{"type":"resync","skipped":100,"offset":5}`,
		`text:{"type":"ls"}`,
		`text:{"type":"resync","skipped":23,"offset":9}`,
		"!",
		`text:{"type":"exit","code":3}`,
	}))
	if c.Connected.PID != 7 || c.Connected.Session != "s" {
		t.Errorf("Connected = %+v, want session s, pid 7", c.Connected)
	}
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 3) // smaller than the frames
	var err error
	for {
		var n int
		n, err = c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	if want := `hello world{"type":"ls"}!`; string(got) != want {
		t.Errorf("read %q, want %q", got, want)
	}
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "code 3") {
		t.Errorf("final error = %v, want ErrExited with code 3", err)
	}
	if got := c.Skipped(); got != 123 {
		t.Errorf("Skipped = %d, want 123", got)
	}
	if got := c.Frames(); got != 4 {
		t.Errorf("Frames = %d, want 4", got)
	}
	c.Close()
}

func TestConnSurvivesADeadline(t *testing.T) {
	c := dialTest(t, serve(t, nil))
	buf := make([]byte, 16)
	for range 2 {
		if err := c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read of a silent terminal = %v, want os.ErrDeadlineExceeded", err)
		}
	}
	// Still usable: the socket takes keys, and Close is clean.
	if err := c.Send([]byte("ls\r")); err != nil {
		t.Errorf("Send after a timed-out Read: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestConnCloseUnblocksRead(t *testing.T) {
	c := dialTest(t, serve(t, nil))
	time.AfterFunc(20*time.Millisecond, func() { _ = c.Close() })
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read during Close = %v, want net.ErrClosed", err)
	}
}

func TestDialRefused(t *testing.T) {
	url := serve(t, nil)
	_, err := Dial(context.Background(), url, nil, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "status 401") {
		t.Errorf("Dial without the header = %v, want status 401", err)
	}
}
