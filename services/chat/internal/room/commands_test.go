package room

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/tasks"
)

// TestRecordCommand: each report of a background command replaces its
// record, which any instance reads through tasks.CodexStore; without Redis
// nothing is recorded.
func TestRecordCommand(t *testing.T) {
	url := os.Getenv("TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	prefix := fmt.Sprintf("test:%s:%d:", t.Name(), time.Now().UnixNano())
	t.Cleanup(func() {
		ctx := context.Background()
		if keys, _ := rdb.Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		_ = rdb.Close()
	})
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	r := &Room{m: &Manager{cfg: Config{Redis: rdb, Prefix: prefix}, log: log}, id: "S1"}
	ctx := context.Background()
	r.recordCommand(ctx, agent.Command{ID: "call_1", Command: "make", Cwd: "/p", ProcessID: "7", State: agent.CommandRunning, Output: "a\n", OutputBytes: 2}, "th")
	store := tasks.CodexStore{Redis: rdb, Prefix: prefix}
	id := tasks.CodexID("S1", "call_1")
	got, kept, err := store.Find(ctx, id)
	if err != nil || !got.Running || got.SessionID != "S1" || got.AgentSession != "th" || got.ProcessID != "7" || kept != "a\n" {
		t.Fatalf("after the first report: %+v %q (%v)", got, kept, err)
	}
	code := 0
	r.recordCommand(ctx, agent.Command{ID: "call_1", Command: "make", Cwd: "/p", State: agent.CommandCompleted, ExitCode: &code, Output: "a\nb\n", OutputBytes: 4}, "th")
	got, kept, err = store.Find(ctx, id)
	if err != nil || got.Running || got.State != agent.CommandCompleted || got.ExitCode == nil || *got.ExitCode != 0 || kept != "a\nb\n" || got.Size != 4 {
		t.Errorf("after the end: %+v %q (%v)", got, kept, err)
	}

	bare := &Room{m: &Manager{log: log}, id: "S2"}
	bare.recordCommand(ctx, agent.Command{ID: "call_2", State: agent.CommandRunning}, "")
	if _, _, err := store.Find(ctx, tasks.CodexID("S2", "call_2")); err == nil {
		t.Error("recorded without Redis")
	}
}
