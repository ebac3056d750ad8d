package tasks

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/svchttp"
)

// newCodexStore is a CodexStore on the test Redis under a prefix of its
// own, removed when the test ends.
func newCodexStore(t *testing.T) *CodexStore {
	t.Helper()
	url := os.Getenv("TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	s := &CodexStore{Redis: rdb, Prefix: fmt.Sprintf("test:%s:%d:", t.Name(), time.Now().UnixNano())}
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := rdb.Keys(ctx, s.Prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		_ = rdb.Close()
	})
	return s
}

func newCodexApp(t *testing.T, f *Finder, s *CodexStore) *fiber.App {
	t.Helper()
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	app := svchttp.New(svchttp.Config{Service: "chat", Secret: internalauth.FromString(testSecret), BodyLimit: 1 << 20, Log: log})
	Register(app, Deps{Finder: f, Sessions: fakeSessions{"CHAT1": "0f6c-uuid", "CHAT2": ""}, Codex: s, Log: log})
	return app
}

func TestCodexID(t *testing.T) {
	a, b := CodexID("S1", "call_1"), CodexID("S2", "call_1")
	if a == b || !ValidID(a) || !IsCodexID(a) || a != CodexID("S1", "call_1") {
		t.Errorf("ids %q %q: want distinct, valid, stable and codex-", a, b)
	}
	if IsCodexID("b1x2c3") {
		t.Error("a Claude id taken for a Codex one")
	}
}

func TestCodexTasks(t *testing.T) {
	ctx := context.Background()
	s := newCodexStore(t)
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	mustWrite(t, filepath.Join(root, ProjectKey("/home/u/p"), "tasks", "claude1"+Suffix), "claude output\n", old)
	app := newCodexApp(t, &Finder{Roots: []string{root}}, s)

	// A running command with more output than was kept.
	kept := "éxx\nlast line here\n" // the kept tail starts mid-output
	if err := s.Put(ctx, CodexCommand{
		SessionID: "CHAT2", ThreadID: "th-1", ItemID: "call_a", Command: "/bin/bash -lc 'make'", Cwd: "/home/u/p",
		ProcessID: "4242", State: "running", Output: kept, OutputBytes: 100 + int64(len(kept)),
	}); err != nil {
		t.Fatal(err)
	}
	code := 2
	if err := s.Put(ctx, CodexCommand{
		SessionID: "CHAT1", ItemID: "call_b", Command: "false", Cwd: "/other", State: "failed", ExitCode: &code,
		Output: "boom\n", OutputBytes: 5,
	}); err != nil {
		t.Fatal(err)
	}
	running := CodexID("CHAT2", "call_a")
	failed := CodexID("CHAT1", "call_b")

	list := get(t, app, "/api/tasks")
	list.want(t, http.StatusOK, "")
	tasks, _ := list.body["tasks"].([]any)
	var ids []string
	for _, x := range tasks {
		ids = append(ids, x.(map[string]any)["task_id"].(string))
	}
	if strings.Join(ids, ",") != failed+","+running+",claude1" {
		t.Fatalf("tasks %v, want the Codex ones (newest first) then the older Claude one", ids)
	}
	second := tasks[1].(map[string]any)
	if second["provider"] != "codex" || second["running"] != true || second["running_by"] != RunningByAgent ||
		second["session_id"] != "CHAT2" || second["state"] != "running" || second["process_id"] != "4242" ||
		second["project"] != ProjectKey("/home/u/p") || second["preview"] != "last line here\n" || second["preview_truncated"] != true ||
		second["size"] != float64(100+len(kept)) {
		t.Errorf("running codex task %v", second)
	}
	if first := tasks[0].(map[string]any); first["running"] != false || first["exit_code"] != float64(2) || first["state"] != "failed" {
		t.Errorf("failed codex task %v", first)
	}

	// Filters.
	for _, c := range []struct{ query, want string }{
		{"?running=true", running},
		{"?running=false", failed + ",claude1"},
		{"?session=CHAT1", failed},
		{"?cwd=/home/u/p", running + ",claude1"},
		{"?limit=1", failed},
	} {
		a := get(t, app, "/api/tasks"+c.query)
		a.want(t, http.StatusOK, "")
		var got []string
		for _, x := range a.body["tasks"].([]any) {
			got = append(got, x.(map[string]any)["task_id"].(string))
		}
		if strings.Join(got, ",") != c.want {
			t.Errorf("%s: got %v, want %s", c.query, got, c.want)
		}
	}

	// Reading: from before the kept window starts at the window.
	a := get(t, app, "/api/tasks/"+running)
	a.want(t, http.StatusOK, "")
	if a.body["offset"] != float64(100) || a.body["content"] != kept || a.body["eof"] != true ||
		a.body["next_offset"] != float64(100+len(kept)) {
		t.Errorf("read from 0: %v", a.body)
	}
	a = get(t, app, fmt.Sprintf("/api/tasks/%s?offset=100&limit=4", running))
	a.want(t, http.StatusOK, "")
	if a.body["content"] != "éxx" || a.body["next_offset"] != float64(104) || a.body["eof"] != false {
		t.Errorf("read 4 bytes: %v", a.body)
	}
	a = get(t, app, fmt.Sprintf("/api/tasks/%s?offset=101&limit=4", running)) // mid-rune
	a.want(t, http.StatusOK, "")
	if a.body["next_offset"] != float64(105) {
		t.Errorf("read from mid-rune: %v", a.body)
	}
	a = get(t, app, fmt.Sprintf("/api/tasks/%s?offset=%d", running, 100+len(kept)))
	a.want(t, http.StatusOK, "")
	if a.body["content"] != "" || a.body["eof"] != true {
		t.Errorf("read at the end: %v", a.body)
	}
	get(t, app, fmt.Sprintf("/api/tasks/%s?offset=%d", running, 101+len(kept))).want(t, http.StatusBadRequest, "bad_request")
	get(t, app, "/api/tasks/"+CodexID("CHAT9", "nope")).want(t, http.StatusNotFound, "not_found")
	get(t, app, "/api/tasks/codex-$").want(t, http.StatusBadRequest, "bad_request")

	// A later report keeps the start and replaces the state.
	zero := 0
	if err := s.Put(ctx, CodexCommand{
		SessionID: "CHAT2", ItemID: "call_a", Command: "/bin/bash -lc 'make'", Cwd: "/home/u/p",
		State: "completed", ExitCode: &zero, Output: "done\n", OutputBytes: 5,
	}); err != nil {
		t.Fatal(err)
	}
	a = get(t, app, "/api/tasks/"+running)
	task := a.body["task"].(map[string]any)
	if task["running"] != false || task["state"] != "completed" || a.body["content"] != "done\n" {
		t.Errorf("after the end: %v", a.body)
	}

	// An expired task is not listed, and leaves the index.
	if err := s.Redis.Del(ctx, s.Prefix+"codex-task:"+failed).Err(); err != nil {
		t.Fatal(err)
	}
	list = get(t, app, "/api/tasks?running=false")
	if n := len(list.body["tasks"].([]any)); n != 2 {
		t.Errorf("%d tasks after one expired, want 2: %s", n, list.raw)
	}
	get(t, app, "/api/tasks/"+failed).want(t, http.StatusNotFound, "not_found")
}

// TestCodexKept: the index keeps the newest CodexKeep tasks; each key
// expires CodexTTL after its last report.
func TestCodexKept(t *testing.T) {
	ctx := context.Background()
	s := newCodexStore(t)
	if err := s.Put(ctx, CodexCommand{SessionID: "S", ItemID: "i", State: "running"}); err != nil {
		t.Fatal(err)
	}
	ttl, err := s.Redis.TTL(ctx, s.Prefix+"codex-task:"+CodexID("S", "i")).Result()
	if err != nil || ttl <= CodexTTL-time.Minute || ttl > CodexTTL {
		t.Errorf("ttl %v (%v), want about %v", ttl, err, CodexTTL)
	}
	pipe := s.Redis.Pipeline()
	for i := range CodexKeep + 5 {
		pipe.ZAdd(ctx, s.Prefix+"codex-tasks", redis.Z{Score: float64(i), Member: fmt.Sprint("old", i)})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, CodexCommand{SessionID: "S", ItemID: "j", State: "running"}); err != nil {
		t.Fatal(err)
	}
	n, err := s.Redis.ZCard(ctx, s.Prefix+"codex-tasks").Result()
	if err != nil || n > CodexKeep {
		t.Errorf("index holds %d (%v), want at most %d", n, err, CodexKeep)
	}
	got, err := s.List(ctx, Filter{})
	if err != nil || len(got) != 2 {
		t.Errorf("list %v (%v), want the 2 real tasks", got, err)
	}
}
