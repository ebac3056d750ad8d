package app

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShadowJournalsChatTurns runs the real chat (with the fake Claude
// Code), the real shadow and this gateway. During a /chat turn the
// project's files change the way an agent changes them (a file edited, a
// file made by a shell command); the turn's end gives a journal commit with
// both, readable with plain git, and an undo through the gateway puts the
// files back.
func TestShadowJournalsChatTurns(t *testing.T) {
	root := repoRoot(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/",
		"./services/chat/cmd/chat", "./services/shadow/cmd/shadow", "./services/chat/cmd/fakeclaude")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "a.txt"), []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	home := t.TempDir()
	prefix := "test:" + randomHex(6) + ":"
	env := append(os.Environ(),
		"SVC_CODE_HOME="+home, "SVC_INTERNAL_SECRET="+testSecret, "SVC_INTERNAL_SECRET_FILE=",
		"REDIS_URL="+redisURL(), "REDIS_PREFIX="+prefix, "LOG_FORMAT=json",
		"DATABASE_URL="+testSchemaURL(t), "HOME="+t.TempDir(),
	)
	chatAddr, shadowAddr := freeAddr(t), freeAddr(t)
	startProc(t, filepath.Join(bin, "chat"), append(env, "CHAT_ADDR="+chatAddr))
	startProc(t, filepath.Join(bin, "shadow"), append(env, "SHADOW_ADDR="+shadowAddr, "SHADOW_CONSUMER=e2e"))
	g := startGateway(t, func(env map[string]string, _ *Config) {
		env[EnvChatURL] = "http://" + chatAddr
		env[EnvShadowURL] = "http://" + shadowAddr
		env["REDIS_PREFIX"] = prefix
	})
	tok := g.token()
	jsonAuth := map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
	fake, _ := json.Marshal(map[string]string{"path": filepath.Join(bin, "fakeclaude")})
	wantStatus(t, g.do(req{method: "PUT", path: "/api/app/provider-path/claude", body: string(fake), headers: jsonAuth}), 200, "")

	ws, status, err := g.dialWS("/chat?cwd="+url.QueryEscape(project), http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		t.Fatalf("dial /chat: %v (status %d)", err, status)
	}
	t.Cleanup(func() { _ = ws.Close() })
	c := &chatSocket{t: t, ws: ws}
	connected := c.until("connected", func(f map[string]any) bool { return f["type"] == "connected" })
	session, _ := connected["session_id"].(string)
	cwd := url.QueryEscape(project)

	// The turn starts and waits on its permission ask; shadow has made the
	// session's branch (with the baseline) by then.
	c.send(map[string]any{"type": "user_message", "content": "RUN_BASH please"})
	ask := c.until("permission_request", func(f map[string]any) bool { return f["type"] == "permission_request" })
	waitFor(t, 30*time.Second, "the session's branch in the journal", func() bool {
		r := g.do(req{path: "/api/shadow/branches?cwd=" + cwd, headers: bearer(tok)})
		return r.status == 200 && strings.Contains(r.body, `"session/`+session+`"`)
	})
	// What the agent does: an edit, and a file made by a shell command.
	if err := os.WriteFile(filepath.Join(project, "a.txt"), []byte("edited by the agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("sh", "-c", "echo from-the-shell > made.txt")
	sh.Dir = project
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("shell: %v\n%s", err, out)
	}
	c.send(map[string]any{"type": "permission_response", "request_id": ask["request_id"], "behavior": "allow"})
	c.until("result", isResultFrame)

	waitFor(t, 30*time.Second, "the turn's commit", func() bool {
		r := g.do(req{path: "/api/shadow/log?session=" + url.QueryEscape(session) + "&cwd=" + cwd, headers: bearer(tok)})
		return r.status == 200 && strings.Contains(r.body, `"kind":"turn"`)
	})
	sum := sha256.Sum256([]byte(project))
	gitDir := filepath.Join(home, "projects", hex.EncodeToString(sum[:])[:16], "shadow-git")
	out, err := exec.Command("git", "--git-dir="+gitDir, "log", "-p").CombinedOutput()
	if err != nil {
		t.Fatalf("git log -p: %v\n%s", err, out)
	}
	for _, want := range []string{"turn 1: RUN_BASH please", "+edited by the agent", "+from-the-shell", "Shadow-Session: " + session} {
		if !strings.Contains(string(out), want) {
			t.Errorf("git --git-dir=%s log -p lacks %q:\n%s", gitDir, want, out)
		}
	}

	changes := g.do(req{path: "/api/sessions/" + url.PathEscape(session) + "/changes", headers: bearer(tok)})
	wantStatus(t, changes, 200, "")
	if !strings.Contains(changes.body, `"path":"made.txt"`) || !strings.Contains(changes.body, "+from-the-shell") {
		t.Errorf("session changes: %s", changes.body)
	}

	// The shadow-git helper reads the same journal with plain git.
	shadowGit := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, "deploy", "helpers", "shadow-git"), args...)
		cmd.Dir = project
		cmd.Env = append(os.Environ(), "SVC_CODE_HOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("shadow-git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := shadowGit("sessions"); !strings.HasPrefix(out, session+"\t") {
		t.Errorf("shadow-git sessions: %q", out)
	}
	if out := shadowGit("branches"); !strings.Contains(out, "session/"+session+"\t") {
		t.Errorf("shadow-git branches: %q", out)
	}
	if out := shadowGit("search", "from-the-shell"); !strings.Contains(out, "turn 1: RUN_BASH please") || !strings.Contains(out, "made.txt") {
		t.Errorf("shadow-git search: %q", out)
	}
	if out := shadowGit("show", "session/"+session+":made.txt"); out != "from-the-shell\n" {
		t.Errorf("shadow-git show: %q", out)
	}

	// The helpers install through the gateway, into shadow's home.
	st := g.do(req{path: "/api/app/helpers/status", headers: bearer(tok)})
	wantStatus(t, st, 200, "")
	if !strings.Contains(st.body, `"all_current":false`) {
		t.Errorf("helpers status before install: %s", st.body)
	}
	inst := g.do(req{method: "POST", path: "/api/app/helpers/install", headers: bearer(tok)})
	wantStatus(t, inst, 200, "")
	if !strings.Contains(inst.body, `"all_current":true`) {
		t.Errorf("helpers install: %s", inst.body)
	}

	undo := g.do(req{method: "POST", path: "/api/shadow/undo?cwd=" + cwd, body: `{"session_id":"` + session + `"}`, headers: jsonAuth})
	wantStatus(t, undo, 200, "")
	if b, _ := os.ReadFile(filepath.Join(project, "a.txt")); string(b) != "original\n" {
		t.Errorf("a.txt after undo = %q", b)
	}
	if _, err := os.Stat(filepath.Join(project, "made.txt")); !os.IsNotExist(err) {
		t.Errorf("made.txt after undo: %v, want it gone", err)
	}
	wantStatus(t, g.do(req{path: "/api/shadow/log?cwd=" + url.QueryEscape(t.TempDir()), headers: bearer(tok)}), 404, "not_found")
}
