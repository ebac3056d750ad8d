package app

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeArgv returns the argv of every fakeclaude process that logged to
// path (FAKECLAUDE_LOG), in start order.
func fakeArgv(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec struct {
			Dir string `json:"dir"`
			Msg struct {
				Argv []string `json:"argv"`
			} `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Dir == "meta" && rec.Msg.Argv != nil {
			out = append(out, rec.Msg.Argv)
		}
	}
	return out
}

func hasResume(argv []string) bool {
	for _, a := range argv {
		if a == "--resume" || strings.HasPrefix(a, "--resume=") {
			return true
		}
	}
	return false
}

func logMessages(t *testing.T, c *chat, id string) []any {
	t.Helper()
	got := c.do(http.MethodGet, "/api/sessions/"+id+"/logs", "")
	got.want(t, http.StatusOK, "")
	msgs, _ := got.body["messages"].([]any)
	return msgs
}

func TestChatClearSession(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "fake.log")
	c := startFakeChat(t, "FAKECLAUDE_LOG="+logPath)
	a, conn := c.connect()
	id := conn.str("session_id")
	b, _ := c.join(id, -1)

	a.send(map[string]any{"type": "user_message", "content": "hello there"})
	a.until("result", isResult)
	b.until("result", isResult)
	before := logMessages(t, c, id)
	if len(before) < 2 {
		t.Fatalf("log before clear has %d messages", len(before))
	}

	a.send(map[string]any{"type": "clear_session"})
	var archivedID string
	for name, w := range map[string]*wsClient{"A": a, "B": b} {
		got := w.until("session_cleared", isType("session_cleared"))
		f := got[len(got)-1]
		if f.str("session_id") != id || f.str("archived_session_id") == "" || f.str("archived_session_id") == id {
			t.Fatalf("tab %s: session_cleared = %v", name, f)
		}
		archivedID = f.str("archived_session_id")
	}
	if msgs := logMessages(t, c, id); len(msgs) != 0 {
		t.Errorf("log after clear = %v, want empty", msgs)
	}
	if msgs := logMessages(t, c, archivedID); len(msgs) != len(before) {
		t.Errorf("archived log has %d messages, want %d", len(msgs), len(before))
	}
	arch := c.do(http.MethodGet, "/api/session/"+archivedID, "")
	arch.want(t, http.StatusOK, "")
	if arch.body["archived"] != true || arch.str("parent_id") != id || arch.body["turns"] != float64(1) {
		t.Errorf("archived session = %s", arch.raw)
	}
	cur := c.do(http.MethodGet, "/api/session/"+id, "")
	if cur.body["archived"] != false || cur.body["turns"] != float64(0) {
		t.Errorf("cleared session = %s", cur.raw)
	}

	a.send(map[string]any{"type": "user_message", "content": "again"})
	seen := a.until("result", isResult)
	for _, f := range seen {
		if f.str("type") == "message_stored" && f.line() <= int64(len(before)) {
			t.Errorf("prompt after clear at line %d, want > %d (lines stay monotonic)", f.line(), len(before))
		}
	}
	argvs := fakeArgv(t, logPath)
	if len(argvs) != 2 {
		t.Fatalf("fake started %d times, want 2: %v", len(argvs), argvs)
	}
	if hasResume(argvs[1]) {
		t.Errorf("process after clear resumed: %v", argvs[1])
	}
	if msgs := logMessages(t, c, id); len(msgs) < 2 {
		t.Errorf("log after the new turn has %d messages", len(msgs))
	}
}
