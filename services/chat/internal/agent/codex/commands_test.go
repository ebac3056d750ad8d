package codex_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex"
)

// TestDeclinedIsPermissionDenied: a declined approval is reported as Claude
// Code reports a refused permission (system/permission_denied and the
// result's permission_denials), so that turn events count it denied.
func TestDeclinedIsPermissionDenied(t *testing.T) {
	p := newProvider(t, nil) // untrusted: asks
	send(t, p, "RUN_SHELL please")
	req, _ := find[agent.PermissionRequest](collect(t, p, "permission request", is[agent.PermissionRequest]))
	if err := p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Deny}); err != nil {
		t.Fatalf("deny: %v", err)
	}
	evs := collect(t, p, "turn end", isTurnEnded)
	var denied map[string]any
	for _, m := range messages(evs, agent.TypeSystem) {
		if m["subtype"] == "permission_denied" {
			denied = m
		}
	}
	if denied == nil || denied["tool_use_id"] != req.ToolUseID || denied["tool_name"] != "Bash" {
		t.Errorf("permission_denied %v, want one for %s (Bash)", denied, req.ToolUseID)
	}
	results := messages(evs, agent.TypeResult)
	if len(results) != 1 {
		t.Fatalf("%d results, want 1", len(results))
	}
	list, _ := results[0]["permission_denials"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["tool_use_id"] != req.ToolUseID {
		t.Errorf("permission_denials %v, want %s", results[0]["permission_denials"], req.ToolUseID)
	}

	// An accepted command is no denial.
	send(t, p, "RUN_SHELL again")
	req, _ = find[agent.PermissionRequest](collect(t, p, "permission request", is[agent.PermissionRequest]))
	if err := p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Allow, UpdatedInput: req.Input}); err != nil {
		t.Fatalf("allow: %v", err)
	}
	evs = collect(t, p, "turn end", isTurnEnded)
	for _, m := range messages(evs, agent.TypeSystem) {
		if m["subtype"] == "permission_denied" {
			t.Errorf("an accepted command was denied: %v", m)
		}
	}
	if list, _ := messages(evs, agent.TypeResult)[0]["permission_denials"].([]any); len(list) != 0 {
		t.Errorf("permission_denials %v, want none", list)
	}
}

// TestBackgroundCommand: a command still running when its turn completes
// is reported (agent.Command) from then on: running with its output so
// far, each new output, then its end; no tool_result comes after the turn.
func TestBackgroundCommand(t *testing.T) {
	p := newProvider(t, func(c *codex.Config) { c.Env = append(c.Env, "FAKECODEX_DELAY=200ms") })
	send(t, p, "RUN_SHELL ok") // a command that ends in its turn is not a background one
	evs := collect(t, p, "permission request", is[agent.PermissionRequest])
	req, _ := find[agent.PermissionRequest](evs)
	if err := p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Allow, UpdatedInput: req.Input}); err != nil {
		t.Fatalf("allow: %v", err)
	}
	evs = collect(t, p, "turn end", isTurnEnded)
	if c, ok := find[agent.Command](evs); ok {
		t.Errorf("a command that ended in its turn was reported: %+v", c)
	}

	send(t, p, "BACKGROUND 2")
	evs = collect(t, p, "turn end", isTurnEnded)
	first, ok := find[agent.Command](evs)
	if !ok {
		t.Fatalf("no report in the turn: %v", kinds(evs))
	}
	if b := contentOf(evs, agent.TypeUser, "tool_result"); b == nil || b["tool_use_id"] != first.ID || b["is_error"] != false ||
		!strings.Contains(b["content"].(string), "still running in the background") || !strings.Contains(b["content"].(string), "line 0") {
		t.Errorf("tool_result in the turn %v, want one saying it runs on", b)
	}
	if first.State != agent.CommandRunning || first.ID == "" || first.ProcessID == "" || !strings.Contains(first.Command, "echo line") ||
		first.Output != "line 0\n" || first.OutputBytes != 7 {
		t.Errorf("first report %+v, want running with line 0", first)
	}
	var last agent.Command
	evs = collect(t, p, "end report", func(e agent.Event) bool {
		c, ok := e.(agent.Command)
		if ok {
			last = c
		}
		return ok && c.State != agent.CommandRunning
	})
	want := "line 0\nline 1\nline 2\n"
	if last.ID != first.ID || last.State != agent.CommandCompleted || last.ExitCode == nil || *last.ExitCode != 0 ||
		last.Output != want || last.OutputBytes != int64(len(want)) {
		t.Errorf("end report %+v, want completed with %q", last, want)
	}
	if len(messages(evs, agent.TypeUser)) != 0 {
		t.Errorf("a tool_result after the turn: %v", kinds(evs))
	}
}

// TestBackgroundCommandLost: a background command still running when the
// agent process ends is reported lost.
func TestBackgroundCommandLost(t *testing.T) {
	p := newProvider(t, func(c *codex.Config) { c.Env = append(c.Env, "FAKECODEX_DELAY=1s") })
	send(t, p, "BACKGROUND 30")
	first, _ := find[agent.Command](collect(t, p, "first report", is[agent.Command]))
	_ = p.Close()
	var last agent.Command
	collect(t, p, "lost report", func(e agent.Event) bool {
		c, ok := e.(agent.Command)
		if ok {
			last = c
		}
		return ok && c.State != agent.CommandRunning
	})
	if last.ID != first.ID || last.State != agent.CommandLost {
		t.Errorf("report %+v, want %s lost", last, first.ID)
	}
}

// TestBackgroundCommandReportsThrottled: quick output is reported at most
// every CommandReportEvery, and the end carries all of it.
func TestBackgroundCommandReportsThrottled(t *testing.T) {
	p := newProvider(t, func(c *codex.Config) { c.Env = append(c.Env, "FAKECODEX_DELAY=5ms") })
	start := time.Now()
	send(t, p, "BACKGROUND 40") // 40 lines in about 200 ms
	var reports []agent.Command
	collect(t, p, "end report", func(e agent.Event) bool {
		c, ok := e.(agent.Command)
		if ok {
			reports = append(reports, c)
		}
		return ok && c.State != agent.CommandRunning
	})
	last := reports[len(reports)-1]
	if last.State != agent.CommandCompleted || !strings.HasSuffix(last.Output, "line 40\n") || !strings.HasPrefix(last.Output, "line 0\n") {
		t.Errorf("end report %+v", last)
	}
	// Start, end, and one per CommandReportEvery in between at most.
	if n, most := len(reports), int(time.Since(start)/codex.CommandReportEvery)+3; n > most || n > 30 {
		t.Errorf("%d reports for 40 quick lines, want at most %d (grouped every %v)", n, most, codex.CommandReportEvery)
	}
}
