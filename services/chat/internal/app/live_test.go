package app

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
)

// activeOn reads GET /api/active-sessions of c.
func activeOn(t *testing.T, c *chat) []string {
	t.Helper()
	got := c.do(http.MethodGet, "/api/active-sessions", "")
	got.want(t, http.StatusOK, "")
	var body struct {
		Sessions []string `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(got.raw), &body); err != nil {
		t.Fatalf("active sessions %s: %v", got.raw, err)
	}
	return body.Sessions
}

// The HTTP routes act on the session's owner whichever instance serves
// them: stop, permission-mode and delete reach the process on A through B,
// and both instances list the session as active while its process lives.
func TestChatMultiHTTPOnNonOwner(t *testing.T) {
	a, b := startPair(t, "FAKECLAUDE_DELAY=200ms")
	wa, conn := a.connect()
	id := conn.str("session_id")
	wb, _ := b.join(id, -1)
	wa.send(map[string]any{"type": "user_message", "content": "SLOW 100"})
	wa.until("assistant chunk", func(f frame) bool { return f.dataType() == "assistant" })

	for name, c := range map[string]*chat{"A": a, "B": b} {
		if got := activeOn(t, c); !slices.Contains(got, id) {
			t.Errorf("active sessions on %s = %v, want %s", name, got, id)
		}
	}

	stop := b.do(http.MethodPost, "/api/session/"+id+"/stop", "")
	stop.want(t, http.StatusOK, "")
	if o := stop.str("outcome"); o != "acknowledged" && o != "forced" {
		t.Errorf("stop over B: outcome %q (%s), want the running turn interrupted", o, stop.raw)
	}
	wa.until("stopped", isType("stopped"))
	wb.until("stopped", isType("stopped"))
	seen := wa.until("result", isResult)
	d, _ := seen[len(seen)-1]["data"].(map[string]any)
	if d["subtype"] != "error_during_execution" {
		t.Errorf("result of the stopped turn = %v", d)
	}

	mode := b.do(http.MethodPut, "/api/session/"+id+"/permission-mode", `{"mode":"acceptEdits"}`)
	mode.want(t, http.StatusOK, "")
	if mode.str("applied") != "live" {
		t.Errorf("permission-mode over B: %s, want applied live", mode.raw)
	}
	for name, w := range map[string]*wsClient{"A": wa, "B": wb} {
		f := w.until("mode change", isType("permission_mode_changed"))
		if got := f[len(f)-1]; got.str("applied") != "live" || got.str("mode") != "acceptEdits" {
			t.Errorf("%s: permission_mode_changed = %v", name, got)
		}
	}

	b.do(http.MethodDelete, "/api/session/"+id, "").want(t, http.StatusOK, "")
	wa.until("session_ended", isType("session_ended"))
	deadline := time.Now().Add(5 * time.Second)
	for slices.Contains(activeOn(t, a), id) || slices.Contains(activeOn(t, b), id) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still active 5s after its delete", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// With nobody owning the session, the routes act here: stop is idle,
// a mode change applies on the next turn.
func TestChatMultiHTTPWithoutOwner(t *testing.T) {
	a, b := startPair(t)
	id := a.mustSession(t.TempDir())
	if got := b.do(http.MethodPost, "/api/session/"+id+"/stop", ""); got.str("outcome") != "idle" {
		t.Errorf("stop: %s, want idle", got.raw)
	}
	if got := b.do(http.MethodPut, "/api/session/"+id+"/permission-mode", `{"mode":"plan"}`); got.str("applied") != "next_turn" {
		t.Errorf("permission-mode: %s, want next_turn", got.raw)
	}
	if got := activeOn(t, a); slices.Contains(got, id) {
		t.Errorf("active sessions %v list the idle %s", got, id)
	}
}

// Through a silent window of a turn the sockets get the heartbeat:
// compact_progress with is_compacting false.
func TestChatTurnHeartbeat(t *testing.T) {
	c := startInstance(t, pgmigratetest.MustSchema(t), map[string]string{EnvHeartbeat: "100ms"}, notFound, []string{"FAKECLAUDE_DELAY=700ms"}, nil)
	c.do(http.MethodPut, "/api/app/provider-path/claude", `{"path":`+quote(fake(t))+`}`).want(t, http.StatusOK, "")
	w, _ := c.connect()
	w.send(map[string]any{"type": "user_message", "content": "SLOW 3"})
	seen := w.until("result", isResult)
	beats := 0
	for _, f := range seen {
		if f.str("type") != "compact_progress" {
			continue
		}
		beats++
		if f["heartbeat"] != true || f["is_compacting"] != false {
			t.Errorf("heartbeat frame %v", f)
		}
		if ms, _ := f["silent_ms"].(float64); ms < 100 {
			t.Errorf("heartbeat after %vms of silence, want >= 100", ms)
		}
		if _, ok := f["elapsed_ms"].(float64); !ok {
			t.Errorf("heartbeat without elapsed_ms: %v", f)
		}
	}
	if beats < 2 {
		t.Errorf("%d heartbeats through two 700ms silences, want at least 2: %v", beats, seen)
	}
	// The turn has ended: no more heartbeats.
	time.Sleep(400 * time.Millisecond)
	w.send(map[string]any{"type": "ping"})
	for {
		f := w.next()
		if f.str("type") == "pong" {
			break
		}
		if f.str("type") == "compact_progress" {
			t.Errorf("heartbeat after the turn: %v", f)
		}
	}
}

// An image of a user_message reaches the CLI as an image content block.
func TestChatImageReachesAgent(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "fake.log")
	c := startFakeChat(t, "FAKECLAUDE_LOG="+logPath)
	w, _ := c.connect()
	data := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nnot really"))
	w.send(map[string]any{"type": "user_message", "content": "ECHO look", "images": []any{map[string]any{
		"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": data},
	}}})
	seen := w.until("result", isResult)
	stored := false
	for _, f := range seen {
		if f.str("type") == "message_stored" {
			m, _ := f["message"].(map[string]any)
			ims, _ := m["images"].([]any)
			stored = len(ims) == 1
		}
	}
	if !stored {
		t.Errorf("message_stored without the image: %v", seen)
	}
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	found := false
	for sc.Scan() {
		var rec struct {
			Dir string `json:"dir"`
			Msg struct {
				Type    string `json:"type"`
				Message struct {
					Content []struct {
						Type   string `json:"type"`
						Text   string `json:"text"`
						Source struct {
							Type      string `json:"type"`
							MediaType string `json:"media_type"`
							Data      string `json:"data"`
						} `json:"source"`
					} `json:"content"`
				} `json:"message"`
			} `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Dir != "in" || rec.Msg.Type != "user" {
			continue
		}
		for _, b := range rec.Msg.Message.Content {
			if b.Type == "image" && b.Source.Type == "base64" && b.Source.MediaType == "image/png" && b.Source.Data == data {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("the CLI received no image block with the data sent (%s)", logPath)
	}
}

// An image whose data is not base64 is refused with an error frame; the
// socket lives on.
func TestChatImageNotBase64(t *testing.T) {
	c := startFakeChat(t)
	w, _ := c.connect()
	w.send(map[string]any{"type": "user_message", "content": "look", "images": []any{map[string]any{
		"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "not base64!"},
	}}})
	if f := w.next(); f.str("type") != "error" || f.str("message") == "" {
		t.Fatalf("got %v, want an error frame", f)
	}
	w.send(map[string]any{"type": "ping"})
	if f := w.next(); f.str("type") != "pong" {
		t.Fatalf("after the refused image: %v, want pong", f)
	}
	w.send(map[string]any{"type": "user_message", "content": "hi"})
	w.until("result", isResult)
}
