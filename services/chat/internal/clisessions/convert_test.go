package clisessions

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/agent/claude"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// The fixtures are files the real CLIs wrote (Claude Code 2.1.330 with
// -p, then -p --resume; Codex 0.169.0 with exec, then exec resume), both
// against cmd/fakemodel: a text turn, then a turn running a shell command.
const (
	claudeFixtureID = "4f76bc7a-af23-4a3d-9b3e-05f8f0f1c03b"
	codexFixtureID  = "01a21b7b-d8f3-7ee2-9179-0854450fbf7b"
)

func fixtureFinder() *Finder {
	return &Finder{Roots: Roots{Claude: "testdata/claude/projects", Codex: "testdata/codex/sessions"}}
}

// converted is every line of a fixture, converted.
func converted(t *testing.T, provider, id string) []Record {
	t.Helper()
	e, err := fixtureFinder().Find(provider, id)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(e.Path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Record
	for i, line := range bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")) {
		r := Convert(provider, id, e.File, line, int64(i+1))
		if r.Kind == store.KindNotice {
			t.Errorf("line %d of %s: %s", i+1, e.File, r.Payload)
		}
		if !json.Valid(r.Payload) {
			t.Errorf("line %d: payload is not JSON: %s", i+1, r.Payload)
		}
		out = append(out, r)
	}
	return out
}

type payload struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Content string `json:"content"` // a prompt's
	Message struct {
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			Name      string          `json:"name"`
			ID        string          `json:"id"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   any             `json:"content"`
			IsError   bool            `json:"is_error"`
		} `json:"content"`
	} `json:"message"`
	Result       string  `json:"result"`
	TotalCostUSD float64 `json:"total_cost_usd"`
	RecordType   string  `json:"record_type"`
}

func decode(t *testing.T, r Record) payload {
	t.Helper()
	var p payload
	if err := json.Unmarshal(r.Payload, &p); err != nil {
		t.Fatalf("%s: %v", r.Payload, err)
	}
	return p
}

// summary is the conversation a transcript shows: prompts, texts, tool
// calls and results, results, in order.
func summary(t *testing.T, recs []Record) []string {
	t.Helper()
	var out []string
	for _, r := range recs {
		p := decode(t, r)
		switch {
		case r.Kind == store.KindUserPrompt:
			out = append(out, "prompt: "+p.Content)
		case p.Type == "assistant" || p.Type == "user":
			for _, c := range p.Message.Content {
				switch c.Type {
				case "text":
					out = append(out, "text: "+c.Text)
				case "tool_use":
					var in struct {
						Command string `json:"command"`
					}
					_ = json.Unmarshal(c.Input, &in)
					out = append(out, "tool: "+c.Name+" "+in.Command+" #"+c.ID)
				case "tool_result":
					s, _ := c.Content.(string)
					out = append(out, "result of #"+c.ToolUseID+": "+lastLine(s))
				}
			}
		case p.Type == "result":
			out = append(out, "end")
		}
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func TestConvertClaudeCodeFile(t *testing.T) {
	recs := converted(t, protocol.CLIProviderClaude, claudeFixtureID)
	want := []string{
		"prompt: Say hello", "text: Hello from the fake model.", "end",
		"prompt: RUN_BASH please", "text: I will run a command.",
		"tool: Bash echo hello-from-bash > bash_out.txt && cat bash_out.txt #toolu_fake0002",
		"result of #toolu_fake0002: hello-from-bash", "text: Tool finished: hello-from-bash", "end",
	}
	if got := summary(t, recs); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("conversation:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	raw, _ := os.ReadFile(filepath.Join("testdata/claude/projects/-tmp-cliwork-proj", claudeFixtureID+".jsonl"))
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	for i, r := range recs {
		p := decode(t, r)
		switch {
		case p.Type == "assistant" || (p.Type == "user" && r.Kind == store.KindAgent):
			// The conversation's records go through as written, as the live
			// provider's stream-json messages do (its parser takes them).
			if !bytes.Equal(r.Payload, lines[i]) {
				t.Errorf("line %d: payload changed", i+1)
			}
			if m, ok := claude.Parse(r.Payload)[0].(agent.Message); !ok || m.Type != p.Type {
				t.Errorf("line %d: the provider's parser reads %#v", i+1, claude.Parse(r.Payload)[0])
			}
		case p.Type == protocol.PayloadCLIMeta:
			var rec struct {
				Record json.RawMessage `json:"record"`
			}
			_ = json.Unmarshal(r.Payload, &rec)
			if !bytes.Equal(rec.Record, lines[i]) {
				t.Errorf("line %d: cli_meta record differs from the line", i+1)
			}
		case p.Type == protocol.PayloadRawRecord:
			t.Errorf("line %d: a record of the real CLI is unknown: %.200s", i+1, lines[i])
		}
		if r.Time.IsZero() && p.Type != protocol.PayloadCLIMeta && p.Type != "result" {
			t.Errorf("line %d: no time", i+1)
		}
	}
	if p := decode(t, recs[len(recs)-1]); p.Type != "result" || p.TotalCostUSD <= 0 {
		t.Errorf("last line (cost-state) gives %s, want a result with the run's cost", recs[len(recs)-1].Payload)
	}
}

func TestConvertCodexRollout(t *testing.T) {
	recs := converted(t, protocol.CLIProviderCodex, codexFixtureID)
	want := []string{
		"prompt: Say hello", "text: Hello from the fake model.", "end",
		"prompt: RUN_SHELL please",
		"tool: Bash echo hello-from-shell > shell_out.txt && cat shell_out.txt #call_fake0005",
		"result of #call_fake0005: hello-from-shell", "text: Tool finished: hello-from-shell", "end",
	}
	if got := summary(t, recs); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("conversation:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	first := decode(t, recs[0])
	if first.Type != "system" || first.Subtype != "init" {
		t.Errorf("session_meta gives %s, want system/init", recs[0].Payload)
	}
	var init struct {
		ThreadID string `json:"thread_id"`
		Version  string `json:"codex_version"`
		Cwd      string `json:"cwd"`
	}
	_ = json.Unmarshal(recs[0].Payload, &init)
	if init.ThreadID != codexFixtureID || init.Version != "0.169.0" || init.Cwd != "/tmp/cliwork/xproj" {
		t.Errorf("init %+v", init)
	}
	for i, r := range recs {
		p := decode(t, r)
		if p.Type == protocol.PayloadRawRecord {
			t.Errorf("line %d: a record of the real CLI is unknown: %s", i+1, r.Payload)
		}
		for _, c := range p.Message.Content {
			if c.Type == "tool_result" && c.IsError {
				t.Errorf("line %d: exit code 0 reads as an error", i+1)
			}
		}
	}
}

func TestConvertUnknownRecordsKeptRaw(t *testing.T) {
	for _, tc := range []struct{ provider, line string }{
		{protocol.CLIProviderClaude, `{"type":"hologram","beam":[1,2,3],"timestamp":"2026-01-02T03:04:05Z"}`},
		{protocol.CLIProviderClaude, `{"no_type":true}`},
		{protocol.CLIProviderClaude, `[1,2,{"a":"b"}]`},
		{protocol.CLIProviderClaude, `"just a string"`},
		{protocol.CLIProviderCodex, `{"timestamp":"2026-01-02T03:04:05Z","type":"hologram","payload":{"x":1}}`},
		{protocol.CLIProviderCodex, `{"timestamp":"2026-01-02T03:04:05Z","type":"event_msg","payload":{"type":"brand_new_event","x":1}}`},
		{protocol.CLIProviderCodex, `{"timestamp":"2026-01-02T03:04:05Z","type":"response_item","payload":{"type":"brand_new_item","x":1}}`},
		{protocol.CLIProviderCodex, `{"type":"no_payload"}`},
	} {
		r := Convert(tc.provider, "s1", "p/s1.jsonl", []byte(tc.line+"\n"), 7)
		var p struct {
			Type   string          `json:"type"`
			Record json.RawMessage `json:"record"`
		}
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if r.Kind != store.KindAgent || p.Type != protocol.PayloadRawRecord || string(p.Record) != tc.line {
			t.Errorf("%s %s: got %s %s, want raw_record with the line as written", tc.provider, tc.line, r.Kind, r.Payload)
		}
	}
}

func TestConvertParseErrorNamesFileAndLine(t *testing.T) {
	for _, line := range []string{`{"type":"user","message":{"content":"cut off`, "not json at all", "", "  \r"} {
		r := Convert(protocol.CLIProviderClaude, "s1", "-home-me-proj/s1.jsonl", []byte(line), 42)
		var p protocol.CLIParseError
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if r.Kind != store.KindNotice || p.Type != protocol.PayloadParseError || p.File != "-home-me-proj/s1.jsonl" ||
			p.Line != 42 || p.Error == "" || p.Role != "notice" ||
			!strings.Contains(p.Content, "-home-me-proj/s1.jsonl, line 42") {
			t.Errorf("%q: got %s %s", line, r.Kind, r.Payload)
		}
	}
	// A long broken line: the text is cut, and stays valid UTF-8.
	long := "{" + strings.Repeat("é", 300)
	r := Convert(protocol.CLIProviderCodex, "s1", "f.jsonl", []byte(long), 1)
	var p protocol.CLIParseError
	_ = json.Unmarshal(r.Payload, &p)
	if len(p.Text) > 200 || !strings.HasPrefix(long, p.Text) {
		t.Errorf("text %q", p.Text)
	}
}

func TestConvertCodexToolShapes(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** Update File: a.go\n@@\n-x\n+y\n*** End Patch"
	for _, tc := range []struct {
		line, want string
	}{
		{
			`{"type":"response_item","payload":{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":` + quote(patch) + `}}`,
			`"input":{"changes":[{"diff":"hello","kind":"add","path":"hello.txt"},{"diff":"@@\n-x\n+y","kind":"update","path":"a.go"}]},"name":"Edit"`,
		},
		{
			`{"type":"response_item","payload":{"type":"function_call","call_id":"c2","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"ls -la\"],\"workdir\":\"/w\"}"}}`,
			`"input":{"command":"ls -la","cwd":"/w"},"name":"Bash"`,
		},
		{
			`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":"{\"output\":\"boom\",\"metadata\":{\"exit_code\":2}}"}}`,
			`"content":"boom","is_error":true,"tool_use_id":"c2"`,
		},
		{
			`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c3","output":"Process exited with code 1\nOutput:\nno"}}`,
			`"is_error":true,"tool_use_id":"c3"`,
		},
		{
			`{"type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"thinking hard"}]}}`,
			`{"thinking":"thinking hard","type":"thinking"}`,
		},
		{
			`{"type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}`,
			`"is_error":true`,
		},
	} {
		r := Convert(protocol.CLIProviderCodex, "t1", "f.jsonl", []byte(tc.line), 1)
		if !strings.Contains(string(r.Payload), tc.want) {
			t.Errorf("%s\n gives %s\n want it to hold %s", tc.line, r.Payload, tc.want)
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
