//go:build realcli

// The CLI session routes against files the REAL CLIs write: Claude Code
// (-p) and Codex (exec) run in a plain project directory against
// cmd/fakemodel, then chat lists the session, renders it, and continues it
// with the same real CLI as the provider, resuming its conversation. Opt-in
// like the provider tests: `make test-real-agents` (which sets the
// variables below) runs them; they also need the PostgreSQL and Redis of
// the other app tests.
//
//	CLAUDE_BIN, CODEX_BIN  the CLIs' binaries
//	FAKEMODEL_URL          base URL printed by cmd/fakemodel

package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex/codextest"
)

const realCLIHowTo = "run these tests with `make test-real-agents` (deploy/scripts/test-real-agents.sh), " +
	"or set CLAUDE_BIN, CODEX_BIN and FAKEMODEL_URL (cmd/fakemodel's URL)"

func realEnv(t *testing.T, bin string) (string, string) {
	t.Helper()
	path, url := os.Getenv(bin), os.Getenv("FAKEMODEL_URL")
	if path == "" || url == "" {
		t.Fatalf("%s=%q FAKEMODEL_URL=%q: both must be set; %s", bin, path, url, realCLIHowTo)
	}
	return path, url
}

// runCLI runs the CLI in dir with env (and nothing of the test's own
// environment but PATH), within a minute.
func runCLI(t *testing.T, dir string, env []string, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", bin, args, err, out)
	}
	return out
}

// renderedConversation is the prompts and assistant texts of the CLI
// session's messages, read from the end in pages of 10.
func renderedConversation(t *testing.T, c *chat, provider, id string) []string {
	t.Helper()
	var out []string
	q := "limit=10"
	for {
		got := c.do(http.MethodGet, "/api/cli-sessions/"+provider+"/"+id+"/messages?"+q, "")
		got.want(t, http.StatusOK, "")
		var page []string
		for _, m := range cliMessages(got) {
			p, _ := m["payload"].(map[string]any)
			switch {
			case m["kind"] == "notice":
				t.Errorf("line %v: %v", m["line"], p)
			case p["type"] == "raw_record":
				t.Logf("line %v: a record the converter does not know, kept raw: %.300v", m["line"], p["record"])
			case m["kind"] == "user_prompt":
				page = append(page, "prompt: "+fmt.Sprint(p["content"]))
			case p["type"] == "assistant":
				msg, _ := p["message"].(map[string]any)
				blocks, _ := msg["content"].([]any)
				for _, b := range blocks {
					if bm, _ := b.(map[string]any); bm["type"] == "text" {
						page = append(page, "text: "+fmt.Sprint(bm["text"]))
					}
				}
			}
		}
		out = append(page, out...)
		if got.body["has_more_before"] != true {
			return out
		}
		q = fmt.Sprintf("limit=10&before=%d", num(got.body["start"]))
	}
}

func continueAndTurn(t *testing.T, c *chat, provider, id, project string) string {
	t.Helper()
	got := c.do(http.MethodPost, "/api/cli-sessions/"+provider+"/"+id+"/continue", "{}")
	got.want(t, http.StatusCreated, "")
	sess, _ := got.body["session"].(map[string]any)
	sid, _ := sess["session_id"].(string)
	if sess["cwd"] != project {
		t.Fatalf("continued session %s", got.raw)
	}
	w, _ := c.join(sid, -1)
	w.send(map[string]any{"type": "user_message", "content": "Say hello again"})
	seen := w.until("result", isResult)
	if res := resultData(seen[len(seen)-1]); res["is_error"] != false {
		t.Fatalf("the continued session's turn: %v", res)
	}
	for _, f := range seen {
		if f.str("type") == "message_stored" && strings.Contains(fmt.Sprint(f["message"]), "could not resume") {
			t.Fatalf("the agent did not resume the CLI's conversation: %v", f)
		}
	}
	return sid
}

func TestRealCLISessionClaude(t *testing.T) {
	bin, url := realEnv(t, "CLAUDE_BIN")
	home, project := t.TempDir(), t.TempDir()
	env := []string{
		"HOME=" + home, "ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-ant-dummy-realcli", "ANTHROPIC_AUTH_TOKEN=",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_MAX_RETRIES=1",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost",
	}
	out := runCLI(t, project, env, bin, "-p", "Say hello", "--output-format", "json", "--setting-sources=")
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(out[strings.LastIndexByte(string(out[:len(out)-1]), '\n')+1:], &res); err != nil || res.SessionID == "" {
		t.Fatalf("claude -p printed %s (%v)", out, err)
	}
	out = runCLI(t, project, env, bin, "-p", "RUN_BASH please", "--resume", res.SessionID, "--allowedTools", "Bash",
		"--output-format", "json", "--setting-sources=")
	t.Logf("second run: %.300s", out)

	c := startInstance(t, pgmigratetest.MustSchema(t), map[string]string{"HOME": home}, notFound, env, nil)
	c.do(http.MethodPut, "/api/app/provider-path/claude", `{"path":`+quote(bin)+`}`).want(t, http.StatusOK, "")
	list := cliSessions(c.do(http.MethodGet, "/api/cli-sessions", ""))
	if len(list) != 1 || list[0]["id"] != res.SessionID || list[0]["title"] != "Say hello" || list[0]["project"] != project {
		t.Fatalf("listing %v", list)
	}
	want := "prompt: Say hello|text: Hello from the fake model.|prompt: RUN_BASH please|text: I will run a command.|text: Tool finished: hello-from-bash"
	if got := strings.Join(renderedConversation(t, c, "claude", res.SessionID), "|"); got != want {
		t.Errorf("rendered %q\nwant     %q", got, want)
	}

	sid := continueAndTurn(t, c, "claude", res.SessionID, project)
	// --resume keeps the CLI's session: the turn is in the same file.
	if got := strings.Join(renderedConversation(t, c, "claude", res.SessionID), "|"); !strings.HasPrefix(got, want+"|prompt: Say hello again|text: Hello from the fake model.") {
		t.Errorf("after continuing, rendered %q", got)
	}
	list = cliSessions(c.do(http.MethodGet, "/api/cli-sessions", ""))
	if len(list) != 1 || list[0]["svc_session_id"] != sid {
		t.Errorf("listing after continuing %v", list)
	}
}

func TestRealCLISessionCodex(t *testing.T) {
	bin, url := realEnv(t, "CODEX_BIN")
	home, project := t.TempDir(), t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(fmt.Sprintf(codextest.RealConfig, url)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"HOME=" + home, "CODEX_HOME=" + codexHome, "OPENAI_API_KEY=", "CODEX_API_KEY=",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost",
	}
	runCLI(t, project, env, bin, "exec", "--skip-git-repo-check", "Say hello")
	files, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("rollouts %v", files)
	}
	id := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	id = id[len(id)-36:]
	runCLI(t, project, env, bin, "exec", "--skip-git-repo-check", "-s", "danger-full-access", "resume", id, "RUN_SHELL please")

	c := startInstance(t, pgmigratetest.MustSchema(t), map[string]string{"HOME": home}, notFound, env, nil)
	c.do(http.MethodPut, "/api/app/provider-path/codex", `{"path":`+quote(bin)+`}`).want(t, http.StatusOK, "")
	list := cliSessions(c.do(http.MethodGet, "/api/cli-sessions", ""))
	if len(list) != 1 || list[0]["id"] != id || list[0]["title"] != "Say hello" || list[0]["project"] != project {
		t.Fatalf("listing %v", list)
	}
	want := "prompt: Say hello|text: Hello from the fake model.|prompt: RUN_SHELL please|text: Tool finished: hello-from-shell"
	if got := strings.Join(renderedConversation(t, c, "codex", id), "|"); got != want {
		t.Errorf("rendered %q\nwant     %q", got, want)
	}

	sid := continueAndTurn(t, c, "codex", id, project)
	// thread/resume keeps the thread: the turn is in the same rollout.
	if got := strings.Join(renderedConversation(t, c, "codex", id), "|"); got != want+"|prompt: Say hello again|text: Hello from the fake model." {
		t.Errorf("after continuing, rendered %q", got)
	}
	list = cliSessions(c.do(http.MethodGet, "/api/cli-sessions", ""))
	if len(list) != 1 || list[0]["svc_session_id"] != sid {
		t.Errorf("listing after continuing %v", list)
	}
}
