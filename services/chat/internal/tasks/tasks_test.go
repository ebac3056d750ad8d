package tasks

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
)

const testSecret = "0123456789abcdef-tasks-tests"

// newApp serves the task routes over roots, as chat does.
func newApp(t *testing.T, f *Finder) *fiber.App {
	t.Helper()
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	app := svchttp.New(svchttp.Config{Service: "chat", Secret: internalauth.FromString(testSecret), BodyLimit: 1 << 20, Log: log})
	Register(app, Deps{Finder: f, Sessions: fakeSessions{"CHAT1": "0f6c-uuid", "CHAT2": ""}, Log: log})
	return app
}

// fakeSessions maps chat session ids to agent session uuids; the app
// tests run PGSessions against PostgreSQL.
type fakeSessions map[string]string

func (f fakeSessions) ChatSessions(_ context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for chat, agentID := range f {
		for _, id := range ids {
			if id == agentID {
				out[agentID] = chat
			}
		}
	}
	return out, nil
}

func (f fakeSessions) AgentSession(_ context.Context, id string) (string, error) {
	agentID, ok := f[id]
	if !ok {
		return "", ErrNoSession
	}
	return agentID, nil
}

type answer struct {
	status int
	body   map[string]any
	raw    string
}

func get(t *testing.T, app *fiber.App, path string) answer {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set(protocol.HeaderInternal, testSecret)
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, raw: string(raw)}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("GET %s: not JSON: %s", path, raw)
	}
	return a
}

func (a answer) want(t *testing.T, status int, code string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("got %d %s, want %d", a.status, a.raw, status)
	}
	if got, _ := a.body["error"].(string); code != "" && got != code {
		t.Fatalf("got error %q (%s), want %q", got, a.raw, code)
	}
}

func mustWrite(t *testing.T, path, content string, mtime time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

func TestProjectKey(t *testing.T) {
	tests := map[string]string{
		"/home/me/project":    "-home-me-project",
		"/tmp/a b/c.d_e":      "-tmp-a-b-c-d-e",
		"/srv/café":           "-srv-caf-",
		"/Users/X/Go/src/v2x": "-Users-X-Go-src-v2x",
	}
	for cwd, want := range tests {
		if got := ProjectKey(cwd); got != want {
			t.Errorf("ProjectKey(%q) = %q, want %q", cwd, got, want)
		}
	}
}

func TestValidID(t *testing.T) {
	for _, id := range []string{"b8e4f1c", "bzkdoq3qh", "shell_1", "a-b"} {
		if !ValidID(id) {
			t.Errorf("ValidID(%q) = false, want true", id)
		}
	}
	for _, id := range []string{"", "..", "../x", "a/b", "a.output", "-a", "_a", "a b", "a\x00", strings.Repeat("a", 129), "ü"} {
		if ValidID(id) {
			t.Errorf("ValidID(%q) = true, want false", id)
		}
	}
}

func TestListAndRead(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	mustWrite(t, filepath.Join(root, "-home-me-a", "tasks", "aaa1.output"), "line 1\nline 2\n", old)
	mustWrite(t, filepath.Join(root, "-home-me-b", "0f6c-uuid", "tasks", "bbb2.output"), "héllo wörld\n", old.Add(time.Minute))
	mustWrite(t, filepath.Join(root, "-home-me-b", "tasks", "notes.txt"), "not a task", old)
	app := newApp(t, &Finder{Roots: []string{root, filepath.Join(root, "missing")}, Proc: t.TempDir()})

	got := get(t, app, "/api/tasks")
	got.want(t, http.StatusOK, "")
	list, _ := got.body["tasks"].([]any)
	if len(list) != 2 {
		t.Fatalf("got %d tasks, want 2: %s", len(list), got.raw)
	}
	first, _ := list[0].(map[string]any)
	if first["task_id"] != "bbb2" || first["project"] != "-home-me-b" || first["agent_session"] != "0f6c-uuid" ||
		first["preview"] != "héllo wörld\n" || first["running"] != false || first["running_by"] != "recent_write" ||
		first["session_id"] != "CHAT1" {
		t.Errorf("newest task: got %v", first)
	}

	got = get(t, app, "/api/tasks?cwd=/home/me/a")
	got.want(t, http.StatusOK, "")
	if list, _ := got.body["tasks"].([]any); len(list) != 1 || list[0].(map[string]any)["task_id"] != "aaa1" {
		t.Errorf("cwd filter: got %s", got.raw)
	}
	// Per chat session: through its agent's session uuid.
	got = get(t, app, "/api/tasks?session=CHAT1")
	if list, _ := got.body["tasks"].([]any); len(list) != 1 || list[0].(map[string]any)["task_id"] != "bbb2" {
		t.Errorf("session filter: got %s", got.raw)
	}
	got = get(t, app, "/api/tasks?session=CHAT2") // no agent session yet: no tasks
	if list, _ := got.body["tasks"].([]any); len(list) != 0 {
		t.Errorf("session without agent: got %s", got.raw)
	}
	got = get(t, app, "/api/tasks?limit=1")
	if list, _ := got.body["tasks"].([]any); len(list) != 1 {
		t.Errorf("limit=1: got %s", got.raw)
	}

	got = get(t, app, "/api/tasks/aaa1")
	got.want(t, http.StatusOK, "")
	if got.body["content"] != "line 1\nline 2\n" || got.body["eof"] != true || got.body["next_offset"] != float64(14) {
		t.Errorf("read: got %s", got.raw)
	}
	// Tailing: from an offset, a limited chunk.
	got = get(t, app, "/api/tasks/aaa1?offset=7&limit=4")
	got.want(t, http.StatusOK, "")
	if got.body["content"] != "line" || got.body["eof"] != false || got.body["next_offset"] != float64(11) {
		t.Errorf("tail chunk: got %s", got.raw)
	}
	// A chunk never splits a rune ("héllo wörld\n": é is bytes 1-2, ö 8-9).
	got = get(t, app, "/api/tasks/bbb2?limit=4&offset=1")
	if got.body["content"] != "éll" || got.body["next_offset"] != float64(5) {
		t.Errorf("rune at the start: got %s", got.raw)
	}
	got = get(t, app, "/api/tasks/bbb2?offset=6&limit=4") // " wö" is 4 bytes, then "r"
	if got.body["content"] != " wö" || got.body["next_offset"] != float64(10) {
		t.Errorf("whole: got %s", got.raw)
	}
	got = get(t, app, "/api/tasks/bbb2?offset=5&limit=4") // "o w" then the first byte of "ö"
	if got.body["content"] != "o w" || got.body["next_offset"] != float64(8) {
		t.Errorf("rune cut: got %s", got.raw)
	}
	got = get(t, app, "/api/tasks/aaa1?offset=14")
	if got.body["content"] != "" || got.body["eof"] != true {
		t.Errorf("at end: got %s", got.raw)
	}
}

func TestBadInputs(t *testing.T) {
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "-p", "tasks", "t1.output"), "abc", time.Time{})
	app := newApp(t, &Finder{Roots: []string{root}})
	tests := []struct {
		path   string
		status int
		code   string
	}{
		{"/api/tasks/nope", http.StatusNotFound, "not_found"},
		{"/api/tasks/..%2F..%2Fetc%2Fpasswd", http.StatusBadRequest, "bad_request"},
		{"/api/tasks/a.b", http.StatusBadRequest, "bad_request"},
		{"/api/tasks/-x", http.StatusBadRequest, "bad_request"},
		{"/api/tasks/t1?offset=4", http.StatusBadRequest, "bad_request"},
		{"/api/tasks/t1?offset=-1", http.StatusBadRequest, "bad_request"},
		{"/api/tasks/t1?limit=0", http.StatusBadRequest, "bad_request"},
		{"/api/tasks/t1?limit=3", http.StatusBadRequest, "bad_request"},
		{"/api/tasks/t1?limit=x", http.StatusBadRequest, "bad_request"},
		{"/api/tasks?limit=501", http.StatusBadRequest, "bad_request"},
		{"/api/tasks?cwd=relative/dir", http.StatusBadRequest, "bad_request"},
		{"/api/tasks?running=maybe", http.StatusBadRequest, "bad_request"},
		{"/api/tasks?session=NOPE", http.StatusNotFound, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			get(t, app, tt.path).want(t, tt.status, tt.code)
		})
	}
}

// TestSymlinksLeavingTheRoot: a task file, a tasks directory or a project
// directory that points outside the root is refused (403 when asked for,
// absent from the list); a symlink that stays inside is fine.
func TestSymlinksLeavingTheRoot(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	secret := filepath.Join(elsewhere, "secret.output")
	mustWrite(t, secret, "do not read", time.Time{})
	mustWrite(t, filepath.Join(elsewhere, "tasks", "viadir.output"), "do not read", time.Time{})
	mustWrite(t, filepath.Join(elsewhere, "proj", "tasks", "viaproj.output"), "do not read", time.Time{})
	mustWrite(t, filepath.Join(root, "-p", "tasks", "real.output"), "fine", time.Time{})
	links := map[string]string{
		filepath.Join(root, "-p", "tasks", "evil.output"):  secret,
		filepath.Join(root, "-p", "tasks", "alias.output"): filepath.Join(root, "-p", "tasks", "real.output"),
		filepath.Join(root, "-q", "tasks"):                 filepath.Join(elsewhere, "tasks"),
		filepath.Join(root, "-r"):                          filepath.Join(elsewhere, "proj"),
	}
	for link, target := range links {
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	app := newApp(t, &Finder{Roots: []string{root}})
	get(t, app, "/api/tasks/evil").want(t, http.StatusForbidden, "forbidden")
	get(t, app, "/api/tasks/viadir").want(t, http.StatusForbidden, "forbidden")
	get(t, app, "/api/tasks/viaproj").want(t, http.StatusNotFound, "not_found") // the project link is not followed
	got := get(t, app, "/api/tasks/alias")
	got.want(t, http.StatusOK, "")
	if got.body["content"] != "fine" {
		t.Errorf("alias inside the root: got %s", got.raw)
	}
	got = get(t, app, "/api/tasks")
	if strings.Contains(got.raw, "do not read") || strings.Contains(got.raw, "evil") || strings.Contains(got.raw, "via") {
		t.Errorf("list shows what leaves the root: %s", got.raw)
	}
	if list, _ := got.body["tasks"].([]any); len(list) != 2 {
		t.Errorf("got %s, want real and alias", got.raw)
	}
}

// TestRunningState starts a real background shell writing its task file,
// as Claude Code does, and watches the task go from running to finished.
func TestRunningState(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "-w", "tasks", "live1.output")
	mustWrite(t, path, "", time.Time{})
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", "echo started; read _; echo done")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out.Close() // only the shell holds it now
	app := newApp(t, &Finder{Roots: []string{root}})

	waitFor(t, func() bool {
		got := get(t, app, "/api/tasks/live1")
		task, _ := got.body["task"].(map[string]any)
		return task["running"] == true && task["running_by"] == "open_file" && got.body["content"] == "started\n"
	}, "task running with its output")
	got := get(t, app, "/api/tasks?running=true")
	if !strings.Contains(got.raw, `"pids":[`) {
		t.Errorf("running list: got %s", got.raw)
	}

	stdin.Close() // the shell's read ends, and the shell with it
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		task, _ := get(t, app, "/api/tasks/live1").body["task"].(map[string]any)
		return task["running"] == false
	}, "task finished")
	if got := get(t, app, "/api/tasks?running=true"); strings.Contains(got.raw, "live1") {
		t.Errorf("finished task listed as running: %s", got.raw)
	}
}

// waitFor polls cond until it holds, failing after a deadline.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func FuzzValidID(f *testing.F) {
	for _, s := range []string{"b8e4f1c", "..", "a/b", "x.output", "-a", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if !ValidID(id) {
			return
		}
		path := filepath.Join("/root", "-p", "tasks", id+Suffix)
		if filepath.Dir(path) != "/root/-p/tasks" || filepath.Clean(path) != path {
			t.Fatalf("id %q leaves the tasks directory: %s", id, path)
		}
	})
}
