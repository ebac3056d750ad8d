package claude

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

func TestTextTurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.Model = "claude-sonnet-4-5" })
	end, before := h.turn("Say hello")

	got := kinds(withoutControl(before))
	want := "process_started turn_started message:system/init message:assistant message:result/success"
	if got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if !strings.Contains(kinds(before), "control") {
		t.Errorf("no control event for the initialize response in %q", kinds(before))
	}
	if end.IsError || end.Subtype != "success" || end.Result != "Hello from the fake model." {
		t.Errorf("turn ended %+v", end)
	}
	if end.CostUSD != 0.000381 || end.TotalCostUSD != 0.000381 {
		t.Errorf("cost %v, total %v; want 0.000381 both", end.CostUSD, end.TotalCostUSD)
	}
	if end.Usage.InputTokens != 42 || end.Usage.OutputTokens != 17 || end.Model != "claude-sonnet-4-5" || end.NumTurns != 1 {
		t.Errorf("usage %+v model %q turns %d", end.Usage, end.Model, end.NumTurns)
	}
	if end.SessionID == "" || h.p.SessionID() != end.SessionID {
		t.Errorf("session id %q, provider has %q", end.SessionID, h.p.SessionID())
	}

	// What the CLI got: the SDK's argv in --flag=value form, initialize
	// first, then the user message exactly as the TypeScript SDK writes it.
	argvs := h.argvs()
	wantArgv := []string{"--output-format=stream-json", "--verbose", "--input-format=stream-json", "--model=claude-sonnet-4-5", "--permission-prompt-tool=stdio", "--permission-mode=default"}
	if len(argvs) != 1 || !slices.Equal(argvs[0], wantArgv) {
		t.Errorf("argv %q, want %q", argvs, wantArgv)
	}
	in := h.inputs()
	if len(in) != 2 {
		t.Fatalf("stdin got %d lines, want 2: %v", len(in), in)
	}
	if in[0]["type"] != "control_request" || in[0]["request"].(map[string]any)["subtype"] != "initialize" {
		t.Errorf("first line %v, want initialize", in[0])
	}
	wantUser := map[string]any{
		"type": "user", "session_id": "", "parent_tool_use_id": nil,
		"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Say hello"}}},
	}
	if !jsonEqual(t, in[1], wantUser) {
		t.Errorf("user line %v, want %v", in[1], wantUser)
	}
	var env map[string]string
	for _, l := range h.transcript() {
		var m struct {
			Env map[string]string `json:"env"`
		}
		if l.Dir == "meta" && json.Unmarshal(l.Msg, &m) == nil && m.Env != nil {
			env = m.Env
		}
	}
	if env["CLAUDE_CODE_ENTRYPOINT"] != "sdk-ts" || env["CLAUDE_CODE_SDK_READS_SESSION_STATE"] != "1" || env["CLAUDE_AGENT_SDK_VERSION"] != SDKVersion {
		t.Errorf("env %v lacks the SDK's variables", env)
	}
}

func TestWarmProcessAcrossTurns(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.turn("Say hello")
	pid := h.p.PID()
	second, before := h.turn("Say hello again")
	if got := h.p.PID(); got != pid || pid == 0 {
		t.Errorf("pid %d after the second turn, want %d", got, pid)
	}
	for _, e := range before {
		if e.Kind() == agent.KindProcessStarted || e.Kind() == agent.KindProcessExited {
			t.Errorf("second turn saw %s", e.Kind())
		}
	}
	// total_cost_usd is cumulative; CostUSD is the turn's own.
	if second.CostUSD != 0.000381 || second.TotalCostUSD != 0.000762 {
		t.Errorf("second turn cost %v total %v, want 0.000381 and 0.000762", second.CostUSD, second.TotalCostUSD)
	}

	// A message sent while a turn runs is queued by the CLI.
	h.send("SLOW 3")
	h.send("Say hello")
	started, _ := waitFor[agent.TurnStarted](h)
	if started.Queued {
		t.Error("first turn reported queued")
	}
	started, _ = waitFor[agent.TurnStarted](h)
	if !started.Queued {
		t.Error("second turn not reported queued")
	}
	first, _ := waitFor[agent.TurnEnded](h)
	last, _ := waitFor[agent.TurnEnded](h)
	if !strings.HasPrefix(first.Result, "This chunk 2") || last.Result != "Hello from the fake model." {
		t.Errorf("queued turns ended with %q then %q", first.Result, last.Result)
	}
	if h.p.PID() != pid {
		t.Error("process changed")
	}
}

func TestPermissionAllow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		prompt       string
		updatedInput json.RawMessage
		suggestion   *int
		wantResult   string
		wantMode     string // the mode afterwards
	}{
		{name: "as asked", prompt: "RUN_BASH", wantResult: "hello-from-bash", wantMode: ModeDefault},
		{
			name: "updated input and an always-allow rule", prompt: "RUN_BASH",
			updatedInput: json.RawMessage(`{"command":"echo changed","description":"changed by the user"}`),
			suggestion:   new(int), // 0: addRules Bash allow
			wantResult:   "ran: echo changed", wantMode: ModeDefault,
		},
		{
			name: "setMode suggestion switches the mode", prompt: "WRITE_FILE",
			suggestion: new(int), // 0: setMode acceptEdits
			wantResult: "File created successfully at: /tmp/hello.txt", wantMode: ModeAcceptEdits,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.send(tt.prompt)
			req, _ := waitFor[agent.PermissionRequest](h)
			if len(req.Suggestions) != 2 || req.ToolUseID == "" || len(req.Input) == 0 {
				t.Fatalf("permission request %+v", req)
			}
			ctx := context.Background()
			err := h.p.RespondPermission(ctx, req.RequestID, agent.PermissionDecision{Behavior: agent.Allow, UpdatedInput: tt.updatedInput, SuggestionIndex: tt.suggestion})
			if err != nil {
				t.Fatal(err)
			}
			end, before := waitFor[agent.TurnEnded](h)
			if end.IsError || !strings.Contains(end.Result, tt.wantResult) {
				t.Errorf("turn ended %+v, want result containing %q", end, tt.wantResult)
			}

			// The CLI got exactly the updated input and the chosen
			// suggestion, as the SDK sends them.
			answer := h.inputs()[2]
			resp := answer["response"].(map[string]any)
			if resp["request_id"] != req.RequestID || resp["subtype"] != "success" {
				t.Errorf("answer %v", answer)
			}
			want := map[string]any{"behavior": "allow", "updatedInput": req.Input, "toolUseID": req.ToolUseID}
			if tt.updatedInput != nil {
				want["updatedInput"] = tt.updatedInput
			}
			if tt.suggestion != nil {
				want["updatedPermissions"] = []json.RawMessage{req.Suggestions[*tt.suggestion]}
			}
			if !jsonEqual(t, resp["response"], want) {
				t.Errorf("answer payload %v, want %v", resp["response"], want)
			}

			if got := h.p.PermissionMode(); got != tt.wantMode {
				t.Errorf("mode %q, want %q", got, tt.wantMode)
			}
			if tt.wantMode != ModeDefault {
				changed := false
				for _, e := range before {
					if m, ok := e.(agent.ModeChanged); ok && m.Mode == tt.wantMode {
						changed = true
					}
				}
				if !changed {
					t.Errorf("no ModeChanged to %s in %s", tt.wantMode, kinds(before))
				}
			}
			if err := h.p.RespondPermission(ctx, req.RequestID, agent.PermissionDecision{Behavior: agent.Allow}); !errors.Is(err, agent.ErrPermissionExpired) {
				t.Errorf("second answer: %v, want ErrPermissionExpired", err)
			}

			// The next turn runs in the same process: a mode the agent
			// switched to itself needs no respawn, and an accepted rule
			// means no more asks.
			pid := h.p.PID()
			h.send(tt.prompt)
			e, _ := h.waitMatch(func(e agent.Event) bool {
				return e.Kind() == agent.KindPermissionRequest || e.Kind() == agent.KindTurnEnded
			})
			if again, ok := e.(agent.PermissionRequest); ok {
				if tt.suggestion != nil {
					t.Errorf("asked again after the accepted suggestion")
				}
				if err := h.p.RespondPermission(ctx, again.RequestID, agent.PermissionDecision{Behavior: agent.Allow}); err != nil {
					t.Fatal(err)
				}
				waitFor[agent.TurnEnded](h)
			} else if tt.suggestion == nil {
				t.Error("no ask on the second turn")
			}
			if h.p.PID() != pid {
				t.Errorf("process respawned: pid %d, was %d", h.p.PID(), pid)
			}
		})
	}
}

func TestPermissionDeny(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.send("RUN_BASH please")
	req, _ := waitFor[agent.PermissionRequest](h)
	if err := h.p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Deny, Message: "Not this one."}); err != nil {
		t.Fatal(err)
	}
	end, before := waitFor[agent.TurnEnded](h)
	if end.IsError || end.Interrupted {
		t.Errorf("turn ended %+v", end)
	}
	var toolResult string
	for _, e := range before {
		if m, ok := e.(agent.Message); ok && m.Type == agent.TypeUser {
			toolResult = messageText(t, m)
		}
	}
	if !strings.Contains(toolResult, `"is_error":true`) || !strings.Contains(toolResult, "Not this one.") {
		t.Errorf("tool result %s", toolResult)
	}
	resp := h.inputs()[2]["response"].(map[string]any)["response"]
	want := map[string]any{"behavior": "deny", "message": "Not this one.", "toolUseID": req.ToolUseID}
	if !jsonEqual(t, resp, want) {
		t.Errorf("deny %v, want %v", resp, want)
	}

	// Invalid answers are refused and leave the request pending.
	h.send("RUN_BASH again")
	req, _ = waitFor[agent.PermissionRequest](h)
	for _, d := range []agent.PermissionDecision{
		{Behavior: "maybe"},
		{Behavior: agent.Allow, SuggestionIndex: func() *int { i := 2; return &i }()},
		{Behavior: agent.Allow, UpdatedInput: json.RawMessage(`[1]`)},
	} {
		if err := h.p.RespondPermission(context.Background(), req.RequestID, d); !errors.Is(err, agent.ErrInvalidInput) {
			t.Errorf("answer %+v: %v, want ErrInvalidInput", d, err)
		}
	}
	if err := h.p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Deny, Interrupt: true}); err != nil {
		t.Fatal(err)
	}
	end, _ = waitFor[agent.TurnEnded](h)
	if !end.Interrupted || end.TerminalReason != "aborted_tools" {
		t.Errorf("deny with interrupt ended %+v", end)
	}
	if !strings.Contains(string(mustJSON(t, h.inputs()[4])), DefaultDenyMessage) {
		t.Errorf("deny without message did not send %q", DefaultDenyMessage)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPermissionCancelledByInterrupt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.send("RUN_BASH")
	req, _ := waitFor[agent.PermissionRequest](h)
	pid := h.p.PID()
	outcome, err := h.p.Interrupt(context.Background())
	if err != nil || outcome != agent.InterruptAcknowledged {
		t.Fatalf("interrupt: %v, %v", outcome, err)
	}
	retired, _ := waitFor[agent.PermissionRetired](h)
	if retired.RequestID != req.RequestID || retired.Reason != agent.RetiredCancelled {
		t.Errorf("retired %+v", retired)
	}
	end, _ := waitFor[agent.TurnEnded](h)
	if !end.Interrupted || !end.IsError || end.TerminalReason != "aborted_tools" || end.CostUSD == 0 {
		t.Errorf("turn ended %+v", end)
	}
	if err := h.p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Allow}); !errors.Is(err, agent.ErrPermissionExpired) {
		t.Errorf("answer after cancel: %v, want ErrPermissionExpired", err)
	}
	h.turn("Say hello")
	if h.p.PID() != pid {
		t.Error("the process did not stay warm")
	}
}

func TestPermissionRetiredWhenProcessDies(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.send("RUN_BASH")
	req, _ := waitFor[agent.PermissionRequest](h)
	if err := syscall.Kill(h.p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	retired, _ := waitFor[agent.PermissionRetired](h)
	if retired.RequestID != req.RequestID || retired.Reason != agent.RetiredProcessExited {
		t.Errorf("retired %+v", retired)
	}
	exited, _ := waitFor[agent.ProcessExited](h)
	if exited.Cause != agent.ExitCrashed || exited.Signal != "killed" || !exited.TurnRunning {
		t.Errorf("exited %+v", exited)
	}
	if err := h.p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Allow}); !errors.Is(err, agent.ErrPermissionExpired) {
		t.Errorf("answer after exit: %v, want ErrPermissionExpired", err)
	}
}

func TestCrashRespawnsWithResume(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	first, _ := h.turn("Say hello")
	session := first.SessionID
	h.send("CRASH 7")
	exited, before := waitFor[agent.ProcessExited](h)
	if exited.Cause != agent.ExitCrashed || exited.ExitCode != 7 || !exited.TurnRunning {
		t.Errorf("exited %+v", exited)
	}
	if !strings.Contains(exited.Reason, "exit status 7") || !strings.Contains(exited.Reason, "simulated crash") {
		t.Errorf("reason %q lacks the status and the last stderr line", exited.Reason)
	}
	if !slices.ContainsFunc(before, func(e agent.Event) bool {
		s, ok := e.(agent.Stderr)
		return ok && strings.Contains(s.Line, "simulated crash")
	}) {
		t.Errorf("no stderr event before the exit: %s", kinds(before))
	}
	if h.p.PID() != 0 {
		t.Error("a dead process is still current")
	}

	end, before := h.turn("Say hello")
	started, ok := before[0].(agent.ProcessStarted)
	if !ok || started.Resume != session || !slices.Contains(started.Args, "--resume="+session) {
		t.Errorf("respawn %+v, want --resume=%s", before[0], session)
	}
	if end.SessionID != session {
		t.Errorf("resumed session %q, want %q", end.SessionID, session)
	}
	// The resumed CLI keeps counting the session's cost; the turn's own
	// cost stays per turn.
	if end.CostUSD != 0.000381 || end.TotalCostUSD <= end.CostUSD {
		t.Errorf("resumed turn cost %v total %v", end.CostUSD, end.TotalCostUSD)
	}
	if argvs := h.argvs(); len(argvs) != 2 || !slices.Contains(argvs[1], "--resume="+session) {
		t.Errorf("argvs %q", argvs)
	}
}

func TestInterruptHonoured(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.send("SLOW 100") // 100 chunks 50 ms apart: far longer than the test
	h.waitMatch(func(e agent.Event) bool { m, ok := e.(agent.Message); return ok && m.Type == agent.TypeAssistant })
	pid := h.p.PID()
	outcome, err := h.p.Interrupt(context.Background())
	if err != nil || outcome != agent.InterruptAcknowledged {
		t.Fatalf("interrupt: %v, %v", outcome, err)
	}
	end, before := waitFor[agent.TurnEnded](h)
	if !end.Interrupted || !end.IsError || end.Subtype != "error_during_execution" || end.TerminalReason != "aborted_streaming" {
		t.Errorf("turn ended %+v", end)
	}
	if end.CostUSD == 0 {
		t.Error("the aborted turn reported no cost")
	}
	var aborted, notice bool
	for _, e := range before {
		if m, ok := e.(agent.Message); ok {
			aborted = aborted || (m.Type == agent.TypeAssistant && strings.Contains(string(m.Raw), `"aborted":true`))
			notice = notice || strings.Contains(string(m.Raw), "[Request interrupted by user]")
		}
	}
	if !aborted || !notice {
		t.Errorf("events %s: aborted assistant %v, interrupt notice %v", kinds(before), aborted, notice)
	}
	if outcome, _ := h.p.Interrupt(context.Background()); outcome != agent.InterruptIdle {
		t.Errorf("interrupt while idle: %v", outcome)
	}
	h.turn("Say hello")
	if h.p.PID() != pid {
		t.Error("the process did not stay warm")
	}
}

func TestInterruptNotAcknowledged(t *testing.T) {
	t.Parallel()
	const controlTimeout, killDelay = 300 * time.Millisecond, time.Second
	tests := []struct {
		prompt     string
		wantSignal string
		killed     bool // needed SIGKILL
	}{
		{prompt: "IGNORE_INTERRUPT", wantSignal: "interrupt"},
		{prompt: "IGNORE_SIGINT", wantSignal: "killed", killed: true},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *Config) { c.ControlTimeout, c.KillDelay = controlTimeout, killDelay })
			h.turn("Say hello")
			session := h.p.SessionID()
			h.send(tt.prompt)
			h.waitMatch(func(e agent.Event) bool { m, ok := e.(agent.Message); return ok && m.Type == agent.TypeAssistant })

			start := time.Now()
			outcome, err := h.p.Interrupt(context.Background())
			signalled := time.Now()
			if err != nil || outcome != agent.InterruptForced {
				t.Fatalf("interrupt: %v, %v", outcome, err)
			}
			if waited := signalled.Sub(start); waited < controlTimeout {
				t.Errorf("gave up on the acknowledgment after %v, want %v", waited, controlTimeout)
			}
			exited, before := waitFor[agent.ProcessExited](h)
			afterSignal := time.Since(signalled)
			if exited.Cause != agent.ExitInterrupted || exited.Signal != tt.wantSignal || !exited.TurnRunning {
				t.Errorf("exited %+v", exited)
			}
			if tt.killed {
				if afterSignal < killDelay-50*time.Millisecond || afterSignal > killDelay+5*time.Second {
					t.Errorf("SIGKILL came %v after SIGINT, want about %v", afterSignal, killDelay)
				}
				if !slices.ContainsFunc(before, func(e agent.Event) bool {
					s, ok := e.(agent.Stderr)
					return ok && s.Line == "fakeclaude: ignoring SIGINT"
				}) {
					t.Errorf("the fake never saw SIGINT: %s", kinds(before))
				}
			} else if afterSignal >= killDelay {
				t.Errorf("exit %v after SIGINT: SIGINT alone should have ended it", afterSignal)
			}

			// The next turn respawns and resumes.
			end, before := h.turn("Say hello")
			if s, ok := before[0].(agent.ProcessStarted); !ok || s.Resume != session || end.SessionID != session {
				t.Errorf("after the forced interrupt: %+v, session %q, want %q", before[0], end.SessionID, session)
			}
		})
	}
}

func TestSetPermissionMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		opts        []option
		startMode   string
		warm        bool // run a turn first
		mode        string
		wantApplied agent.Applied
		wantRequest bool // a set_permission_mode request was sent
	}{
		{name: "live", warm: true, mode: ModeAcceptEdits, wantApplied: agent.AppliedLive, wantRequest: true},
		{name: "no process", mode: ModePlan, wantApplied: agent.AppliedNextTurn},
		{name: "nacked", opts: []option{withEnv("FAKECLAUDE_SET_MODE=nack")}, warm: true, mode: ModeAcceptEdits, wantApplied: agent.AppliedNextTurn, wantRequest: true},
		{
			name: "timed out", warm: true, mode: ModeAcceptEdits, wantApplied: agent.AppliedNextTurn, wantRequest: true,
			opts: []option{withEnv("FAKECLAUDE_SET_MODE=ignore"), func(c *Config) { c.ControlTimeout = 300 * time.Millisecond }},
		},
		{name: "launched in bypassPermissions", startMode: ModeBypassPermissions, warm: true, mode: ModeDefault, wantApplied: agent.AppliedNextTurn},
		{name: "to bypassPermissions: not launched for it", warm: true, mode: ModeBypassPermissions, wantApplied: agent.AppliedNextTurn, wantRequest: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := append([]option{func(c *Config) { c.PermissionMode = tt.startMode }}, tt.opts...)
			h := newHarness(t, opts...)
			if tt.warm {
				h.turn("Say hello")
			}
			pid := h.p.PID()
			applied, err := h.p.SetPermissionMode(context.Background(), tt.mode)
			if err != nil || applied != tt.wantApplied {
				t.Fatalf("applied %q, %v; want %q", applied, err, tt.wantApplied)
			}
			sent := slices.ContainsFunc(h.inputs(), func(m map[string]any) bool {
				r, _ := m["request"].(map[string]any)
				return r["subtype"] == "set_permission_mode" && r["mode"] == tt.mode
			})
			if sent != tt.wantRequest {
				t.Errorf("set_permission_mode sent: %v, want %v", sent, tt.wantRequest)
			}

			// The next turn runs in the new mode: in place when live,
			// else in a new process started with it.
			h.turn("Say hello")
			argvs := h.argvs()
			last := argvs[len(argvs)-1]
			if tt.wantApplied == agent.AppliedLive {
				if h.p.PID() != pid || len(argvs) != 1 {
					t.Errorf("live change respawned: %q", argvs)
				}
			} else {
				if !slices.Contains(last, "--permission-mode="+tt.mode) {
					t.Errorf("next launch %q lacks --permission-mode=%s", last, tt.mode)
				}
				if tt.warm && !slices.Contains(last, "--resume="+h.p.SessionID()) {
					t.Errorf("respawn %q does not resume %s", last, h.p.SessionID())
				}
			}
			if got := slices.Contains(last, "--allow-dangerously-skip-permissions"); got != (tt.mode == ModeBypassPermissions) {
				t.Errorf("launch %q: bypass allow flag %v", last, got)
			}
			inits := 0
			for _, e := range h.seen {
				if m, ok := e.(agent.Message); ok && m.Subtype == "init" {
					inits++
					if inits > 1 || !tt.warm {
						var init struct {
							PermissionMode string `json:"permissionMode"`
						}
						_ = json.Unmarshal(m.Raw, &init)
						if init.PermissionMode != tt.mode {
							t.Errorf("turn ran in %q, want %q", init.PermissionMode, tt.mode)
						}
					}
				}
			}
		})
	}

	t.Run("invalid mode", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		if _, err := h.p.SetPermissionMode(context.Background(), "yolo"); !errors.Is(err, agent.ErrInvalidPermissionMode) {
			t.Errorf("got %v, want ErrInvalidPermissionMode", err)
		}
	})
}

func TestMissingExecutable(t *testing.T) {
	t.Parallel()
	notExec := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, program := range []string{"/nonexistent/dir/claude", "claude-not-installed-here", notExec} {
		t.Run(program, func(t *testing.T) {
			t.Parallel()
			p := New(Config{Options: agent.Options{Executable: program}})
			defer p.Close()
			err := p.Send(context.Background(), agent.Turn{Text: "hello"})
			var missing *agent.MissingExecutableError
			if !errors.As(err, &missing) {
				t.Fatalf("got %v, want a MissingExecutableError", err)
			}
			for _, want := range []string{program, "PUT /api/app/provider-path/claude", Name} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if err := p.Start(context.Background()); !errors.As(err, &missing) {
				t.Errorf("start: %v", err)
			}
		})
	}
}

func TestLongLines(t *testing.T) {
	t.Parallel()
	for _, n := range []int{100 << 10, 4 << 20} {
		h := newHarness(t)
		end, before := h.turn("BIG " + itoa(n))
		if len(end.Result) != n {
			t.Errorf("result of %d bytes, want %d", len(end.Result), n)
		}
		var longest int
		for _, e := range before {
			if m, ok := e.(agent.Message); ok {
				longest = max(longest, len(m.Raw))
			}
		}
		if longest <= n {
			t.Errorf("longest line %d bytes, want more than %d", longest, n)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestRawOutputAndStderr(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	end, before := h.turn("RAW")
	isRaw := func(e agent.Event) bool {
		r, ok := e.(agent.RawOutput)
		return ok && r.Line == "[SandboxDebug] fakeclaude: a line that is not JSON"
	}
	if end.IsError || !slices.ContainsFunc(before, isRaw) {
		t.Errorf("events %s: no raw output", kinds(before))
	}
	_, before = h.turn("STDERR")
	var lines []string
	for _, e := range before {
		if s, ok := e.(agent.Stderr); ok {
			lines = append(lines, s.Line)
		}
	}
	// stderr is read by its own goroutine: its lines may trail stdout's.
	for len(lines) < 3 {
		s, _ := waitFor[agent.Stderr](h)
		lines = append(lines, s.Line)
	}
	for i, l := range lines {
		if want := "fakeclaude: warning: stderr chatter " + itoa(i+1); l != want {
			t.Errorf("stderr line %d %q, want %q", i, l, want)
		}
	}
}

func TestImages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.send("ECHO look", agent.Image{MediaType: "image/png", Data: "iVBORw0KGgo="})
	end, _ := waitFor[agent.TurnEnded](h)
	if want := `text="ECHO look" blocks=image/png:12,text`; end.Result != want {
		t.Errorf("fake saw %q, want %q", end.Result, want)
	}
	content := h.inputs()[1]["message"].(map[string]any)["content"]
	want := []any{
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
		map[string]any{"type": "text", "text": "ECHO look"},
	}
	if !jsonEqual(t, content, want) {
		t.Errorf("content %v, want %v", content, want)
	}
	for _, turn := range []agent.Turn{{}, {Images: []agent.Image{{MediaType: "image/png"}}}} {
		if err := h.p.Send(context.Background(), turn); !errors.Is(err, agent.ErrInvalidInput) {
			t.Errorf("send %+v: %v, want ErrInvalidInput", turn, err)
		}
	}
}

func TestCompaction(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.turn("Say hello")
	end, before := h.turn("/compact")
	var phases []string
	for _, e := range before {
		if c, ok := e.(agent.Compaction); ok {
			phases = append(phases, c.Phase+":"+c.Result+c.Trigger)
		}
	}
	want := []string{"started:", "finished:success", "boundary:manual"}
	if !slices.Equal(phases, want) {
		t.Errorf("compaction %q, want %q", phases, want)
	}
	if end.IsError || end.NumTurns != 0 || end.CostUSD == 0 {
		t.Errorf("compaction turn ended %+v", end)
	}
}

func TestAPIError(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	end, before := h.turn("FAIL500")
	if !end.IsError || end.Subtype != "success" || end.APIErrorStatus != 500 || end.TerminalReason != "api_error" || !strings.HasPrefix(end.Result, "API Error: 500") {
		t.Errorf("turn ended %+v", end)
	}
	if !strings.Contains(kinds(before), "message:system/api_retry") {
		t.Errorf("events %s lack the retry notice", kinds(before))
	}
	pid := h.p.PID()
	h.turn("Say hello")
	if h.p.PID() != pid {
		t.Error("an API error ended the process")
	}
}

func TestUnsupportedControlRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	end, before := h.turn("HOOK")
	if want := "host answered error: Unsupported control request subtype: hook_callback"; end.Result != want {
		t.Errorf("result %q, want %q", end.Result, want)
	}
	if !slices.ContainsFunc(before, func(e agent.Event) bool { c, ok := e.(agent.Control); return ok && c.Subtype == "hook_callback" }) {
		t.Errorf("no control event for the request: %s", kinds(before))
	}
}

func TestBypassAsRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the CLI (and the fake) refuse bypassPermissions as root without IS_SANDBOX=1")
	}
	t.Run("IS_SANDBOX set for root", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, func(c *Config) { c.PermissionMode = ModeBypassPermissions })
		if err := h.p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		end, before := h.turn("RUN_BASH")
		if end.IsError || slices.ContainsFunc(before, func(e agent.Event) bool { return e.Kind() == agent.KindPermissionRequest }) {
			t.Errorf("bypass turn: %+v after %s", end, kinds(before))
		}
	})
	t.Run("refused without it", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, func(c *Config) {
			c.PermissionMode = ModeBypassPermissions
			c.Geteuid = func() int { return 1000 } // the provider believes it is not root
		})
		err := h.p.Start(context.Background())
		if !errors.Is(err, agent.ErrProcessExited) || !strings.Contains(err.Error(), "cannot be used with root/sudo privileges") {
			t.Errorf("start: %v", err)
		}
	})
}

func TestClose(t *testing.T) {
	t.Parallel()
	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.turn("Say hello")
		pid := h.p.PID()
		if err := h.p.Close(); err != nil {
			t.Fatal(err)
		}
		exited, _ := waitFor[agent.ProcessExited](h)
		if exited.Cause != agent.ExitClosed || exited.ExitCode != 0 {
			t.Errorf("exited %+v", exited)
		}
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process group %d still there: %v", pid, err)
		}
		if err := h.p.Send(context.Background(), agent.Turn{Text: "hi"}); !errors.Is(err, agent.ErrClosed) {
			t.Errorf("send after close: %v", err)
		}
		if _, err := h.p.SetPermissionMode(context.Background(), ModePlan); !errors.Is(err, agent.ErrClosed) {
			t.Errorf("set mode after close: %v", err)
		}
	})
	t.Run("a process that ignores EOF", func(t *testing.T) {
		t.Parallel()
		const grace = 300 * time.Millisecond
		h := newHarness(t, func(c *Config) { c.CloseGrace = grace })
		h.send("IGNORE_SIGINT")
		h.waitMatch(func(e agent.Event) bool { m, ok := e.(agent.Message); return ok && m.Type == agent.TypeAssistant })
		pid := h.p.PID()
		start := time.Now()
		if err := h.p.Close(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < grace || took > grace+5*time.Second {
			t.Errorf("close took %v, want about %v", took, grace)
		}
		exited, _ := waitFor[agent.ProcessExited](h)
		if exited.Cause != agent.ExitClosed || exited.Signal != "killed" || !exited.TurnRunning {
			t.Errorf("exited %+v", exited)
		}
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process group %d still there: %v", pid, err)
		}
	})
	t.Run("retires a pending permission", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.send("RUN_BASH")
		req, _ := waitFor[agent.PermissionRequest](h)
		if err := h.p.Close(); err != nil {
			t.Fatal(err)
		}
		retired, _ := waitFor[agent.PermissionRetired](h)
		if retired.RequestID != req.RequestID || retired.Reason != agent.RetiredProcessExited {
			t.Errorf("retired %+v", retired)
		}
	})
}

// A conversation the CLI cannot resume ("No conversation found with
// session ID", as after a chat killed before the CLI saved its first turn)
// is replaced by a new one: the turn runs there, ResumeLost says the
// agent's memory is gone, and no exit of the session is reported; later
// turns continue the new conversation.
func TestResumeRefusedStartsANewConversation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.Resume = "6a1f0000-0000-4000-8000-000000000000" })
	end, before := h.turn("Say hello")
	if end.IsError || end.SessionID == "" || end.SessionID == "6a1f0000-0000-4000-8000-000000000000" {
		t.Errorf("turn %+v, want a success in a new conversation", end)
	}
	var lost []agent.ResumeLost
	for _, e := range before {
		switch e := e.(type) {
		case agent.ResumeLost:
			lost = append(lost, e)
		case agent.ProcessExited:
			if e.Cause != agent.ExitRespawn {
				t.Errorf("the refusing process's exit is reported as %+v, want a respawn", e)
			}
		}
	}
	if len(lost) != 1 || lost[0].SessionID != "6a1f0000-0000-4000-8000-000000000000" ||
		!strings.HasPrefix(lost[0].Reason, "No conversation found with session ID") {
		t.Errorf("ResumeLost events %+v (events %s)", lost, kinds(before))
	}
	argvs := h.argvs()
	if len(argvs) != 2 || !slices.Contains(argvs[0], "--resume=6a1f0000-0000-4000-8000-000000000000") ||
		slices.ContainsFunc(argvs[1], func(a string) bool { return strings.HasPrefix(a, "--resume") }) {
		t.Errorf("argvs %q, want the refused --resume, then none", argvs)
	}
	if got := h.p.SessionID(); got != end.SessionID {
		t.Errorf("SessionID %q, want the new conversation %q", got, end.SessionID)
	}
	if again, _ := h.turn("Say hello"); again.SessionID != end.SessionID || again.IsError {
		t.Errorf("next turn %+v, want the new conversation", again)
	}
}
