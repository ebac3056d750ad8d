package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent/claude/claudetest"
)

// fakeBin is the fake CLI, built once for this test binary.
var fakeBin string

func TestMain(m *testing.M) { claudetest.MainWithFake(m, &fakeBin) }

// TestTranscriptShapes replays the host side of every recorded transcript
// against the fake and checks that the fake answers with the same lines as
// the real CLI: same count, and per line the same types, subtypes and key
// sets all the way down (claudetest.Shape); and the same exit code.
func TestTranscriptShapes(t *testing.T) {
	for _, name := range claudetest.Names() {
		t.Run(name, func(t *testing.T) {
			switch {
			case name == "old_bash":
				t.Skip("recorded with Claude Code 2.1.197; the fake plays 2.1.330")
			case name == "bypass" && os.Geteuid() != 0:
				t.Skip("the root refusal needs root")
			}
			t.Parallel()
			replay(t, name)
		})
	}
}

func replay(t *testing.T, name string) {
	lines, err := claudetest.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	var argv []string
	if err := json.Unmarshal(claudetest.Meta(lines, "argv"), &argv); err != nil {
		t.Fatalf("argv: %v", err)
	}
	var wantExit int
	if err := json.Unmarshal(claudetest.Meta(lines, "exit"), &wantExit); err != nil {
		t.Fatalf("exit: %v", err)
	}

	env := append(os.Environ(), "FAKECLAUDE_DELAY=10s") // SLOW waits for the interrupt
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "IS_SANDBOX=") })
	if name == "bypass2" {
		env = append(env, "IS_SANDBOX=1") // recorded as root with IS_SANDBOX=1
	}
	if resume := argValue(argv, "--resume"); resume != "" {
		// The resumed session ran its turns with two models (control.jsonl).
		dir := t.TempDir()
		saved := `{"total_cost_usd":0.000889,"models":{"claude-sonnet-4-5":{"in":42,"out":17,"cost":0.000381},"claude-opus-5-5":{"in":42,"out":17,"cost":0.000508}}}`
		if err := os.WriteFile(dir+"/"+resume+".json", []byte(saved), 0o600); err != nil {
			t.Fatal(err)
		}
		env = append(env, "FAKECLAUDE_STATE_DIR="+dir)
	}
	fc := startFake(t, argv, env)

	var wantOut []json.RawMessage
	var wantStderr []string
	var lastRequestID string
	for _, l := range lines {
		switch l.Dir {
		case "out":
			wantOut = append(wantOut, l.Msg)
		case "stderr":
			var s string
			_ = json.Unmarshal(l.Msg, &s)
			wantStderr = append(wantStderr, s)
		case "in":
			// Write when the fake has printed what the CLI had printed
			// by then.
			for len(fc.got) < len(wantOut) {
				fc.next(t)
			}
			for i := len(fc.got) - 1; i >= 0; i-- {
				if typeOf(fc.got[i]) == "control_request" {
					var r struct {
						RequestID string `json:"request_id"`
					}
					_ = json.Unmarshal(fc.got[i], &r)
					lastRequestID = r.RequestID
					break
				}
			}
			fc.write(t, rewriteAnswer(t, l.Msg, lastRequestID))
		}
	}
	exit := fc.finish(t)

	if len(fc.got) != len(wantOut) {
		t.Errorf("got %d stdout lines, want %d:\n%s", len(fc.got), len(wantOut), summary(fc.got))
	}
	for i := range min(len(fc.got), len(wantOut)) {
		if claudetest.Shape(fc.got[i]) != claudetest.Shape(wantOut[i]) {
			t.Errorf("line %d (%s) shape differs: %s", i+1, typeOf(wantOut[i]), shapeDiff(fc.got[i], wantOut[i]))
		}
	}
	if exit != wantExit {
		t.Errorf("exit code %d, want %d (stderr %q)", exit, wantExit, fc.stderr.String())
	}
	for _, s := range wantStderr {
		if !strings.Contains(fc.stderr.String(), s) {
			t.Errorf("stderr %q lacks %q", fc.stderr.String(), s)
		}
	}
	if resume := argValue(argv, "--resume"); resume != "" {
		for _, g := range fc.got {
			var m struct {
				SessionID string `json:"session_id"`
			}
			if json.Unmarshal(g, &m) == nil && m.SessionID != "" && m.SessionID != resume {
				t.Errorf("session_id %q after --resume=%s", m.SessionID, resume)
			}
		}
	}
}

// rewriteAnswer points a recorded answer to a can_use_tool request at the
// fake's request id.
func rewriteAnswer(t *testing.T, msg json.RawMessage, requestID string) []byte {
	var m map[string]any
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatal(err)
	}
	if m["type"] != "control_response" {
		return msg
	}
	m["response"].(map[string]any)["request_id"] = requestID
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func argValue(argv []string, flag string) string {
	for _, a := range argv {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

func typeOf(raw []byte) string {
	var m struct {
		Type    string `json:"type"`
		Subtype string `json:"subtype"`
	}
	_ = json.Unmarshal(raw, &m)
	if m.Subtype != "" {
		return m.Type + "/" + m.Subtype
	}
	return m.Type
}

func summary(lines []json.RawMessage) string {
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "  %d %s\n", i+1, typeOf(l))
	}
	return b.String()
}

// shapeDiff names the paths where the shapes differ.
func shapeDiff(got, want []byte) string {
	var g, w any
	_ = json.Unmarshal(got, &g)
	_ = json.Unmarshal(want, &w)
	var out []string
	diffValues("", g, w, &out)
	slices.Sort(out)
	return strings.Join(out, "; ")
}

func diffValues(path string, g, w any, out *[]string) {
	gm, gok := g.(map[string]any)
	wm, wok := w.(map[string]any)
	if gok && wok {
		for k, wv := range wm {
			if gv, ok := gm[k]; ok {
				diffValues(path+"."+k, gv, wv, out)
			} else {
				*out = append(*out, "missing "+path+"."+k)
			}
		}
		for k := range gm {
			if _, ok := wm[k]; !ok {
				*out = append(*out, "extra "+path+"."+k)
			}
		}
		return
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if gs, ws := claudetest.Shape(gb), claudetest.Shape(wb); gs != ws {
		*out = append(*out, fmt.Sprintf("%s: got %s want %s", path, gs, ws))
	}
}

// fakeRun is a running fake with its stdout read line by line.
type fakeRun struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	got    []json.RawMessage
	stderr *bytes.Buffer
}

func startFake(t *testing.T, argv, env []string) *fakeRun {
	t.Helper()
	cmd := exec.Command(fakeBin, argv...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	fc := &fakeRun{cmd: cmd, stdin: stdin, lines: make(chan []byte, 1024), stderr: &bytes.Buffer{}}
	cmd.Stderr = fc.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	go func() {
		defer close(fc.lines)
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				fc.lines <- bytes.TrimSpace(line)
			}
			if err != nil {
				return
			}
		}
	}()
	return fc
}

func (fc *fakeRun) next(t *testing.T) {
	t.Helper()
	select {
	case l, ok := <-fc.lines:
		if !ok {
			t.Fatalf("fake closed stdout after %d lines:\n%s\nstderr: %s", len(fc.got), summary(fc.got), fc.stderr)
		}
		fc.got = append(fc.got, l)
	case <-time.After(10 * time.Second):
		t.Fatalf("no line from the fake after %d lines:\n%s", len(fc.got), summary(fc.got))
	}
}

func (fc *fakeRun) write(t *testing.T, b []byte) {
	t.Helper()
	if _, err := fc.stdin.Write(append(b, '\n')); err != nil && !errors.Is(err, os.ErrClosed) {
		t.Logf("write to fake: %v", err) // it may have exited (bypass as root)
	}
}

// finish closes stdin, reads the rest and returns the exit code.
func (fc *fakeRun) finish(t *testing.T) int {
	t.Helper()
	_ = fc.stdin.Close()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-fc.lines:
			if ok {
				fc.got = append(fc.got, l)
				continue
			}
		case <-timeout:
			t.Fatalf("fake did not finish:\n%s", summary(fc.got))
		}
		break
	}
	err := fc.cmd.Wait()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode()
	}
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return 0
}

func TestParseArgs(t *testing.T) {
	base := []string{"--output-format=stream-json", "--verbose", "--input-format=stream-json"}
	tests := []struct {
		name    string
		args    []string
		want    options
		wantErr string
	}{
		{
			name: "equals form as the provider builds it",
			args: append(slices.Clone(base), "--model=m1", "--permission-prompt-tool=stdio", "--permission-mode=acceptEdits", "--resume=abc"),
			want: options{permissionMode: "acceptEdits", model: "m1", permissionPromptTool: "stdio", resume: "abc"},
		},
		{
			name: "two-token form as the transcripts recorded it",
			args: []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--permission-prompt-tool", "stdio", "--permission-mode", "default", "--model", "claude-sonnet-4-5"},
			want: options{permissionMode: "default", model: "claude-sonnet-4-5", permissionPromptTool: "stdio"},
		},
		{
			name: "later flag wins, bypass flags",
			args: append(slices.Clone(base), "--permission-mode", "default", "--permission-mode", "bypassPermissions", "--allow-dangerously-skip-permissions"),
			want: options{permissionMode: "bypassPermissions", allowDangerous: true},
		},
		{
			name: "resume without a value does not eat the next flag",
			args: append(slices.Clone(base), "--resume", "--include-partial-messages", "-p"),
			want: options{permissionMode: "default", includePartial: true, print: true},
		},
		{name: "missing verbose", args: []string{"--output-format=stream-json", "--input-format=stream-json"}, wantErr: "requires --verbose"},
		{name: "text output", args: []string{"--output-format=text", "--verbose", "--input-format=stream-json"}, wantErr: "only --output-format=stream-json"},
		{name: "bad mode", args: append(slices.Clone(base), "--permission-mode=yolo"), wantErr: "invalid permission mode"},
		{name: "prompt argument", args: append(slices.Clone(base), "hello"), wantErr: "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.outputFormat, got.inputFormat, got.verbose, got.ignored = "", "", false, nil
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestKeyword(t *testing.T) {
	tests := []struct {
		text     string
		wantWord string
		wantArg  int
	}{
		{"SLOW 5", "SLOW", 5},
		{"  RUN_BASH please", "RUN_BASH", 0},
		{"/compact", "/compact", 0},
		{"", "", 0},
		{"CRASH 7 now", "CRASH", 7},
	}
	for _, tt := range tests {
		word, arg := keyword(tt.text)
		if word != tt.wantWord || arg != tt.wantArg {
			t.Errorf("keyword(%q) = %q, %d; want %q, %d", tt.text, word, arg, tt.wantWord, tt.wantArg)
		}
	}
}

// playTurn sends one prompt to a fresh fake and returns the texts of the
// assistant messages up to the result, and the time from the first to the
// last of them.
func playTurn(t *testing.T, prompt string, env []string) ([]string, time.Duration) {
	t.Helper()
	argv := []string{"--output-format=stream-json", "--verbose", "--input-format=stream-json", "--permission-prompt-tool=stdio"}
	fc := startFake(t, argv, env)
	fc.write(t, []byte(`{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize"}}`))
	msg, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}})
	// The time from the prompt to the last message: it holds every pause the
	// fake made, however late this reader saw the first message (measured
	// between the first and last receipt, a late first read shortened it).
	start := time.Now()
	fc.write(t, msg)
	var texts []string
	var last time.Time
	for {
		fc.next(t)
		line := fc.got[len(fc.got)-1]
		switch typeOf(line) {
		case "assistant":
			var m struct {
				Message struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"message"`
			}
			if err := json.Unmarshal(line, &m); err != nil || len(m.Message.Content) != 1 {
				t.Fatalf("assistant line %s: %v", line, err)
			}
			texts = append(texts, m.Message.Content[0].Text)
			last = time.Now()
		case "result/success":
			if code := fc.finish(t); code != 0 {
				t.Fatalf("exit %d, stderr %s", code, fc.stderr)
			}
			return texts, last.Sub(start)
		case "result":
			t.Fatalf("result without success: %s", line)
		}
	}
}

func TestCodeScriptStreamsAFencedBlock(t *testing.T) {
	t.Parallel()
	texts, _ := playTurn(t, "CODE", append(os.Environ(), "FAKECLAUDE_DELAY=1ms"))
	if len(texts) != len(codeChunks) {
		t.Fatalf("got %d assistant messages, want %d: %q", len(texts), len(codeChunks), texts)
	}
	whole := strings.Join(texts, "")
	want := "```go\nfunc add(a, b int) int {\n\treturn a + b\n}\n```"
	if !strings.Contains(whole, want) {
		t.Errorf("reply %q lacks the fenced block %q", whole, want)
	}
	if !strings.Contains(texts[1], want) {
		t.Errorf("the second message should hold the whole fenced block: %q", texts)
	}
}

func TestFloodScriptPace(t *testing.T) {
	t.Parallel()
	// FAKECLAUDE_DELAY does not change FLOOD's pace.
	texts, took := playTurn(t, "FLOOD 6", append(os.Environ(), "FAKECLAUDE_DELAY=1ms"))
	if len(texts) != 6 {
		t.Fatalf("got %d assistant messages, want 6: %q", len(texts), texts)
	}
	if texts[5] != "Line 6 of 6: the agent keeps **talking**, with `code` now and then.\n" {
		t.Errorf("last chunk %q", texts[5])
	}
	if least := 5 * floodDelay; took < least {
		t.Errorf("6 chunks took %v, want at least %v (20 ms apart)", took, least)
	}
}
