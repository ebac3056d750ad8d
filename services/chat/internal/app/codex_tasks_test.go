package app

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
)

// TestCodexBackgroundTask: a Codex command still running when its turn
// ends is listed by GET /api/tasks of every instance, running with its
// output so far, then finished with its whole output.
func TestCodexBackgroundTask(t *testing.T) {
	rdb, stream := turnStream(t)
	db := pgmigratetest.MustSchema(t)
	env := []string{"CODEX_HOME=" + t.TempDir(), "FAKECODEX_DELAY=300ms"}
	c := startInstance(t, db, nil, notFound, env, nil)
	c.do(http.MethodPut, "/api/app/provider-path/codex", `{"path":`+quote(fakeCodex(t))+`}`).want(t, http.StatusOK, "")
	c.do(http.MethodPut, "/api/app/provider-models/app-server", mockPrice).want(t, http.StatusOK, "")
	other := startInstance(t, db, nil, notFound, nil, nil)

	w, conn := c.connectCodex()
	id := conn.str("session_id")
	w.send(map[string]any{"type": "user_message", "content": "BACKGROUND 4"})
	w.until("result", isResult)
	// The turn's Bash call got a result saying it runs on: ok, not error.
	wantTools(t, waitEntries(t, rdb, stream, 2)[1], [2]string{"Bash", "ok"})

	// Listed on the other instance while it runs.
	list := func(query string) []map[string]any {
		got := other.do(http.MethodGet, "/api/tasks?session="+id+query, "")
		got.want(t, http.StatusOK, "")
		var out []map[string]any
		for _, x := range got.body["tasks"].([]any) {
			out = append(out, x.(map[string]any))
		}
		return out
	}
	var running []map[string]any
	for deadline := time.Now().Add(10 * time.Second); len(running) == 0 && time.Now().Before(deadline); {
		if running = list("&running=true"); len(running) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(running) != 1 {
		t.Fatalf("running tasks of the session: %v, want 1", running)
	}
	task := running[0]
	taskID, _ := task["task_id"].(string)
	preview, _ := task["preview"].(string)
	if !strings.HasPrefix(taskID, "codex-") || task["provider"] != "codex" || task["session_id"] != id || task["state"] != "running" ||
		!strings.HasPrefix(preview, "line 0\n") || !strings.Contains(task["command"].(string), "echo line") || task["cwd"] != conn.str("cwd") {
		t.Errorf("running task %v", task)
	}

	// Tailing it from the other instance until it ends.
	var out strings.Builder
	var offset float64
	var last answer
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		last = other.do(http.MethodGet, fmt.Sprintf("/api/tasks/%s?offset=%d", taskID, int64(offset)), "")
		last.want(t, http.StatusOK, "")
		out.WriteString(last.str("content"))
		offset = last.body["next_offset"].(float64)
		if tk := last.body["task"].(map[string]any); tk["running"] == false {
			break
		}
	}
	want := "line 0\nline 1\nline 2\nline 3\nline 4\n"
	tk := last.body["task"].(map[string]any)
	if out.String() != want || tk["state"] != "completed" || tk["exit_code"] != float64(0) || last.body["eof"] != true {
		t.Errorf("tailed %q, last answer %s; want %q and completed", out.String(), last.raw, want)
	}
	if done := list("&running=false"); len(done) != 1 || done[0]["task_id"] != taskID {
		t.Errorf("finished tasks of the session %v, want %s", done, taskID)
	}
	// Bad inputs.
	other.do(http.MethodGet, "/api/tasks/"+taskID+"?offset=999", "").want(t, http.StatusBadRequest, "bad_request")
	other.do(http.MethodGet, "/api/tasks/codex-0000", "").want(t, http.StatusNotFound, "not_found")
}

// TestCodexTurnEventDenied: a declined Codex approval is a denied tool
// call in turn_ended's tools, not an error.
func TestCodexTurnEventDenied(t *testing.T) {
	rdb, stream := turnStream(t)
	c := startCodexChat(t)
	w, _ := c.connectCodex()
	w.send(map[string]any{"type": "user_message", "content": "RUN_SHELL"})
	req := w.until("permission_request", isType("permission_request"))
	w.send(map[string]any{"type": "permission_response", "request_id": req[len(req)-1].str("request_id"), "behavior": "deny"})
	w.until("result", isResult)
	entries := waitEntries(t, rdb, stream, 2)
	wantTools(t, entries[1], [2]string{"Bash", "denied"})
}
