package app

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sessionLog reads the session's whole log.
func sessionLog(t *testing.T, c *chat, id string) []map[string]any {
	t.Helper()
	got := c.do(http.MethodGet, "/api/sessions/"+id+"/logs/messages?since=0", "")
	got.want(t, http.StatusOK, "")
	var body struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal([]byte(got.raw), &body); err != nil {
		t.Fatalf("log %s: %v", got.raw, err)
	}
	return body.Messages
}

// isNotice matches the message_stored frame of a server notice.
func isNotice(f frame) bool {
	m, _ := f["message"].(map[string]any)
	return f.str("type") == "message_stored" && m["role"] == "notice"
}

// wantNotice checks that the log is the prompt, then a notice about it
// whose content has each of want.
func wantNotice(t *testing.T, c *chat, id string, want ...string) {
	t.Helper()
	msgs := sessionLog(t, c, id)
	if len(msgs) != 2 || msgs[0]["kind"] != "user_prompt" || msgs[1]["kind"] != "notice" {
		t.Fatalf("log = %v, want the prompt and a notice", msgs)
	}
	p, _ := msgs[1]["payload"].(map[string]any)
	content, _ := p["content"].(string)
	if p["role"] != "notice" || p["level"] != "error" || p["prompt_line"] != msgs[0]["line"] {
		t.Errorf("notice payload = %v, want role notice, level error, prompt_line %v", p, msgs[0]["line"])
	}
	for _, w := range want {
		if !strings.Contains(content, w) {
			t.Errorf("notice %q does not say %q", content, w)
		}
	}
}

// TestTurnStartFailureIsStoredInTheLog: a turn that cannot start leaves,
// besides the prompt, a notice in the log saying why (issue 15: only the
// prompt was left), and the sockets get it as today (error frame) and as
// the stored notice.
func TestTurnStartFailureIsStoredInTheLog(t *testing.T) {
	t.Run("provider path does not exist", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "no-such-dir", "claude")
		c := startChatEnv(t, func(string) (string, error) { return missing, nil }, nil)
		w, conn := c.connect()
		id := conn.str("session_id")
		w.send(map[string]any{"type": "user_message", "content": "hi"})
		seen := w.until("error", isType("error"))
		if msg := seen[len(seen)-1].str("message"); !strings.Contains(msg, "/api/app/provider-path/claude") {
			t.Errorf("error frame %q should say how to set claude's path", msg)
		}
		w.until("stored notice", isNotice)
		wantNotice(t, c, id, missing, "/api/app/provider-path/claude")
	})
	t.Run("crash before the first line", func(t *testing.T) {
		script := filepath.Join(t.TempDir(), "claude")
		if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'fatal: not signed in' >&2\nexit 3\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		c := startChatEnv(t, notFound, nil)
		c.do(http.MethodPut, "/api/app/provider-path/claude", `{"path":`+quote(script)+`}`).want(t, http.StatusOK, "")
		w, conn := c.connect()
		id := conn.str("session_id")
		w.send(map[string]any{"type": "user_message", "content": "hi"})
		w.until("stored notice", isNotice)
		wantNotice(t, c, id, "not signed in")
	})
}
