package codex

import (
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex/codextest"
)

// TestResumedThreadUsageNotCounted replays the recorded resume: right
// after turn/start, before the new turn's id is known, Codex reports the
// usage of the thread's last old turn (cumulative total 84 in / 34 out,
// last 42 / 17). The new turn must cost its own model call only.
func TestResumedThreadUsageNotCounted(t *testing.T) {
	lines, err := codextest.Load("resume")
	if err != nil {
		t.Fatal(err)
	}
	p := New(Config{
		Options: agent.Options{Cwd: "/home/dev/project", Log: slog.New(slog.DiscardHandler)},
		Prices:  Prices{"mock-model": {InputPerMTok: 1, OutputPerMTok: 10}},
	})
	pr := &process{p: p, num: 1, pending: map[string]pendingCall{}, perms: map[string]*permEntry{}, launch: launch{Mode: ModeDefault}, model: "mock-model"}
	for _, l := range lines {
		var m wireMsg
		if l.Dir == "in" && json.Unmarshal(l.Msg, &m) == nil && m.Method == "turn/start" {
			pr.mu.Lock()
			pr.cur = newTurn(nil) // what Send does before writing turn/start
			pr.mu.Unlock()
		}
		if l.Dir == "out" {
			pr.handleLine(append([]byte(l.Msg), '\n'))
		}
	}
	p.events.Close()
	var ends []agent.TurnEnded
	for {
		ev, err := p.events.Next(t.Context())
		if err != nil {
			break
		}
		if e, ok := ev.(agent.TurnEnded); ok {
			ends = append(ends, e)
		}
	}
	if len(ends) != 1 {
		t.Fatalf("%d turn ends, want 1", len(ends))
	}
	u := ends[0].Usage
	if u.InputTokens != 42 || u.OutputTokens != 17 || ends[0].NumTurns != 1 {
		t.Errorf("usage %+v over %d calls, want 42 in / 17 out over 1 (the old turn's usage counted?)", u, ends[0].NumTurns)
	}
	if want := (42*1.0 + 17*10.0) / 1e6; ends[0].CostUSD != want {
		t.Errorf("cost %g, want %g", ends[0].CostUSD, want)
	}
}
