package ingest

import (
	"strings"
	"testing"
	"time"
)

func TestProject(t *testing.T) {
	for cwd, want := range map[string]string{
		"": "", "/home/u/proj": "/home/u/proj", "/home/u/proj/": "/home/u/proj", "/home/u/a/../proj/.": "/home/u/proj",
	} {
		if got := Project(cwd); got != want {
			t.Errorf("Project(%q) = %q, want %q", cwd, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	at := "2026-03-01T10:00:00.5Z"
	base := func(event string, kv ...string) map[string]any {
		v := map[string]any{"event": event, "session_id": "s", "turn_id": "s:1", "started_at": at, "ended_at": at}
		for i := 0; i+1 < len(kv); i += 2 {
			v[kv[i]] = kv[i+1]
		}
		return v
	}
	tests := []struct {
		name    string
		values  map[string]any
		wantErr string // "" for success
	}{
		{"start", base("turn_started", "turn_number", "3", "cwd", "/p/"), ""},
		{"end, old chat (no tools, cwd, provider)", base("turn_ended", "cost_usd", "0.5", "tool_calls", "2"), ""},
		{"end with tools", base("turn_ended", "tools", `[{"name":"Bash","duration_ms":5,"outcome":"ok"}]`), ""},
		{"unknown event", base("turn_paused"), "event"},
		{"missing session", map[string]any{"event": "turn_started", "turn_id": "s:1", "started_at": at}, "session_id"},
		{"empty turn id", base("turn_started", "turn_id", ""), "turn_id"},
		{"non-string value", map[string]any{"event": "turn_started", "session_id": "s", "turn_id": 5, "started_at": at}, "turn_id"},
		{"bad start time", base("turn_started", "started_at", "2026-03-01"), "started_at"},
		{"missing end time", map[string]any{"event": "turn_ended", "session_id": "s", "turn_id": "s:1"}, "ended_at"},
		{"negative tokens", base("turn_ended", "output_tokens", "-1"), "output_tokens"},
		{"fraction tokens", base("turn_ended", "input_tokens", "1.5"), "input_tokens"},
		{"NaN cost", base("turn_ended", "cost_usd", "NaN"), "cost_usd"},
		{"huge cost", base("turn_ended", "cost_usd", "1e12"), "cost_usd"},
		{"bad bool", base("turn_ended", "is_error", "1"), "is_error"},
		{"bad turn number", base("turn_started", "turn_number", "x"), "turn_number"},
		{"tools unknown field", base("turn_ended", "tools", `[{"name":"Bash","outcome":"ok","x":1}]`), "tools"},
		{"tools no name", base("turn_ended", "tools", `[{"outcome":"ok"}]`), "tools"},
		{"tools bad outcome", base("turn_ended", "tools", `[{"name":"a","outcome":"meh"}]`), "tools"},
		{"tools negative duration", base("turn_ended", "tools", `[{"name":"a","duration_ms":-1,"outcome":"ok"}]`), "tools"},
		{"NUL", base("turn_started", "prompt", "a\x00"), "prompt"},
		{"long prompt: cut, not refused", base("turn_started", "prompt", strings.Repeat("a", maxPromptLen+1)), ""},
		{"long tools", base("turn_ended", "tools", "["+strings.Repeat(" ", maxTextLen)+"]"), "tools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.values)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if (p.Start == nil) == (p.End == nil) {
					t.Fatalf("Parse = %+v: want exactly one of Start and End", p)
				}
				return
			}
			if !IsMalformed(err) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse error %v, want a MalformedError about %s", err, tt.wantErr)
			}
		})
	}

	p, err := Parse(base("turn_ended", "cost_usd", "0.0123", "duration_ms", "2500", "tools",
		`[{"name":"Bash","duration_ms":5,"outcome":"ok"},{"name":"Edit","duration_ms":null,"outcome":"denied"}]`,
		"tool_calls", "1", "cwd", "/p/x/", "turn_number", "4"))
	if err != nil {
		t.Fatal(err)
	}
	e := p.End
	wantAt, _ := time.Parse(time.RFC3339Nano, at)
	if e.CostUSD != "0.0123" || e.DurationMS != 2500 || e.ToolCalls != 2 || len(e.Tools) != 2 || e.Tools[1].DurationMS != nil ||
		e.Project != "/p/x" || e.Cwd != "/p/x/" || e.TurnNumber != 4 || !e.EndedAt.Equal(wantAt) {
		t.Errorf("parsed end %+v", e)
	}
}

// FuzzParse: Parse never panics, and what it accepts is usable: ids set,
// one of Start and End, outcomes known.
func FuzzParse(f *testing.F) {
	f.Add("turn_ended", "s:1", "s", "0.5", "12", `[{"name":"Bash","duration_ms":1,"outcome":"ok"}]`, "2026-03-01T10:00:00Z")
	f.Add("turn_started", "s:2", "s", "", "", "", "2026-03-01T10:00:00.123456789+02:00")
	f.Add("turn_ended", "", "\x00", "-0", "9999999999999999999", "[{}]", "x")
	f.Fuzz(func(t *testing.T, event, id, session, cost, tokens, tools, at string) {
		p, err := Parse(map[string]any{
			"event": event, "turn_id": id, "session_id": session, "cost_usd": cost, "input_tokens": tokens,
			"tools": tools, "started_at": at, "ended_at": at,
		})
		if err != nil {
			if !IsMalformed(err) {
				t.Fatalf("error %v is not a MalformedError", err)
			}
			return
		}
		if (p.Start == nil) == (p.End == nil) || id == "" || session == "" {
			t.Fatalf("accepted %+v", p)
		}
		if p.End != nil {
			for _, tool := range p.End.Tools {
				if tool.Name == "" || (tool.Outcome != "ok" && tool.Outcome != "error" && tool.Outcome != "denied") {
					t.Fatalf("accepted tool %+v", tool)
				}
			}
		}
	})
}

func TestCut(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"}, {"abc", 3, "abc"}, {"abc", 2, "ab"}, {"aäb", 2, "a"}, {"aäb", 3, "aä"}, {"ä", 1, ""},
	} {
		if got := cut(tt.s, tt.n); got != tt.want {
			t.Errorf("cut(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
