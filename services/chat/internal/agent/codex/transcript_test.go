package codex

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex/codextest"
)

// TestRecordedTranscripts feeds every line Codex printed in the recorded
// transcripts through the line router, with the turn they belong to
// running: every line is reported, none is lost or misrouted, approvals
// become permission requests with the neutral tool names, and each
// turn/completed ends the turn with one result.
func TestRecordedTranscripts(t *testing.T) {
	for _, name := range codextest.Names() {
		t.Run(name, func(t *testing.T) {
			lines, err := codextest.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			p := New(Config{Options: agent.Options{Cwd: "/home/dev/project", Log: slog.New(slog.DiscardHandler)}})
			pr := &process{p: p, num: 1, pending: map[string]pendingCall{}, perms: map[string]*permEntry{}, launch: launch{Mode: ModeDefault}}
			outs, turns, approvals := 0, 0, 0
			for _, l := range lines {
				if l.Dir != "out" {
					continue
				}
				var m wireMsg
				if err := json.Unmarshal(l.Msg, &m); err != nil {
					t.Fatalf("line %s: %v", l.Msg, err)
				}
				switch {
				case m.Method == "turn/started":
					pr.mu.Lock()
					pr.cur = newTurn(nil)
					pr.mu.Unlock()
					turns++
				case strings.HasSuffix(m.Method, "/requestApproval"):
					approvals++
				}
				outs++
				pr.handleLine(append([]byte(l.Msg), '\n'))
			}
			p.events.Close()
			var results, perms, reported int
			for {
				ev, err := p.events.Next(t.Context())
				if err != nil {
					break
				}
				switch e := ev.(type) {
				case agent.Control:
					reported++
					if e.Type == shapeRequest {
						t.Errorf("server request not taken as an approval: %s", e.Raw)
					}
				case agent.RawOutput:
					t.Errorf("a protocol line became raw output: %s", e.Line)
				case agent.PermissionRequest:
					reported++
					perms++
					var in map[string]any
					_ = json.Unmarshal(e.Input, &in)
					switch e.ToolName {
					case "Bash":
						if in["command"] == "" || in["cwd"] != "/home/dev/project" {
							t.Errorf("Bash input %s", e.Input)
						}
					case "Edit":
						if !strings.Contains(string(e.Input), `"kind":"add"`) {
							t.Errorf("Edit input %s", e.Input)
						}
					default:
						t.Errorf("tool %q", e.ToolName)
					}
				case agent.Message:
					if e.Type == agent.TypeResult {
						results++
					}
				}
			}
			// Responses to requests nobody sent here are reported too.
			if reported != outs {
				t.Errorf("%d lines reported of %d", reported, outs)
			}
			if perms != approvals || results != turns {
				t.Errorf("%d permission requests for %d approvals, %d results for %d turns", perms, approvals, results, turns)
			}
		})
	}
}
