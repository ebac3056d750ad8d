package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
)

// The transcripts Claude Code 2.1.330 and Codex 0.169.0 wrote against
// cmd/fakemodel (internal/clisessions/testdata), in the directory
// /tmp/cliwork/proj and /tmp/cliwork/xproj.
const (
	cliClaudeID = "4f76bc7a-af23-4a3d-9b3e-05f8f0f1c03b"
	cliCodexID  = "01a21b7b-d8f3-7ee2-9179-0854450fbf7b"
	cliTestdata = "../clisessions/testdata"
)

// cliHome is a HOME with the two transcripts, rewritten to have run in
// project (a directory of the test's own): Claude Code's under
// .claude/projects, Codex's under .codex/sessions. It returns the files.
func cliHome(t *testing.T, home, project string) (claudeFile, codexFile string) {
	t.Helper()
	copyTo := func(src, dst, from string) string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte(from), []byte(project))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	projDir := strings.ReplaceAll(project, "/", "-")
	claudeFile = copyTo(filepath.Join(cliTestdata, "claude/projects/-tmp-cliwork-proj", cliClaudeID+".jsonl"),
		filepath.Join(home, ".claude", "projects", projDir, cliClaudeID+".jsonl"), "/tmp/cliwork/proj")
	rollout := "rollout-2026-11-27T05-30-31-" + cliCodexID + ".jsonl"
	codexFile = copyTo(filepath.Join(cliTestdata, "codex/sessions/2026/11/27", rollout),
		filepath.Join(home, ".codex", "sessions", "2026", "11", "27", rollout), "/tmp/cliwork/xproj")
	return claudeFile, codexFile
}

// startCLIChat starts chat with HOME home (so its CLI session roots are
// home's), the fake agents as the providers' programs, and agentEnv.
func startCLIChat(t *testing.T, home string, agentEnv ...string) *chat {
	t.Helper()
	agentEnv = append([]string{"HOME=" + home, "CODEX_HOME=" + filepath.Join(home, ".codex")}, agentEnv...)
	c := startInstance(t, pgmigratetest.MustSchema(t), map[string]string{"HOME": home}, notFound, agentEnv, nil)
	c.do(http.MethodPut, "/api/app/provider-path/claude", `{"path":`+quote(fake(t))+`}`).want(t, http.StatusOK, "")
	c.do(http.MethodPut, "/api/app/provider-path/codex", `{"path":`+quote(fakeCodex(t))+`}`).want(t, http.StatusOK, "")
	return c
}

func cliSessions(a answer) []map[string]any {
	list, _ := a.body["sessions"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, s := range list {
		m, _ := s.(map[string]any)
		out = append(out, m)
	}
	return out
}

func cliMessages(a answer) []map[string]any {
	list, _ := a.body["messages"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, s := range list {
		m, _ := s.(map[string]any)
		out = append(out, m)
	}
	return out
}

func num(v any) int64 { f, _ := v.(float64); return int64(f) }

func TestCLISessionsList(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	claudeFile, codexFile := cliHome(t, home, project)
	older := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(claudeFile, older, older); err != nil {
		t.Fatal(err)
	}
	c := startCLIChat(t, home)

	got := c.do(http.MethodGet, "/api/cli-sessions", "")
	got.want(t, http.StatusOK, "")
	list := cliSessions(got)
	if num(got.body["total"]) != 2 || len(list) != 2 {
		t.Fatalf("listing %s", got.raw)
	}
	codexInfo, _ := os.Stat(codexFile)
	claudeInfo, _ := os.Stat(claudeFile)
	x, cl := list[0], list[1]
	if x["provider"] != "codex" || x["id"] != cliCodexID || x["project"] != project || x["title"] != "Say hello" ||
		num(x["size"]) != codexInfo.Size() || x["svc_session_id"] != nil {
		t.Errorf("codex entry (newest first) %v", x)
	}
	if cl["provider"] != "claude" || cl["id"] != cliClaudeID || cl["project"] != project || cl["title"] != "Say hello" ||
		num(cl["size"]) != claudeInfo.Size() || cl["last_activity"] != older.Format(time.RFC3339) {
		t.Errorf("claude entry %v", cl)
	}
	if _, ok := cl["file"]; ok {
		t.Errorf("the listing names files: %v", cl)
	}

	for q, want := range map[string]int{
		"provider=claude": 1, "provider=codex": 1, "q=SAY+HELLO": 2, "q=nothing-like-it": 0,
		"limit=1": 1, "offset=1": 1, "offset=2": 0,
	} {
		got := c.do(http.MethodGet, "/api/cli-sessions?"+q, "")
		got.want(t, http.StatusOK, "")
		if len(cliSessions(got)) != want {
			t.Errorf("?%s: %s, want %d sessions", q, got.raw, want)
		}
	}
	if got := c.do(http.MethodGet, "/api/cli-sessions?limit=1&offset=1", ""); cliSessions(got)[0]["provider"] != "claude" || num(got.body["total"]) != 2 {
		t.Errorf("second page %s", got.raw)
	}
	for _, q := range []string{"provider=gemini", "limit=0", "limit=501", "offset=-1", "limit=x"} {
		c.do(http.MethodGet, "/api/cli-sessions?"+q, "").want(t, http.StatusBadRequest, "bad_request")
	}

	one := c.do(http.MethodGet, "/api/cli-sessions/claude/"+cliClaudeID, "")
	one.want(t, http.StatusOK, "")
	if one.str("file") != strings.ReplaceAll(project, "/", "-")+"/"+cliClaudeID+".jsonl" || one.str("title") != "Say hello" {
		t.Errorf("one session %s", one.raw)
	}
	c.do(http.MethodGet, "/api/cli-sessions/codex/"+cliClaudeID, "").want(t, http.StatusNotFound, "not_found")
	c.do(http.MethodGet, "/api/cli-sessions/claude/55555555-aaaa-4aaa-8aaa-555555555555", "").want(t, http.StatusNotFound, "not_found")
}

func TestCLISessionsRefuseBadIDs(t *testing.T) {
	home := t.TempDir()
	cliHome(t, home, t.TempDir())
	c := startCLIChat(t, home)
	for _, p := range []string{
		"/api/cli-sessions/claude/..", "/api/cli-sessions/claude/.%2E", "/api/cli-sessions/claude/..%2F..%2Fetc%2Fpasswd",
		"/api/cli-sessions/claude/a.jsonl", "/api/cli-sessions/claude/a%00b", "/api/cli-sessions/claude/%2Fetc%2Fpasswd",
		"/api/cli-sessions/gemini/" + cliClaudeID, "/api/cli-sessions/..%2Fclaude/" + cliClaudeID,
	} {
		for _, suffix := range []string{"", "/messages"} {
			c.do(http.MethodGet, p+suffix, "").want(t, http.StatusBadRequest, "bad_request")
		}
		c.do(http.MethodPost, p+"/continue", "{}").want(t, http.StatusBadRequest, "bad_request")
	}
	// A route with the id's slash in it is no route at all.
	if got := c.do(http.MethodGet, "/api/cli-sessions/claude/../../etc/passwd/messages", ""); got.status != http.StatusNotFound && got.status != http.StatusBadRequest {
		t.Errorf("raw dot-dot path: %d %s", got.status, got.raw)
	}
	id := "/api/cli-sessions/claude/" + cliClaudeID + "/messages"
	for _, q := range []string{"before=-1", "before=x", "after=1.5", "before=0&after=0", "wait=3", "after=0&wait=31", "limit=0", "limit=2001"} {
		c.do(http.MethodGet, id+"?"+q, "").want(t, http.StatusBadRequest, "bad_request")
	}
}

func TestCLISessionMessages(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	claudeFile, _ := cliHome(t, home, project)
	c := startCLIChat(t, home)
	base := "/api/cli-sessions/claude/" + cliClaudeID + "/messages"
	info, _ := os.Stat(claudeFile)

	got := c.do(http.MethodGet, base, "")
	got.want(t, http.StatusOK, "")
	msgs := cliMessages(got)
	if len(msgs) != 35 || num(got.body["start"]) != 0 || num(got.body["end"]) != info.Size() ||
		num(got.body["size"]) != info.Size() || got.body["has_more_before"] != false {
		t.Fatalf("whole file: %d messages, %v %v %v %v", len(msgs), got.body["start"], got.body["end"], got.body["size"], got.body["has_more_before"])
	}
	var prompts []string
	for i, m := range msgs {
		if num(m["line"]) != int64(i+1) || m["sid"] != fmt.Sprintf("%s:%d", cliClaudeID, i+1) {
			t.Errorf("message %d: line %v sid %v", i, m["line"], m["sid"])
		}
		p, _ := m["payload"].(map[string]any)
		if m["kind"] == "user_prompt" {
			prompts = append(prompts, p["content"].(string))
		}
		if m["kind"] == "notice" || p["type"] == "raw_record" {
			t.Errorf("line %d of a real file: %v", i+1, m)
		}
	}
	if strings.Join(prompts, "|") != "Say hello|RUN_BASH please" {
		t.Errorf("prompts %q", prompts)
	}
	if msgs[2]["created_at"] != "2026-11-27T05:30:16.113Z" {
		t.Errorf("the prompt's time %v, want the record's", msgs[2]["created_at"])
	}

	// Backwards from the end, ten at a time.
	got = c.do(http.MethodGet, base+"?limit=10", "")
	page := cliMessages(got)
	if len(page) != 10 || num(page[0]["line"]) != 26 || got.body["has_more_before"] != true {
		t.Fatalf("last page %s", got.raw)
	}
	start := num(got.body["start"])
	got = c.do(http.MethodGet, fmt.Sprintf("%s?limit=10&before=%d", base, start), "")
	if page := cliMessages(got); len(page) != 10 || num(page[0]["line"]) != 16 || num(got.body["end"]) != start {
		t.Fatalf("page before %d: %s", start, got.raw)
	}
	c.do(http.MethodGet, base+"?before=3", "").want(t, http.StatusConflict, "conflict")
	c.do(http.MethodGet, fmt.Sprintf("%s?before=%d", base, info.Size()+1), "").want(t, http.StatusConflict, "conflict")

	// Follow: a line appended while the request waits.
	end := info.Size()
	waited := make(chan answer, 1)
	go func() {
		waited <- c.do(http.MethodGet, fmt.Sprintf("%s?after=%d&wait=8", base, end), "")
	}()
	unknown := `{"type":"hologram","beam":1}`
	appendTo(t, claudeFile, unknown+"\n")
	got = <-waited
	got.want(t, http.StatusOK, "")
	page = cliMessages(got)
	if len(page) != 1 || num(page[0]["line"]) != 36 || num(got.body["start"]) != end {
		t.Fatalf("follow: %s", got.raw)
	}
	if p, _ := json.Marshal(page[0]["payload"]); string(p) != `{"record":{"beam":1,"type":"hologram"},"type":"raw_record"}` {
		t.Errorf("unknown record: %s", p)
	}
	end = num(got.body["end"])
	// A partial line waits for its newline; then a broken line is a parse
	// error naming the file and the line.
	appendTo(t, claudeFile, `{"type":"user","mess`)
	got = c.do(http.MethodGet, fmt.Sprintf("%s?after=%d&wait=0", base, end), "")
	if len(cliMessages(got)) != 0 || num(got.body["end"]) != end {
		t.Fatalf("partial line: %s", got.raw)
	}
	appendTo(t, claudeFile, "\n")
	got = c.do(http.MethodGet, fmt.Sprintf("%s?after=%d&wait=1", base, end), "")
	page = cliMessages(got)
	if len(page) != 1 || page[0]["kind"] != "notice" {
		t.Fatalf("broken line: %s", got.raw)
	}
	p, _ := page[0]["payload"].(map[string]any)
	wantFile := strings.ReplaceAll(project, "/", "-") + "/" + cliClaudeID + ".jsonl"
	if p["type"] != "parse_error" || p["file"] != wantFile || num(p["line"]) != 37 || !strings.Contains(p["content"].(string), wantFile+", line 37") {
		t.Errorf("parse error %v", p)
	}
	// Truncated under the reader: 409, so the page reads it again.
	if err := os.Truncate(claudeFile, 100); err != nil {
		t.Fatal(err)
	}
	c.do(http.MethodGet, fmt.Sprintf("%s?after=%d", base, num(got.body["end"])), "").want(t, http.StatusConflict, "conflict")
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// fakeCodexIn returns the messages fakecodex processes that logged to path
// (FAKECODEX_LOG) read on stdin.
func fakeCodexIn(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec struct {
			Dir string         `json:"dir"`
			Msg map[string]any `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Dir == "in" {
			out = append(out, rec.Msg)
		}
	}
	return out
}

func TestCLISessionContinueClaude(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	cliHome(t, home, project)
	logPath := filepath.Join(t.TempDir(), "claude.log")
	c := startCLIChat(t, home, "FAKECLAUDE_LOG="+logPath)

	got := c.do(http.MethodPost, "/api/cli-sessions/claude/"+cliClaudeID+"/continue", "{}")
	got.want(t, http.StatusCreated, "")
	sess, _ := got.body["session"].(map[string]any)
	cli, _ := got.body["cli_session"].(map[string]any)
	id, _ := sess["session_id"].(string)
	if id == "" || sess["cwd"] != project || sess["provider"] != "agent-sdk" || sess["title"] != "Say hello" ||
		cli["id"] != cliClaudeID || cli["svc_session_id"] != id || got.body["existing"] != nil {
		t.Fatalf("continue: %s", got.raw)
	}
	// The listing links the CLI session to it; continuing again gives it.
	list := cliSessions(c.do(http.MethodGet, "/api/cli-sessions?provider=claude", ""))
	if len(list) != 1 || list[0]["svc_session_id"] != id {
		t.Errorf("listing after continue: %v", list)
	}
	again := c.do(http.MethodPost, "/api/cli-sessions/claude/"+cliClaudeID+"/continue", "")
	again.want(t, http.StatusOK, "")
	if s, _ := again.body["session"].(map[string]any); s["session_id"] != id || again.body["existing"] != true {
		t.Errorf("second continue: %s", again.raw)
	}

	// Its first turn resumes the CLI's session.
	w, _ := c.join(id, -1)
	w.send(map[string]any{"type": "user_message", "content": "hello again"})
	w.until("result", isResult)
	argv := fakeArgv(t, logPath)
	if len(argv) != 1 || !hasResumeOf(argv[0], cliClaudeID) {
		t.Errorf("agent argv %q, want --resume %s", argv, cliClaudeID)
	}
	s := c.waitSession(id, func(a answer) bool { return a.body["turns"] == float64(1) })
	if s.body["turns"] != float64(1) {
		t.Errorf("session after the turn: %s", s.raw)
	}
}

func hasResumeOf(argv []string, id string) bool {
	for i, a := range argv {
		if a == "--resume="+id || (a == "--resume" && i+1 < len(argv) && argv[i+1] == id) {
			return true
		}
	}
	return false
}

func TestCLISessionContinueCodex(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	cliHome(t, home, project)
	logPath := filepath.Join(t.TempDir(), "codex.log")
	c := startCLIChat(t, home, "FAKECODEX_LOG="+logPath, "FAKECODEX_DELAY=10ms")

	got := c.do(http.MethodPost, "/api/cli-sessions/codex/"+cliCodexID+"/continue", `{"title":"from the terminal"}`)
	got.want(t, http.StatusCreated, "")
	sess, _ := got.body["session"].(map[string]any)
	id, _ := sess["session_id"].(string)
	if sess["cwd"] != project || sess["provider"] != "app-server" || sess["title"] != "from the terminal" {
		t.Fatalf("continue: %s", got.raw)
	}
	w, _ := c.join(id, -1)
	w.send(map[string]any{"type": "user_message", "content": "hello again"})
	seen := w.until("result", isResult)
	if res := resultData(seen[len(seen)-1]); res["is_error"] != false {
		t.Errorf("result %v", res)
	}
	var resumed []any
	for _, m := range fakeCodexIn(t, logPath) {
		switch m["method"] {
		case "thread/resume":
			p, _ := m["params"].(map[string]any)
			resumed = append(resumed, p["threadId"])
		case "thread/start":
			t.Errorf("the agent started a new thread: %v", m)
		}
	}
	if len(resumed) != 1 || resumed[0] != cliCodexID {
		t.Errorf("thread/resume of %v, want %s", resumed, cliCodexID)
	}
	for _, f := range seen {
		if f.str("type") == "message_stored" && strings.Contains(fmt.Sprint(f["message"]), "could not resume") {
			t.Errorf("resume lost: %v", f)
		}
	}
	list := cliSessions(c.do(http.MethodGet, "/api/cli-sessions?provider=codex", ""))
	if len(list) != 1 || list[0]["svc_session_id"] != id {
		t.Errorf("listing after continue: %v", list)
	}
}

func TestCLISessionContinueRefusals(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	cliHome(t, home, project)
	c := startCLIChat(t, home)
	base := "/api/cli-sessions/claude/" + cliClaudeID + "/continue"
	c.do(http.MethodPost, "/api/cli-sessions/claude/55555555-aaaa-4aaa-8aaa-555555555555/continue", "{}").want(t, http.StatusNotFound, "not_found")
	c.do(http.MethodPost, base, `{"cwd":"/"}`).want(t, http.StatusBadRequest, "bad_request")
	c.do(http.MethodPost, base, `{"title":"`+strings.Repeat("x", 501)+`"}`).want(t, http.StatusBadRequest, "bad_request")
	c.send(http.MethodPost, base, `{}`, "text/plain", testSecret).want(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
	// The project directory is gone: nothing is created.
	if err := os.Remove(project); err != nil {
		t.Fatal(err)
	}
	c.do(http.MethodPost, base, "{}").want(t, http.StatusConflict, "conflict")
	if got := c.do(http.MethodGet, "/api/sessions", ""); len(got.body["sessions"].([]any)) != 0 {
		t.Errorf("sessions after refusals: %s", got.raw)
	}
}

// TestCLIContinuedProviderLocked: a session made by "Continue here" resumes
// the CLI's conversation through its provider session id, so its provider
// is locked from the start (switching would silently lose the resume), and
// the session object says which CLI session it continues (cli_session),
// until a clear moves that conversation to the archived copy.
func TestCLIContinuedProviderLocked(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	cliHome(t, home, project)
	c := startCLIChat(t, home)

	got := c.do(http.MethodPost, "/api/cli-sessions/claude/"+cliClaudeID+"/continue", "{}")
	got.want(t, http.StatusCreated, "")
	sess, _ := got.body["session"].(map[string]any)
	id, _ := sess["session_id"].(string)
	ref, _ := sess["cli_session"].(map[string]any)
	if sess["provider_locked"] != true || sess["turns"] != float64(0) || ref["provider"] != "claude" || ref["id"] != cliClaudeID {
		t.Fatalf("continued session: %s", got.raw)
	}
	before := c.do(http.MethodGet, "/api/session/"+id, "")
	before.want(t, http.StatusOK, "")

	// The switch is refused with a reason, and changes nothing.
	refused := c.do(http.MethodPut, "/api/session/"+id+"/provider", `{"provider":"app-server"}`)
	refused.want(t, http.StatusConflict, "provider_locked")
	if msg := refused.str("message"); !strings.Contains(msg, cliClaudeID) || !strings.Contains(msg, "Claude Code") {
		t.Errorf("refusal message %q does not name the CLI session", msg)
	}
	after := c.do(http.MethodGet, "/api/session/"+id, "")
	if after.raw != before.raw {
		t.Errorf("session changed by a refused switch:\n%s\n%s", before.raw, after.raw)
	}
	// Asking for the provider it has is fine (nothing to change).
	c.do(http.MethodPut, "/api/session/"+id+"/provider", `{"provider":"agent-sdk"}`).want(t, http.StatusOK, "")

	// The listing carries cli_session too; a plain session has none and
	// still switches.
	plain := c.mustSession(project)
	for _, s := range c.do(http.MethodGet, "/api/sessions", "").body["sessions"].([]any) {
		m := s.(map[string]any)
		_, has := m["cli_session"]
		if has != (m["session_id"] == id) {
			t.Errorf("listed session %v: cli_session present = %v", m["session_id"], has)
		}
	}
	c.do(http.MethodPut, "/api/session/"+plain+"/provider", `{"provider":"app-server"}`).want(t, http.StatusOK, "")

	// A row that holds an agent conversation id without the lock (made
	// before the lock existed) is refused all the same.
	if _, err := c.db.Exec(context.Background(),
		`UPDATE sessions SET provider_session_id = 'conv-1', provider_locked = false WHERE id = $1`, plain); err != nil {
		t.Fatal(err)
	}
	old := c.do(http.MethodPut, "/api/session/"+plain+"/provider", `{"provider":"agent-sdk"}`)
	old.want(t, http.StatusConflict, "provider_locked")
	if !strings.Contains(old.str("message"), "conv-1") {
		t.Errorf("refusal message %q", old.str("message"))
	}
	if p := c.do(http.MethodGet, "/api/session/"+plain, "").str("provider"); p != "app-server" {
		t.Errorf("provider after refusal = %q", p)
	}

	// Clear moves the conversation, and the link, to the archived copy.
	w, _ := c.join(id, -1)
	w.send(map[string]any{"type": "clear_session"})
	cleared := w.until("session_cleared", isType("session_cleared"))
	archived := cleared[len(cleared)-1].str("archived_session_id")
	if cur := c.do(http.MethodGet, "/api/session/"+id, ""); cur.body["cli_session"] != nil {
		t.Errorf("cleared session still links the transcript: %s", cur.raw)
	}
	arch := c.do(http.MethodGet, "/api/session/"+archived, "")
	if r, _ := arch.body["cli_session"].(map[string]any); r["id"] != cliClaudeID || r["provider"] != "claude" {
		t.Errorf("archived copy: %s", arch.raw)
	}
}
