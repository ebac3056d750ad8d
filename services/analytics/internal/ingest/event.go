package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/svc-code/svc-code/services/analytics/internal/store"
)

// Event names on the turns stream.
const (
	EventTurnStarted = "turn_started"
	EventTurnEnded   = "turn_ended"
)

// Limits of an event's fields; past them the event is malformed.
const (
	maxIDLen   = 256
	maxTextLen = 1 << 20 // tools
	// maxPromptLen: a longer prompt (chat takes messages up to 8 MiB) is
	// stored cut there, at a character boundary, rather than losing the
	// turn and its cost; the list routes answer up to 500 prompts.
	maxPromptLen = 1 << 20
	maxNameLen   = 1024 // model, provider, stop_reason, tool name
	maxPathLen   = 4096 // cwd
	maxTools     = 10000
	maxTokens    = 1 << 40 // no turn comes near; 8 million such turns still sum within bigint
	maxDuration  = int64(365 * 24 * time.Hour / time.Millisecond)
)

// MalformedError is an event that can never be recorded: it goes to the
// dead-letter stream.
type MalformedError struct{ Reason string }

func (e *MalformedError) Error() string { return "malformed turn event: " + e.Reason }

func malformed(format string, args ...any) error {
	return &MalformedError{Reason: fmt.Sprintf(format, args...)}
}

// IsMalformed reports whether err is a MalformedError.
func IsMalformed(err error) bool {
	var m *MalformedError
	return errors.As(err, &m)
}

// Project is the project a working directory belongs to: the directory
// itself, cleaned (no trailing slash, no . or .. elements). The git
// top-level is not looked up: analytics may run on another host than the
// session's files, and a directory's repository can change after the turn.
func Project(cwd string) string {
	if cwd == "" {
		return ""
	}
	return filepath.Clean(cwd)
}

// fields reads an entry's values with checks; the first problem is kept.
type fields struct {
	v   map[string]any
	err error
}

func (f *fields) fail(format string, args ...any) {
	if f.err == nil {
		f.err = malformed(format, args...)
	}
}

// str is the field k ("" when absent), at most max bytes of valid UTF-8
// without NUL; required fails when it is absent or empty.
func (f *fields) str(k string, maxLen int, required bool) string {
	raw, ok := f.v[k]
	if !ok || raw == nil {
		if required {
			f.fail("missing %s", k)
		}
		return ""
	}
	s, ok := raw.(string)
	if !ok {
		f.fail("%s: not a string", k)
		return ""
	}
	switch {
	case required && s == "":
		f.fail("empty %s", k)
	case len(s) > maxLen:
		f.fail("%s: longer than %d bytes", k, maxLen)
	case !utf8.ValidString(s):
		f.fail("%s: not UTF-8", k)
	case strings.IndexByte(s, 0) >= 0:
		f.fail("%s: contains NUL", k)
	}
	return s
}

// int64 is the decimal field k within [0, maxVal]; absent is 0 unless
// required.
func (f *fields) int64(k string, maxVal int64, required bool) int64 {
	s := f.str(k, 32, required)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > maxVal {
		f.fail("%s: %q is not a whole number from 0 to %d", k, s, maxVal)
		return 0
	}
	return n
}

// time is the RFC 3339 field k.
func (f *fields) time(k string) time.Time {
	s := f.str(k, 64, true)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		f.fail("%s: %q is not an RFC 3339 time", k, s)
	}
	return t.UTC()
}

// bool is the field k, "true" or "false"; absent is false.
func (f *fields) bool(k string) bool {
	switch s := f.str(k, 8, false); s {
	case "", "false":
		return false
	case "true":
		return true
	default:
		f.fail("%s: %q is not true or false", k, s)
		return false
	}
}

// cost is the non-negative decimal field k, as canonical decimal text.
func (f *fields) cost(k string) string {
	s := f.str(k, 64, false)
	if s == "" {
		return "0"
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v >= 1e10 {
		f.fail("%s: %q is not a cost in USD", k, s)
		return "0"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// tools is the JSON field k: [{name, duration_ms, outcome}].
func (f *fields) tools(k string) []store.Tool {
	s := f.str(k, maxTextLen, false)
	if s == "" {
		return nil
	}
	var tools []store.Tool
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tools); err != nil {
		f.fail("%s: not a JSON list of {name, duration_ms, outcome}: %v", k, err)
		return nil
	}
	if len(tools) > maxTools {
		f.fail("%s: more than %d tool calls", k, maxTools)
		return nil
	}
	for i, t := range tools {
		switch {
		case t.Name == "" || len(t.Name) > maxNameLen || !utf8.ValidString(t.Name) || strings.IndexByte(t.Name, 0) >= 0:
			f.fail("%s[%d]: bad name", k, i)
		case t.Outcome != store.OutcomeOK && t.Outcome != store.OutcomeError && t.Outcome != store.OutcomeDenied:
			f.fail("%s[%d]: outcome %q: want ok, error or denied", k, i, t.Outcome)
		case t.DurationMS != nil && (*t.DurationMS < 0 || *t.DurationMS > maxDuration):
			f.fail("%s[%d]: duration_ms out of range", k, i)
		}
	}
	return tools
}

// cut is the valid UTF-8 s cut to at most n bytes, at a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Parsed is one decoded turn event: exactly one of Start and End is set.
type Parsed struct {
	Start *store.TurnStart
	End   *store.TurnEnd
}

// Parse decodes a turns stream entry's values. An entry it cannot use
// fails with a MalformedError.
func Parse(values map[string]any) (Parsed, error) {
	f := &fields{v: values}
	event := f.str("event", 64, true)
	id := f.str("turn_id", maxIDLen, true)
	session := f.str("session_id", maxIDLen, true)
	number := f.int64("turn_number", math.MaxInt32, false)
	prompt := cut(f.str("prompt", math.MaxInt, false), maxPromptLen)
	model := f.str("model", maxNameLen, false)
	provider := f.str("provider", maxNameLen, false)
	cwd := f.str("cwd", maxPathLen, false)
	if f.err != nil {
		return Parsed{}, f.err
	}
	switch event {
	case EventTurnStarted:
		t := &store.TurnStart{
			ID: id, SessionID: session, TurnNumber: int(number), StartedAt: f.time("started_at"),
			Prompt: prompt, Model: model, Provider: provider, Cwd: cwd, Project: Project(cwd),
		}
		if f.err != nil {
			return Parsed{}, f.err
		}
		return Parsed{Start: t}, nil
	case EventTurnEnded:
		t := &store.TurnEnd{
			ID: id, SessionID: session, TurnNumber: int(number), EndedAt: f.time("ended_at"),
			DurationMS: f.int64("duration_ms", maxDuration, false),
			Prompt:     prompt, Model: model, Provider: provider, Cwd: cwd, Project: Project(cwd),
			CostUSD:             f.cost("cost_usd"),
			InputTokens:         f.int64("input_tokens", maxTokens, false),
			OutputTokens:        f.int64("output_tokens", maxTokens, false),
			CacheReadTokens:     f.int64("cache_read_tokens", maxTokens, false),
			CacheCreationTokens: f.int64("cache_creation_tokens", maxTokens, false),
			ToolCalls:           int(f.int64("tool_calls", math.MaxInt32, false)),
			IsError:             f.bool("is_error"),
			StopReason:          f.str("stop_reason", maxNameLen, false),
			Tools:               f.tools("tools"),
		}
		if f.err != nil {
			return Parsed{}, f.err
		}
		if _, ok := values["tools"]; ok && t.ToolCalls < len(t.Tools) {
			t.ToolCalls = len(t.Tools)
		}
		return Parsed{End: t}, nil
	default:
		return Parsed{}, malformed("event %q: want turn_started or turn_ended", event)
	}
}
