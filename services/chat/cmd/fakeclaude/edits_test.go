package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEditThreeWritesThreeFiles: EDIT_THREE 2 writes two files through Write
// tool calls and a third through a Bash command run in the working
// directory, and reports each call with its result.
func TestEditThreeWritesThreeFiles(t *testing.T) {
	t.Parallel()
	argv := []string{"--output-format=stream-json", "--verbose", "--input-format=stream-json", "--permission-prompt-tool=stdio"}
	fc := startFake(t, argv, os.Environ())
	fc.write(t, []byte(`{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize"}}`))
	fc.write(t, []byte(`{"type":"user","message":{"role":"user","content":"EDIT_THREE 2"}}`))
	var tools []string
	var results int
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
			break
		}
	}
	if code := fc.finish(t); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, fc.stderr)
	}
	if got, want := strings.Join(tools, ","), "Write,Write,Bash"; got != want {
		t.Errorf("tool calls %s, want %s", got, want)
	}
	if results != 3 {
		t.Errorf("got %d tool results, want 3", results)
	}
	for _, name := range editThreeFiles {
		b, err := os.ReadFile(filepath.Join(fc.cmd.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(b), name+" version 2\n"; got != want {
			t.Errorf("%s holds %q, want %q", name, got, want)
		}
	}
}
