package codex_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex"
)

func TestTextTurn(t *testing.T) {
	p := newProvider(t, nil)
	send(t, p, "hello there")
	evs := collect(t, p, "turn end", isTurnEnded)
	if _, ok := find[agent.TurnStarted](evs); !ok {
		t.Errorf("no TurnStarted in %v", kinds(evs))
	}
	thread := p.SessionID()
	if thread == "" {
		t.Fatal("no thread id after a turn")
	}
	inits := messages(evs, agent.TypeSystem)
	if len(inits) != 1 || inits[0]["subtype"] != "init" || inits[0]["session_id"] != thread || inits[0]["model"] != "mock-model" {
		t.Errorf("system messages %v, want one init of thread %s", inits, thread)
	}
	if b := contentOf(evs, agent.TypeAssistant, "text"); b == nil || b["text"] != "Hello from the fake model." {
		t.Errorf("assistant text %v", b)
	}
	res := messages(evs, agent.TypeResult)
	if len(res) != 1 || res[0]["subtype"] != "success" || res[0]["is_error"] != false || res[0]["result"] != "Hello from the fake model." {
		t.Fatalf("result %v", res)
	}
	end, _ := find[agent.TurnEnded](evs)
	wantCost := (42*1.0 + 17*10.0) / 1e6
	if end.Usage.InputTokens != 42 || end.Usage.OutputTokens != 17 || end.Model != "mock-model" ||
		math.Abs(end.CostUSD-wantCost) > 1e-12 || end.IsError || end.SessionID != thread {
		t.Errorf("TurnEnded %+v, want 42/17 tokens, mock-model, cost %g", end, wantCost)
	}
	if res[0]["total_cost_usd"] != end.TotalCostUSD || res[0]["cost_usd"] != end.CostUSD {
		t.Errorf("result costs %v/%v, TurnEnded %v/%v", res[0]["cost_usd"], res[0]["total_cost_usd"], end.CostUSD, end.TotalCostUSD)
	}
	// Every message of the turn names the thread.
	for _, e := range evs {
		if m, ok := e.(agent.Message); ok && m.SessionID != thread {
			t.Errorf("message %s with session %q", m.Raw, m.SessionID)
		}
	}
	// The second turn costs as much again: the total adds up.
	send(t, p, "again")
	end2, _ := find[agent.TurnEnded](collect(t, p, "turn end", isTurnEnded))
	if math.Abs(end2.TotalCostUSD-2*wantCost) > 1e-12 {
		t.Errorf("total after two turns %g, want %g", end2.TotalCostUSD, 2*wantCost)
	}
}

func TestApprovalAllowAndDeny(t *testing.T) {
	p := newProvider(t, nil) // default mode: untrusted, asks
	send(t, p, "RUN_SHELL please")
	evs := collect(t, p, "permission request", is[agent.PermissionRequest])
	req, _ := find[agent.PermissionRequest](evs)
	if req.ToolName != "Bash" || !strings.Contains(string(req.Input), "hello-from-shell") || !strings.Contains(string(req.Input), `"cwd"`) || len(req.Suggestions) == 0 {
		t.Fatalf("permission request %+v", req)
	}
	if b := contentOf(evs, agent.TypeAssistant, "tool_use"); b == nil || b["name"] != "Bash" || b["id"] != req.ToolUseID {
		t.Errorf("tool_use %v, want Bash %s", b, req.ToolUseID)
	}
	ctx := context.Background()
	if err := p.RespondPermission(ctx, req.RequestID, agent.PermissionDecision{Behavior: agent.Allow, UpdatedInput: req.Input}); err != nil {
		t.Fatalf("allow: %v", err)
	}
	if err := p.RespondPermission(ctx, req.RequestID, agent.PermissionDecision{Behavior: agent.Allow}); !errors.Is(err, agent.ErrPermissionExpired) {
		t.Errorf("second answer: %v, want ErrPermissionExpired", err)
	}
	evs = collect(t, p, "turn end", isTurnEnded)
	if b := contentOf(evs, agent.TypeUser, "tool_result"); b == nil || b["content"] != "hello-from-shell\n" || b["is_error"] != false {
		t.Errorf("tool result %v", b)
	}
	if _, ok := find[agent.PermissionRetired](evs); ok {
		t.Errorf("an answered request was retired: %v", kinds(evs))
	}

	// A changed input cannot be run: declined, and reported.
	send(t, p, "RUN_SHELL changed")
	req, _ = find[agent.PermissionRequest](collect(t, p, "permission request", is[agent.PermissionRequest]))
	if err := p.RespondPermission(ctx, req.RequestID, agent.PermissionDecision{Behavior: agent.Allow, UpdatedInput: []byte(`{"command":"rm -rf /"}`)}); !errors.Is(err, agent.ErrInvalidInput) {
		t.Errorf("allow with a changed input: %v, want ErrInvalidInput", err)
	}
	evs = collect(t, p, "turn end", isTurnEnded)
	if b := contentOf(evs, agent.TypeUser, "tool_result"); b == nil || b["is_error"] != true {
		t.Errorf("changed input: tool result %v, want declined", b)
	}

	send(t, p, "RUN_SHELL again")
	req, _ = find[agent.PermissionRequest](collect(t, p, "permission request", is[agent.PermissionRequest]))
	if err := p.RespondPermission(ctx, req.RequestID, agent.PermissionDecision{Behavior: agent.Deny}); err != nil {
		t.Fatalf("deny: %v", err)
	}
	evs = collect(t, p, "turn end", isTurnEnded)
	if b := contentOf(evs, agent.TypeUser, "tool_result"); b == nil || b["is_error"] != true {
		t.Errorf("declined tool result %v", b)
	}
	if end, _ := find[agent.TurnEnded](evs); end.IsError {
		t.Errorf("a declined command fails the turn: %+v", end)
	}
}

func TestAlwaysAllowForSession(t *testing.T) {
	p := newProvider(t, nil)
	send(t, p, "RUN_SHELL")
	req, _ := find[agent.PermissionRequest](collect(t, p, "permission request", is[agent.PermissionRequest]))
	if !strings.Contains(string(req.Suggestions[0]), "acceptForSession") {
		t.Fatalf("suggestions %s", req.Suggestions)
	}
	zero := 0
	if err := p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Allow, SuggestionIndex: &zero}); err != nil {
		t.Fatal(err)
	}
	collect(t, p, "turn end", isTurnEnded)
	send(t, p, "RUN_SHELL")
	evs := collect(t, p, "turn end", isTurnEnded)
	if _, asked := find[agent.PermissionRequest](evs); asked {
		t.Errorf("asked again after always-allow: %v", kinds(evs))
	}
	if b := contentOf(evs, agent.TypeUser, "tool_result"); b == nil || b["content"] != "hello-from-shell\n" {
		t.Errorf("tool result %v", b)
	}
}

func TestFileChangeApproval(t *testing.T) {
	p := newProvider(t, nil)
	send(t, p, "APPLY_PATCH please")
	req, _ := find[agent.PermissionRequest](collect(t, p, "permission request", is[agent.PermissionRequest]))
	if req.ToolName != "Edit" || !strings.Contains(string(req.Input), `"kind":"add"`) || !strings.Contains(string(req.Input), "patched.txt") || !strings.Contains(string(req.Input), `"diff"`) {
		t.Fatalf("permission request %+v input %s", req, req.Input)
	}
	if err := p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Allow}); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, p, "turn end", isTurnEnded)
	if b := contentOf(evs, agent.TypeUser, "tool_result"); b == nil || b["is_error"] != false {
		t.Errorf("tool result %v", b)
	}
}

func TestServerResolvedRetires(t *testing.T) {
	p := newProvider(t, nil)
	send(t, p, "RESOLVE")
	evs := collect(t, p, "retired", is[agent.PermissionRetired])
	req, _ := find[agent.PermissionRequest](evs)
	ret, _ := find[agent.PermissionRetired](evs)
	if ret.RequestID != req.RequestID || ret.Reason != agent.RetiredCancelled {
		t.Errorf("retired %+v for request %s", ret, req.RequestID)
	}
	if err := p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Allow}); !errors.Is(err, agent.ErrPermissionExpired) {
		t.Errorf("answer after resolution: %v, want ErrPermissionExpired", err)
	}
	collect(t, p, "turn end", isTurnEnded)
}

func TestInterruptThenResume(t *testing.T) {
	p := newProvider(t, nil)
	send(t, p, "SLOW 200")
	collect(t, p, "first delta", func(e agent.Event) bool {
		c, ok := e.(agent.Control)
		return ok && c.Subtype == "item/agentMessage/delta"
	})
	thread := p.SessionID()
	out, err := p.Interrupt(context.Background())
	if err != nil || out != agent.InterruptForced {
		t.Fatalf("Interrupt = %v, %v; want forced", out, err)
	}
	evs := collect(t, p, "exit", is[agent.ProcessExited])
	end, ok := find[agent.TurnEnded](evs)
	if !ok || !end.Interrupted || !end.IsError {
		t.Errorf("TurnEnded %+v, want interrupted", end)
	}
	if res := messages(evs, agent.TypeResult); len(res) != 1 || res[0]["terminal_reason"] != "interrupted" {
		t.Errorf("result %v", res)
	}
	exit, _ := find[agent.ProcessExited](evs)
	if exit.Cause != agent.ExitInterrupted || exit.TurnRunning || exit.Signal != "interrupt" {
		t.Errorf("exit %+v, want interrupted by SIGINT", exit)
	}
	if out, _ := p.Interrupt(context.Background()); out != agent.InterruptIdle {
		t.Errorf("Interrupt without a turn = %v", out)
	}
	send(t, p, "after the stop")
	evs = collect(t, p, "turn end", isTurnEnded)
	started, _ := find[agent.ProcessStarted](evs)
	if started.Resume != thread || p.SessionID() != thread {
		t.Errorf("respawn resumed %q, now %q; want thread %s", started.Resume, p.SessionID(), thread)
	}
}

func TestPermissionModeNextTurn(t *testing.T) {
	p := newProvider(t, nil)
	ctx := context.Background()
	if _, err := p.SetPermissionMode(ctx, "yolo"); !errors.Is(err, agent.ErrInvalidPermissionMode) {
		t.Errorf("bad mode: %v", err)
	}
	send(t, p, "hi")
	collect(t, p, "turn end", isTurnEnded)
	applied, err := p.SetPermissionMode(ctx, codex.ModeBypassPermissions)
	if err != nil || applied != agent.AppliedNextTurn {
		t.Fatalf("SetPermissionMode = %v, %v; want next_turn", applied, err)
	}
	send(t, p, "RUN_SHELL")
	evs := collect(t, p, "turn end", isTurnEnded)
	exit, _ := find[agent.ProcessExited](evs)
	started, _ := find[agent.ProcessStarted](evs)
	if exit.Cause != agent.ExitRespawn || started.PermissionMode != codex.ModeBypassPermissions {
		t.Errorf("exit %+v, start %+v: want a respawn in bypassPermissions", exit, started)
	}
	if _, asked := find[agent.PermissionRequest](evs); asked {
		t.Errorf("bypassPermissions (policy never) asked: %v", kinds(evs))
	}
	if init := messages(evs, agent.TypeSystem); len(init) != 1 || init[0]["approval_policy"] != "never" || init[0]["sandbox"] != "danger-full-access" {
		t.Errorf("init %v", init)
	}
}

func TestBadInputFromTheProcess(t *testing.T) {
	p := newProvider(t, nil)
	send(t, p, "RAW")
	evs := collect(t, p, "turn end", isTurnEnded)
	if raw, ok := find[agent.RawOutput](evs); !ok || !strings.Contains(raw.Line, "not JSON") {
		t.Errorf("no raw output in %v", kinds(evs))
	}
	send(t, p, "UNKNOWN")
	evs = collect(t, p, "turn end", isTurnEnded)
	found := false
	for _, e := range evs {
		if c, ok := e.(agent.Control); ok && c.Subtype == "fake/somethingNew" {
			found = true
		}
	}
	if !found {
		t.Errorf("unknown notification not reported: %v", kinds(evs))
	}
	send(t, p, "REQUEST")
	evs = collect(t, p, "turn end", isTurnEnded)
	if b := contentOf(evs, agent.TypeAssistant, "text"); b == nil || !strings.Contains(b["text"].(string), "error -32601") {
		t.Errorf("unsupported server request answer: %v", b)
	}
	// A refused turn: Send fails and no turn starts.
	err := p.Send(context.Background(), agent.Turn{Text: "REFUSE"})
	var rpcErr *codex.RPCError
	if !errors.As(err, &rpcErr) || !strings.Contains(err.Error(), "fake refusal") {
		t.Errorf("refused turn: %v", err)
	}
	send(t, p, "FAIL500")
	evs = collect(t, p, "turn end", isTurnEnded)
	if _, ok := find[agent.TurnStarted](evs); !ok {
		t.Errorf("no TurnStarted for FAIL500 (or a stray one for REFUSE): %v", kinds(evs))
	}
	end, _ := find[agent.TurnEnded](evs)
	if !end.IsError || !strings.Contains(end.Result, "high demand") || end.TerminalReason != "failed" {
		t.Errorf("failed turn %+v", end)
	}
	thread := p.SessionID()
	send(t, p, "CRASH 4")
	evs = collect(t, p, "exit", is[agent.ProcessExited])
	exit, _ := find[agent.ProcessExited](evs)
	if exit.Cause != agent.ExitCrashed || exit.ExitCode != 4 || !exit.TurnRunning || !strings.Contains(exit.Reason, "scripted crash") {
		t.Errorf("crash exit %+v", exit)
	}
	send(t, p, "after the crash")
	collect(t, p, "turn end", isTurnEnded)
	if p.SessionID() != thread {
		t.Errorf("thread after the crash %q, want %q resumed", p.SessionID(), thread)
	}
}

func TestResumeUnknownThreadStartsNew(t *testing.T) {
	p := newProvider(t, func(c *codex.Config) { c.Resume = "01a200f0-0000-7000-8000-000000000000" })
	send(t, p, "hi")
	evs := collect(t, p, "turn end", isTurnEnded)
	var note string
	for _, e := range evs {
		if s, ok := e.(agent.Stderr); ok && strings.Contains(s.Line, "cannot continue thread") {
			note = s.Line
		}
	}
	if note == "" || p.SessionID() == "01a200f0-0000-7000-8000-000000000000" || p.SessionID() == "" {
		t.Errorf("stderr %q, thread %q", note, p.SessionID())
	}
}

func TestForkMakesANewThread(t *testing.T) {
	home := t.TempDir()
	env := []string{"CODEX_HOME=" + home}
	parent := newProvider(t, func(c *codex.Config) { c.Env = env })
	send(t, parent, "hi")
	collect(t, parent, "turn end", isTurnEnded)
	thread := parent.SessionID()
	fork := newProvider(t, func(c *codex.Config) { c.Env, c.Resume, c.Fork = env, thread, true })
	send(t, fork, "hi from the fork")
	collect(t, fork, "turn end", isTurnEnded)
	if fork.SessionID() == "" || fork.SessionID() == thread {
		t.Fatalf("fork thread %q, parent %q: want a new one", fork.SessionID(), thread)
	}
	// Respawned, the fork resumes its own thread, not the parent's.
	if _, err := fork.Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	forked := fork.SessionID()
	_ = fork.Close()
	again := newProvider(t, func(c *codex.Config) { c.Env, c.Resume = env, forked })
	send(t, again, "hi")
	collect(t, again, "turn end", isTurnEnded)
	if again.SessionID() != forked {
		t.Errorf("resumed %q, want %q", again.SessionID(), forked)
	}
}

func TestImagesAndQueuedTurns(t *testing.T) {
	p := newProvider(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Send(ctx, agent.Turn{Text: "ECHO", Images: []agent.Image{{MediaType: "image/png", Data: "iVBORw0KGgo="}}}); err != nil {
		t.Fatal(err)
	}
	// Sent while the first runs: queued, started after it.
	if err := p.Send(ctx, agent.Turn{Text: "second"}); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, p, "first turn end", isTurnEnded)
	if b := contentOf(evs, agent.TypeAssistant, "text"); b == nil || b["text"] != "received: image(data:image/png;base64) text" {
		t.Errorf("echo %v", b)
	}
	evs = collect(t, p, "second turn end", isTurnEnded)
	if end, _ := find[agent.TurnEnded](evs); end.IsError {
		t.Errorf("queued turn %+v", end)
	}
	for _, bad := range []agent.Turn{{}, {Images: []agent.Image{{MediaType: "image/png"}}}} {
		if err := p.Send(ctx, bad); !errors.Is(err, agent.ErrInvalidInput) {
			t.Errorf("Send(%+v) = %v, want ErrInvalidInput", bad, err)
		}
	}
}

func TestMissingExecutable(t *testing.T) {
	p := newProvider(t, func(c *codex.Config) { c.Executable = "/nonexistent/codex" })
	err := p.Send(context.Background(), agent.Turn{Text: "hi"})
	var missing *agent.MissingExecutableError
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "/api/app/provider-path/codex") {
		t.Errorf("Send = %v, want a MissingExecutableError naming the path route", err)
	}
}

func TestPolicyFor(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		override codex.Policy
		want     codex.Policy
	}{
		{"default", codex.Policy{}, codex.Policy{ApprovalPolicy: "untrusted", Sandbox: "workspace-write"}},
		{"acceptEdits", codex.Policy{}, codex.Policy{ApprovalPolicy: "on-request", Sandbox: "workspace-write"}},
		{"bypassPermissions", codex.Policy{}, codex.Policy{ApprovalPolicy: "never", Sandbox: "danger-full-access"}},
		{"plan", codex.Policy{}, codex.Policy{ApprovalPolicy: "untrusted", Sandbox: "read-only"}},
		{"default", codex.Policy{Sandbox: "read-only"}, codex.Policy{ApprovalPolicy: "untrusted", Sandbox: "read-only"}},
		{"plan", codex.Policy{ApprovalPolicy: "never"}, codex.Policy{ApprovalPolicy: "untrusted", Sandbox: "read-only"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			if got := codex.PolicyFor(tc.mode, tc.override); got != tc.want {
				t.Errorf("PolicyFor(%s, %+v) = %+v, want %+v", tc.mode, tc.override, got, tc.want)
			}
		})
	}
}

func TestPriceCost(t *testing.T) {
	p := codex.Price{InputPerMTok: 2, CachedInputPerMTok: 0.5, OutputPerMTok: 8}
	// 1M input of which 400k cached, 100k output.
	if got, want := p.Cost(1_000_000, 400_000, 100_000), 0.6*2+0.4*0.5+0.1*8; math.Abs(got-want) > 1e-9 {
		t.Errorf("Cost = %g, want %g", got, want)
	}
	ps := codex.Prices{"*": {InputPerMTok: 1}}
	if _, ok := ps.Lookup("anything"); !ok {
		t.Error("wildcard not used")
	}
	if _, ok := (codex.Prices{}).Lookup("x"); ok {
		t.Error("empty table priced a model")
	}
}
