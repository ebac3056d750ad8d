//go:build realcli

// Tests of the provider against the REAL Claude Code CLI, talking to
// cmd/fakemodel (a scripted fake of the Anthropic Messages API on loopback)
// instead of the real API (shared/protocols/real-cli.md). They are opt-in:
// run them with `make test-real-agents`, which installs the pinned CLI from
// npm, starts the fake model and sets the two variables below.
//
//	CLAUDE_BIN     path of the claude binary to run
//	FAKEMODEL_URL  base URL printed by cmd/fakemodel, e.g. http://127.0.0.1:40123

package claude

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// realBashCommand is what cmd/fakemodel's RUN_BASH script asks Bash to run.
const realBashCommand = "echo hello-from-bash > bash_out.txt && cat bash_out.txt"

const realHowTo = "run these tests with `make test-real-agents` (deploy/scripts/test-real-agents.sh), " +
	"or set CLAUDE_BIN to a Claude Code binary and FAKEMODEL_URL to the URL cmd/fakemodel prints"

// withRealCLI runs the binary named by CLAUDE_BIN against FAKEMODEL_URL, with
// its own HOME and every kind of non-model traffic switched off. Outbound
// HTTPS goes to a proxy address where nothing listens, so any request the
// CLI makes beyond loopback fails fast instead of reaching out.
func withRealCLI(t *testing.T) option {
	t.Helper()
	bin, url := os.Getenv("CLAUDE_BIN"), os.Getenv("FAKEMODEL_URL")
	if bin == "" || url == "" {
		t.Fatalf("CLAUDE_BIN=%q FAKEMODEL_URL=%q: both must be set; %s", bin, url, realHowTo)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("CLAUDE_BIN: %v; %s", err, realHowTo)
	}
	home := t.TempDir() // removed after the provider's Close (cleanups run LIFO)
	return func(c *Config) {
		c.Executable = bin
		c.Env = []string{
			"HOME=" + home,
			"ANTHROPIC_BASE_URL=" + url,
			"ANTHROPIC_API_KEY=sk-ant-dummy-realcli",
			"ANTHROPIC_AUTH_TOKEN=",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_TELEMETRY=1",
			"DISABLE_ERROR_REPORTING=1",
			"DISABLE_AUTOUPDATER=1",
			"CLAUDE_CODE_MAX_RETRIES=1",
			"HTTPS_PROXY=http://127.0.0.1:9",
			"HTTP_PROXY=http://127.0.0.1:9",
			"NO_PROXY=127.0.0.1,localhost",
		}
		c.ExtraArgs = append(c.ExtraArgs, "--setting-sources=")
	}
}

func withExtraArgs(args ...string) option {
	return func(c *Config) { c.ExtraArgs = append(c.ExtraArgs, args...) }
}

func newRealHarness(t *testing.T, opts ...option) *harness {
	t.Helper()
	return newHarness(t, append([]option{withRealCLI(t)}, opts...)...)
}

// checkSuccess fails unless te is a successful, completed turn.
func checkSuccess(t *testing.T, te agent.TurnEnded) {
	t.Helper()
	if te.IsError || te.Subtype != "success" || te.Interrupted {
		t.Fatalf("turn ended %+v, want success", te)
	}
	if te.SessionID == "" {
		t.Errorf("turn ended without a session id: %+v", te)
	}
}

func TestRealCLIText(t *testing.T) {
	h := newRealHarness(t)
	start := time.Now()
	te, before := h.turn("Say hello")
	t.Logf("text turn: %v (process start included)", time.Since(start).Round(time.Millisecond))
	checkSuccess(t, te)
	if te.Result != "Hello from the fake model." {
		t.Errorf("result %q, want the fake model's greeting", te.Result)
	}
	if te.TerminalReason != "completed" && te.TerminalReason != "" {
		t.Errorf("terminal_reason %q", te.TerminalReason)
	}
	var sawInit, sawAssistant bool
	for _, e := range before {
		if m, ok := e.(agent.Message); ok {
			sawInit = sawInit || (m.Type == agent.TypeSystem && m.Subtype == "init")
			sawAssistant = sawAssistant || m.Type == agent.TypeAssistant
		}
	}
	if !sawInit || !sawAssistant {
		t.Errorf("before the result: init %v, assistant %v; events %s", sawInit, sawAssistant, kinds(before))
	}
	if h.p.SessionID() != te.SessionID {
		t.Errorf("SessionID() %q, result's %q", h.p.SessionID(), te.SessionID)
	}

	// The process stays warm: a second turn in it.
	pid := h.p.PID()
	te, _ = h.turn("Say hello again")
	checkSuccess(t, te)
	if h.p.PID() != pid {
		t.Errorf("second turn ran in pid %d, first in %d", h.p.PID(), pid)
	}
}

func TestRealCLIBashAllowed(t *testing.T) {
	h := newRealHarness(t)
	start := time.Now()
	h.send("RUN_BASH please")
	req, _ := waitFor[agent.PermissionRequest](h)
	if req.ToolName != "Bash" {
		t.Fatalf("permission request for %q, want Bash: %s", req.ToolName, req.Raw)
	}
	var input struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(req.Input, &input); err != nil || input.Command != realBashCommand {
		t.Errorf("request input %s (%v), want the fake model's command", req.Input, err)
	}
	if req.ToolUseID == "" {
		t.Errorf("request without tool_use_id: %s", req.Raw)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "bash_out.txt")); err == nil {
		t.Fatal("bash_out.txt exists before the permission was granted")
	}
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	if err := h.p.RespondPermission(ctx, req.RequestID, agent.PermissionDecision{Behavior: agent.Allow}); err != nil {
		t.Fatalf("allow: %v", err)
	}
	te, _ := waitFor[agent.TurnEnded](h)
	t.Logf("Bash turn with permission round trip: %v", time.Since(start).Round(time.Millisecond))
	checkSuccess(t, te)
	if te.Result != "Tool finished: hello-from-bash" {
		t.Errorf("result %q, want the tool's output echoed by the fake model", te.Result)
	}
	if te.NumTurns != 2 {
		t.Errorf("num_turns %d, want 2", te.NumTurns)
	}
	out, err := os.ReadFile(filepath.Join(h.dir, "bash_out.txt"))
	if err != nil || strings.TrimSpace(string(out)) != "hello-from-bash" {
		t.Errorf("bash_out.txt: %q, %v; want the command to have run in the cwd", out, err)
	}
	if err := h.p.RespondPermission(ctx, req.RequestID, agent.PermissionDecision{Behavior: agent.Allow}); !errors.Is(err, agent.ErrPermissionExpired) {
		t.Errorf("answering again: %v, want ErrPermissionExpired", err)
	}
}

func TestRealCLIBashDenied(t *testing.T) {
	h := newRealHarness(t)
	h.send("RUN_BASH please")
	req, _ := waitFor[agent.PermissionRequest](h)
	if req.ToolName != "Bash" {
		t.Fatalf("permission request for %q, want Bash", req.ToolName)
	}
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	err := h.p.RespondPermission(ctx, req.RequestID, agent.PermissionDecision{
		Behavior: agent.Deny, Message: "The user refused this command.",
	})
	if err != nil {
		t.Fatalf("deny: %v", err)
	}
	te, _ := waitFor[agent.TurnEnded](h)
	checkSuccess(t, te)
	if !strings.HasPrefix(te.Result, "Tool finished: The user refused this command.") {
		t.Errorf("result %q, want the refusal fed back to the model", te.Result)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "bash_out.txt")); err == nil {
		t.Error("bash_out.txt exists although the command was denied")
	}
}

func TestRealCLIInterrupt(t *testing.T) {
	// Partial messages show when the fake model has begun streaming.
	h := newRealHarness(t, withExtraArgs("--include-partial-messages"))
	h.send("SLOW please")
	h.waitMatch(func(e agent.Event) bool {
		m, ok := e.(agent.Message)
		return ok && m.Type == "stream_event" && strings.Contains(string(m.Raw), `"text_delta"`)
	})
	pid := h.p.PID()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	out, err := h.p.Interrupt(ctx)
	if err != nil {
		t.Fatalf("interrupt: %v", err)
	}
	if out != agent.InterruptAcknowledged {
		t.Errorf("interrupt outcome %q, want acknowledged", out)
	}
	te, _ := waitFor[agent.TurnEnded](h)
	t.Logf("interrupt to result: %v", time.Since(start).Round(time.Millisecond))
	if !te.Interrupted || !te.IsError {
		t.Errorf("turn ended %+v, want an interrupted (is_error) result", te)
	}

	// The process survives the interrupt and takes the next turn.
	te, _ = h.turn("Say hello")
	checkSuccess(t, te)
	if h.p.PID() != pid {
		t.Errorf("turn after interrupt ran in pid %d, want the same process %d", h.p.PID(), pid)
	}
}
