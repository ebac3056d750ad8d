package claude

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/agent/claude/claudetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestParseTranscripts parses every stdout line of every recorded
// transcript: each gives at least one event, the pass-through event keeps
// the line byte for byte, and the derived events match the golden file.
func TestParseTranscripts(t *testing.T) {
	t.Parallel()
	for _, name := range claudetest.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			lines, err := claudetest.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			var golden bytes.Buffer
			for i, l := range lines {
				if l.Dir != "out" {
					continue
				}
				events := Parse(l.Msg)
				if len(events) == 0 {
					t.Fatalf("line %d gave no event", i+1)
				}
				checkLossless(t, i+1, l.Msg, events[0])
				fmt.Fprintf(&golden, "%d %s\n", i+1, summarize(t, events))
			}
			checkGolden(t, filepath.Join("testdata", "golden", name+".events"), golden.Bytes())
		})
	}
}

// checkLossless checks that the first event carries the whole line.
func checkLossless(t *testing.T, n int, line []byte, e agent.Event) {
	t.Helper()
	var env struct {
		Type      string          `json:"type"`
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Request   json.RawMessage `json:"request"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		t.Fatalf("line %d: %v", n, err)
	}
	var raw json.RawMessage
	switch e := e.(type) {
	case agent.Message:
		if e.Type != env.Type || e.Subtype != env.Subtype {
			t.Errorf("line %d: message %s/%s, want %s/%s", n, e.Type, e.Subtype, env.Type, env.Subtype)
		}
		raw = e.Raw
	case agent.Control:
		raw = e.Raw
	case agent.PermissionRequest:
		var req struct {
			Input       json.RawMessage   `json:"input"`
			Suggestions []json.RawMessage `json:"permission_suggestions"`
		}
		if err := json.Unmarshal(env.Request, &req); err != nil {
			t.Fatal(err)
		}
		if e.RequestID != env.RequestID || !bytes.Equal(e.Input, req.Input) || !reflect.DeepEqual(e.Suggestions, req.Suggestions) {
			t.Errorf("line %d: permission request %+v does not carry the request's id, input and suggestions", n, e)
		}
		raw = e.Raw
	case agent.PermissionRetired:
		if e.RequestID != env.RequestID || env.Type != "control_cancel_request" {
			t.Errorf("line %d: %+v from %s", n, e, env.Type)
		}
		return // the id is all a cancel carries
	default:
		t.Fatalf("line %d: first event is %T", n, e)
	}
	if !bytes.Equal(raw, bytes.TrimSpace(line)) {
		t.Errorf("line %d: raw differs from the line", n)
	}
}

// summarize renders events for the golden files, raw JSON replaced by its
// length.
func summarize(t *testing.T, events []agent.Event) string {
	t.Helper()
	parts := make([]string, len(events))
	for i, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if raw := rawOf(e); raw != nil {
			m["raw"] = fmt.Sprintf("%d bytes", len(raw))
		}
		m["kind"] = e.Kind()
		b, err = json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		parts[i] = string(b)
	}
	return strings.Join(parts, " ")
}

func rawOf(e agent.Event) json.RawMessage {
	switch e := e.(type) {
	case agent.Message:
		return e.Raw
	case agent.Control:
		return e.Raw
	case agent.PermissionRequest:
		return e.Raw
	}
	return nil
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update after checking):\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestParseLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want []agent.Event
	}{
		{name: "empty", line: "\n", want: nil},
		{name: "debug text", line: "[SandboxDebug] hello\n", want: []agent.Event{agent.RawOutput{Line: "[SandboxDebug] hello"}}},
		{name: "broken JSON", line: `{"type":"assistant"` + "\r\n", want: []agent.Event{agent.RawOutput{Line: `{"type":"assistant"`}}},
		{name: "JSON array", line: `[1,2]`, want: []agent.Event{agent.RawOutput{Line: `[1,2]`}}},
		{
			name: "unknown kind passes through",
			line: `{"type":"brand_new","subtype":"x","session_id":"s","uuid":"u","extra":{"a":1}}`,
			want: []agent.Event{agent.Message{Type: "brand_new", Subtype: "x", SessionID: "s", UUID: "u", Raw: json.RawMessage(`{"type":"brand_new","subtype":"x","session_id":"s","uuid":"u","extra":{"a":1}}`)}},
		},
		{
			name: "wrong field types are tolerated",
			line: `{"type":"result","subtype":"success","is_error":"yes","total_cost_usd":0.5,"usage":{"input_tokens":3}}`,
			want: []agent.Event{
				agent.Message{Type: "result", Subtype: "success", Raw: json.RawMessage(`{"type":"result","subtype":"success","is_error":"yes","total_cost_usd":0.5,"usage":{"input_tokens":3}}`)},
				agent.TurnEnded{Subtype: "success", CostUSD: 0.5, TotalCostUSD: 0.5, Usage: agent.Usage{InputTokens: 3}},
			},
		},
		{
			name: "auto compaction boundary",
			line: `{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto","pre_tokens":190000,"post_tokens":3000}}`,
			want: []agent.Event{
				agent.Message{Type: "system", Subtype: "compact_boundary", Raw: json.RawMessage(`{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto","pre_tokens":190000,"post_tokens":3000}}`)},
				agent.Compaction{Phase: agent.CompactionBoundary, Trigger: "auto", PreTokens: 190000, PostTokens: 3000},
			},
		},
		{
			name: "other control request",
			line: `{"type":"control_request","request_id":"r1","request":{"subtype":"hook_callback"}}`,
			want: []agent.Event{agent.Control{Type: "control_request", Subtype: "hook_callback", RequestID: "r1", Raw: json.RawMessage(`{"type":"control_request","request_id":"r1","request":{"subtype":"hook_callback"}}`)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Parse([]byte(tt.line))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q)\n got %#v\nwant %#v", tt.line, got, tt.want)
			}
		})
	}
}

// FuzzParse: any line gives events without panicking, and every non-blank
// line gives at least one.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"text", "bash_allow", "perm_interrupt", "compact", "fail"} {
		lines, err := claudetest.Load(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range claudetest.Dir(lines, "out") {
			f.Add([]byte(l))
		}
	}
	f.Add([]byte("[SandboxDebug] x"))
	f.Add([]byte(`{"type":"result","usage":null,"model_usage_since_last_result":{"m":{"costUSD":"x"}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		events := Parse(line)
		if len(bytes.TrimSpace(line)) > 0 && len(events) == 0 {
			t.Fatalf("no event for %q", line)
		}
	})
}
