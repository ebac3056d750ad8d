// Package claudetest holds test helpers for the agent-sdk provider and its
// fake CLI: the recorded Claude Code transcripts (copied from
// shared/protocols/transcripts/claude, golden data), a loader for them, a
// shape function that reduces a JSON message to its types and key sets, and
// BuildFake, which compiles cmd/fakeclaude for a test binary.
//
// Only tests import it.
package claudetest

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/agent/agenttest"
)

//go:embed testdata/transcripts/*.jsonl
var transcripts embed.FS

// Line is one line of a transcript.
type Line struct {
	DT  float64         `json:"dt"`
	Dir string          `json:"dir"` // "in", "out", "meta" or "stderr"
	Msg json.RawMessage `json:"msg"` // the JSON line, or a JSON string for stderr
}

// Names lists the transcripts, without the .jsonl suffix, sorted.
func Names() []string {
	entries, err := fs.ReadDir(transcripts, "testdata/transcripts")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".jsonl"))
	}
	sort.Strings(names)
	return names
}

// Load reads the transcript name (e.g. "bash_allow").
func Load(name string) ([]Line, error) {
	b, err := transcripts.ReadFile(path.Join("testdata/transcripts", name+".jsonl"))
	if err != nil {
		return nil, fmt.Errorf("load transcript %s: %w", name, err)
	}
	return ParseTranscript(b)
}

// ParseTranscript reads transcript lines, e.g. a FAKECLAUDE_LOG file.
func ParseTranscript(b []byte) ([]Line, error) {
	var lines []Line
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("transcript line %d: %w", n, err)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	return lines, nil
}

// Meta returns the value of key in the transcript's meta lines (argv, pid,
// exit, env), or nil.
func Meta(lines []Line, key string) json.RawMessage {
	for _, l := range lines {
		if l.Dir != "meta" {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(l.Msg, &m) == nil && m[key] != nil {
			return m[key]
		}
	}
	return nil
}

// Dir returns the messages of one direction, in order.
func Dir(lines []Line, dir string) []json.RawMessage {
	var out []json.RawMessage
	for _, l := range lines {
		if l.Dir == dir {
			out = append(out, l.Msg)
		}
	}
	return out
}

// Shape reduces a JSON value to its structure: an object to its sorted
// keys with the shape of each value, an array to the distinct shapes of its
// items, a scalar to its type ("string", "number", "bool", "null"). Objects
// keyed by model name (modelUsage, model_usage_since_last_result) depend on
// the conversation's history, so they become the distinct shapes of their
// entries, like an array.
func Shape(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "invalid"
	}
	return shape(v)
}

// modelKeyed are the objects whose keys are model names.
var modelKeyed = map[string]bool{"modelUsage": true, "model_usage_since_last_result": true}

func shape(v any) string {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			if m, ok := v[k].(map[string]any); ok && modelKeyed[k] {
				entries := make([]any, 0, len(m))
				for _, e := range m {
					entries = append(entries, e)
				}
				parts[i] = k + ":" + shape(entries)
				continue
			}
			parts[i] = k + ":" + shape(v[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		var items []string
		for _, e := range v {
			if s := shape(e); !slices.Contains(items, s) {
				items = append(items, s)
			}
		}
		sort.Strings(items)
		return "[" + strings.Join(items, "|") + "]"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// BuildFake compiles cmd/fakeclaude into dir with the go tool on PATH and
// returns the binary's path. Call it once per test binary.
func BuildFake(ctx context.Context, dir string) (string, error) {
	return agenttest.BuildFake(ctx, dir, "fakeclaude")
}

// MainWithFake is a TestMain for packages that drive the fake: see
// agenttest.MainWithFake.
func MainWithFake(m *testing.M, bin *string) {
	agenttest.MainWithFake(m, "fakeclaude", bin)
}
