package app

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
)

// TestTasksRoutes: chat looks for task files in CHAT_TASK_DIRS.
func TestTasksRoutes(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "-home-me-p", "tasks", "b1x2.output")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("building...\ndone\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startInstance(t, pgmigratetest.MustSchema(t), map[string]string{"CHAT_TASK_DIRS": filepath.Join(root, "none") + ":" + root}, nil, nil, nil)

	got := c.do(http.MethodGet, "/api/tasks?cwd=/home/me/p", "")
	got.want(t, http.StatusOK, "")
	list, _ := got.body["tasks"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["task_id"] != "b1x2" || list[0].(map[string]any)["running"] != false {
		t.Errorf("list: got %s", got.raw)
	}
	got = c.do(http.MethodGet, "/api/tasks/b1x2?offset=12", "")
	got.want(t, http.StatusOK, "")
	if got.str("content") != "done\n" || got.body["eof"] != true {
		t.Errorf("read: got %s", got.raw)
	}
	c.do(http.MethodGet, "/api/tasks/nope", "").want(t, http.StatusNotFound, "not_found")

	// A task in the directory of a chat session's agent conversation is
	// that session's, on any instance (the link is in PostgreSQL).
	id := c.mustSession(t.TempDir())
	const agentID = "5d0e8f3a-1b2c-4d5e-8f90-a1b2c3d4e5f6"
	if _, err := c.store.SetProviderSessionID(context.Background(), id, agentID); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(root, "-home-me-p", agentID, "tasks", "c3y4.output")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("serving\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got = c.do(http.MethodGet, "/api/tasks?session="+id, "")
	got.want(t, http.StatusOK, "")
	list, _ = got.body["tasks"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["task_id"] != "c3y4" || list[0].(map[string]any)["session_id"] != id {
		t.Errorf("session's tasks: got %s", got.raw)
	}
	got = c.do(http.MethodGet, "/api/tasks/c3y4", "")
	if task, _ := got.body["task"].(map[string]any); task["session_id"] != id || task["agent_session"] != agentID {
		t.Errorf("task's session: got %s", got.raw)
	}
	c.do(http.MethodGet, "/api/tasks?session=ZZZZZZZZZZZZZZZZZZZZZZZZZZ", "").want(t, http.StatusNotFound, "not_found")
	c.do(http.MethodGet, "/api/tasks/a.b", "").want(t, http.StatusBadRequest, "bad_request")
}
