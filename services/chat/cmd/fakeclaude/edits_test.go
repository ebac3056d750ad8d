package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// editTurn reads the fake's lines up to the turn's result: the names of the
// tool calls, and the tool results (failing on an error result).
func editTurn(t *testing.T, fc *fakeRun) (tools []string, results int) {
	t.Helper()
	for {
		fc.next(t)
		line := fc.got[len(fc.got)-1]
		var m struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		_ = json.Unmarshal(line, &m)
		var blocks []struct {
			Type    string `json:"type"`
			Name    string `json:"name"`
			IsError bool   `json:"is_error"`
		}
		_ = json.Unmarshal(m.Message.Content, &blocks)
		for _, b := range blocks {
			switch b.Type {
			case "tool_use":
				tools = append(tools, b.Name)
			case "tool_result":
				results++
				if b.IsError {
					t.Errorf("tool result is an error: %s", line)
				}
			}
		}
		if typ := typeOf(line); strings.HasPrefix(typ, "result") {
			if typ != "result/success" {
				t.Fatalf("result %s", line)
			}
			return tools, results
		}
	}
}

func startEditTurn(t *testing.T, prompt string) *fakeRun {
	t.Helper()
	argv := []string{"--output-format=stream-json", "--verbose", "--input-format=stream-json", "--permission-prompt-tool=stdio"}
	fc := startFake(t, argv, os.Environ())
	fc.write(t, []byte(`{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize"}}`))
	msg, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}})
	fc.write(t, msg)
	return fc
}

func checkEditFiles(t *testing.T, dir, version string) {
	t.Helper()
	for _, name := range editThreeFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(b), name+" version "+version+"\n"; got != want {
			t.Errorf("%s holds %q, want %q", name, got, want)
		}
	}
}

// TestEditThreeWritesThreeFiles: EDIT_THREE 2 writes two files through Write
// tool calls and a third through a Bash command run in the working
// directory, and reports each call with its result.
func TestEditThreeWritesThreeFiles(t *testing.T) {
	t.Parallel()
	fc := startEditTurn(t, "EDIT_THREE 2")
	tools, results := editTurn(t, fc)
	if code := fc.finish(t); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, fc.stderr)
	}
	if got, want := strings.Join(tools, ","), "Write,Write,Bash"; got != want {
		t.Errorf("tool calls %s, want %s", got, want)
	}
	if results != 3 {
		t.Errorf("got %d tool results, want 3", results)
	}
	checkEditFiles(t, fc.cmd.Dir, "2")
}

// TestEditThreeWaitsForItsGate: with after=<path>, nothing is written until
// the file exists.
func TestEditThreeWaitsForItsGate(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	fc := startEditTurn(t, "EDIT_THREE 3 after="+gate)
	// The turn's first text comes before the wait: no file may exist yet.
	for typeOf(lastLine(fc)) != "assistant" {
		fc.next(t)
	}
	for _, name := range editThreeFiles {
		if _, err := os.Stat(filepath.Join(fc.cmd.Dir, name)); !os.IsNotExist(err) {
			t.Fatalf("%s exists before the gate opened (%v)", name, err)
		}
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if tools, _ := editTurn(t, fc); len(tools) != 3 {
		t.Errorf("tool calls %v, want 3", tools)
	}
	checkEditFiles(t, fc.cmd.Dir, "3")
}

func lastLine(fc *fakeRun) []byte {
	if len(fc.got) == 0 {
		return nil
	}
	return fc.got[len(fc.got)-1]
}

func TestAfterGate(t *testing.T) {
	for prompt, want := range map[string]string{
		"EDIT_THREE 1":                    "",
		"EDIT_THREE 1 after=/tmp/x/go":    "/tmp/x/go",
		"EDIT_THREE after=/g please":      "/g",
		"EDIT_THREE 2 before=/a after=/b": "/b",
	} {
		if got := afterGate(prompt); got != want {
			t.Errorf("afterGate(%q) = %q, want %q", prompt, got, want)
		}
	}
}
