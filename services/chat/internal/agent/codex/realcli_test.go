//go:build realcli

// Tests of the provider against the REAL `codex app-server` (@openai/codex
// 0.169.0), talking to cmd/fakemodel's OpenAI Responses dialect on loopback
// instead of the real API (shared/protocols/real-cli.md §4). They are
// opt-in: run them with `make test-real-agents`, which installs the pinned
// CLI from npm, starts the fake model and sets the two variables below.
//
//	CODEX_BIN      path of the codex binary to run
//	FAKEMODEL_URL  base URL printed by cmd/fakemodel, e.g. http://127.0.0.1:40123

package codex_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex/codextest"
)

const realHowTo = "run these tests with `make test-real-agents` (deploy/scripts/test-real-agents.sh), " +
	"or set CODEX_BIN to a codex binary and FAKEMODEL_URL to the URL cmd/fakemodel prints"

// realHome makes a CODEX_HOME pointing Codex at the fake model.
func realHome(t *testing.T) (bin, home string) {
	t.Helper()
	bin, url := os.Getenv("CODEX_BIN"), os.Getenv("FAKEMODEL_URL")
	if bin == "" || url == "" {
		t.Fatalf("CODEX_BIN=%q FAKEMODEL_URL=%q: both must be set; %s", bin, url, realHowTo)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("CODEX_BIN: %v; %s", err, realHowTo)
	}
	home = t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(fmt.Sprintf(codextest.RealConfig, url)), 0o600); err != nil {
		t.Fatal(err)
	}
	return bin, home
}

// newReal starts a provider on the real app-server; any outbound HTTPS
// goes to a proxy address where nothing listens.
func newReal(t *testing.T, home string, mutate func(*codex.Config)) *codex.Provider {
	t.Helper()
	bin, _ := realHome(t)
	return newProvider(t, func(c *codex.Config) {
		c.Executable = bin
		c.Env = []string{
			"CODEX_HOME=" + home, "HOME=" + home,
			"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost",
			"OPENAI_API_KEY=", "CODEX_API_KEY=",
		}
		c.RequestTimeout = 60 * time.Second
		if mutate != nil {
			mutate(c)
		}
	})
}

func TestRealCLIText(t *testing.T) {
	_, home := realHome(t)
	p := newReal(t, home, nil)
	send(t, p, "Say hello")
	evs := collect(t, p, "turn end", isTurnEnded)
	end, _ := find[agent.TurnEnded](evs)
	if end.IsError || end.Result != "Hello from the fake model." || end.Usage.InputTokens == 0 || end.Usage.OutputTokens == 0 || end.Model != "mock-model" {
		t.Fatalf("turn ended %+v", end)
	}
	if end.CostUSD == 0 {
		t.Errorf("no cost from the price table: %+v", end)
	}
	if p.SessionID() == "" {
		t.Error("no thread id")
	}
}

func TestRealCLIShellApproval(t *testing.T) {
	_, home := realHome(t)
	p := newReal(t, home, nil) // default mode: untrusted, asks
	send(t, p, "RUN_SHELL please")
	req, _ := find[agent.PermissionRequest](collect(t, p, "permission request", is[agent.PermissionRequest]))
	if req.ToolName != "Bash" || !strings.Contains(string(req.Input), "hello-from-shell") {
		t.Fatalf("permission request %+v", req)
	}
	if err := p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Allow}); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, p, "turn end", isTurnEnded)
	end, _ := find[agent.TurnEnded](evs)
	if end.IsError || !strings.Contains(end.Result, "hello-from-shell") {
		t.Errorf("turn ended %+v", end)
	}
	if b := contentOf(evs, agent.TypeUser, "tool_result"); b == nil || !strings.Contains(fmt.Sprint(b["content"]), "hello-from-shell") {
		t.Errorf("tool result %v", b)
	}
}

func TestRealCLIShellDeny(t *testing.T) {
	_, home := realHome(t)
	cwd := t.TempDir()
	p := newReal(t, home, func(c *codex.Config) { c.Cwd = cwd })
	send(t, p, "RUN_SHELL please")
	req, _ := find[agent.PermissionRequest](collect(t, p, "permission request", is[agent.PermissionRequest]))
	if err := p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Deny}); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, p, "turn end", isTurnEnded)
	if b := contentOf(evs, agent.TypeUser, "tool_result"); b == nil || b["is_error"] != true {
		t.Errorf("declined tool result %v", b)
	}
	if _, err := os.Stat(filepath.Join(cwd, "shell_out.txt")); err == nil {
		t.Error("the declined command ran")
	}
}

func TestRealCLIAllowWritesTheFile(t *testing.T) {
	_, home := realHome(t)
	cwd := t.TempDir()
	p := newReal(t, home, func(c *codex.Config) { c.Cwd = cwd; c.PermissionMode = codex.ModeBypassPermissions })
	send(t, p, "RUN_SHELL please")
	evs := collect(t, p, "turn end", isTurnEnded)
	if _, asked := find[agent.PermissionRequest](evs); asked {
		t.Errorf("bypassPermissions asked")
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "shell_out.txt")); err != nil || string(b) != "hello-from-shell\n" {
		t.Errorf("shell_out.txt: %q, %v", b, err)
	}
}

func TestRealCLIStopAndResume(t *testing.T) {
	_, home := realHome(t)
	p := newReal(t, home, nil)
	send(t, p, "Say hello")
	collect(t, p, "turn end", isTurnEnded)
	thread := p.SessionID()
	send(t, p, "SLOW reply please")
	collect(t, p, "a delta", func(e agent.Event) bool {
		c, ok := e.(agent.Control)
		return ok && c.Subtype == "item/agentMessage/delta"
	})
	if out, err := p.Interrupt(context.Background()); err != nil || out != agent.InterruptForced {
		t.Fatalf("Interrupt = %v, %v", out, err)
	}
	evs := collect(t, p, "exit", is[agent.ProcessExited])
	if end, ok := find[agent.TurnEnded](evs); !ok || !end.Interrupted {
		t.Errorf("interrupted turn %+v", end)
	}
	send(t, p, "Say hello again")
	evs = collect(t, p, "turn end", isTurnEnded)
	if end, _ := find[agent.TurnEnded](evs); end.IsError || p.SessionID() != thread {
		t.Errorf("after the stop: %+v, thread %q want %q", end, p.SessionID(), thread)
	}
}

func TestRealCLIFail500(t *testing.T) {
	_, home := realHome(t)
	p := newReal(t, home, nil)
	send(t, p, "FAIL_500 please")
	end, _ := find[agent.TurnEnded](collect(t, p, "turn end", isTurnEnded))
	if !end.IsError || end.TerminalReason != "failed" || end.Result == "" {
		t.Errorf("failed turn %+v", end)
	}
}

func TestRealCLIFork(t *testing.T) {
	_, home := realHome(t)
	parent := newReal(t, home, nil)
	send(t, parent, "Say hello")
	collect(t, parent, "turn end", isTurnEnded)
	thread := parent.SessionID()
	_ = parent.Close()
	fork := newReal(t, home, func(c *codex.Config) { c.Resume, c.Fork = thread, true })
	send(t, fork, "Say hello again")
	evs := collect(t, fork, "turn end", isTurnEnded)
	for _, e := range evs {
		if s, ok := e.(agent.Stderr); ok && strings.Contains(s.Line, "cannot continue thread") {
			t.Errorf("fork fell back to a new thread: %s", s.Line)
		}
	}
	if fork.SessionID() == "" || fork.SessionID() == thread {
		t.Errorf("fork thread %q, parent %q", fork.SessionID(), thread)
	}
}

// "Always allow for this session" (the acceptForSession suggestion) is a
// decision the real server takes even though its availableDecisions do not
// list it: the command runs, and the same command is not asked again.
func TestRealCLIAcceptForSession(t *testing.T) {
	_, home := realHome(t)
	p := newReal(t, home, nil)
	send(t, p, "RUN_SHELL please")
	req, _ := find[agent.PermissionRequest](collect(t, p, "permission request", is[agent.PermissionRequest]))
	var first map[string]any
	if len(req.Suggestions) == 0 || json.Unmarshal(req.Suggestions[0], &first) != nil || first["type"] != "acceptForSession" {
		t.Fatalf("suggestions %s", req.Suggestions)
	}
	zero := 0
	if err := p.RespondPermission(context.Background(), req.RequestID, agent.PermissionDecision{Behavior: agent.Allow, SuggestionIndex: &zero}); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, p, "turn end", isTurnEnded)
	if end, _ := find[agent.TurnEnded](evs); end.IsError || !strings.Contains(end.Result, "hello-from-shell") {
		t.Fatalf("turn ended %+v", end)
	}
	send(t, p, "RUN_SHELL please")
	evs = collect(t, p, "turn end", isTurnEnded)
	if _, asked := find[agent.PermissionRequest](evs); asked {
		t.Errorf("asked again after acceptForSession: %v", kinds(evs))
	}
}

// An image goes in as turn/start's {"type":"image","url":"data:..."} item,
// which the real server takes: the turn runs and ends.
func TestRealCLIImageInput(t *testing.T) {
	_, home := realHome(t)
	p := newReal(t, home, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// A 1x1 transparent PNG.
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
	if err := p.Send(ctx, agent.Turn{Text: "Say hello", Images: []agent.Image{{MediaType: "image/png", Data: png}}}); err != nil {
		t.Fatalf("Send with an image: %v", err)
	}
	end, _ := find[agent.TurnEnded](collect(t, p, "turn end", isTurnEnded))
	if end.IsError || end.Result != "Hello from the fake model." {
		t.Errorf("turn ended %+v", end)
	}
}
