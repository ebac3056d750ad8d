package app

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/turnsig"
)

// TestRunJournalsTurnsAndServesRoutes runs shadow in-process: turn events
// on its stream give a journal commit (only those signed as chat signs
// them), the journal routes answer, and
// /api/git and /api/project refuse a directory outside the allowed roots.
func TestRunJournalsTurnsAndServesRoutes(t *testing.T) {
	home := t.TempDir()
	userHome, _ := filepath.EvalSymlinks(t.TempDir())
	proj := filepath.Join(userHome, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh := startShadow(t, map[string]string{"SVC_CODE_HOME": home, "SHADOW_CONSUMER": "test"}, userHome, slog.New(slog.DiscardHandler))
	prefix := sh.prefix
	opts, _ := redis.ParseURL(testRedisURL())
	rdb := redis.NewClient(opts)
	t.Cleanup(func() {
		rdb.Del(context.Background(), prefix+"turns")
		rdb.Close()
	})
	get := func(path string, q url.Values) (int, string) {
		return sh.do(http.MethodGet, path+"?"+q.Encode(), "")
	}

	key := turnsig.New(internalauth.FromString(testSecret))
	xadd := func(values map[string]any) {
		if err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: prefix + "turns", Values: values}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	add := func(values map[string]any) { // as chat writes them
		if err := key.Sign(prefix+"turns", values); err != nil {
			t.Fatal(err)
		}
		xadd(values)
	}
	// Written into Redis by someone else: unsigned, or signed for
	// another stream. Shadow must not journal that directory.
	other := filepath.Join(userHome, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "secret.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	xadd(map[string]any{"event": "turn_started", "session_id": "evil", "turn_id": "evil:1", "prompt": "x", "cwd": other})
	moved := map[string]any{"event": "turn_started", "session_id": "evil", "turn_id": "evil:2", "prompt": "x", "cwd": other}
	if err := key.Sign("elsewhere:turns", moved); err != nil {
		t.Fatal(err)
	}
	xadd(moved)
	add(map[string]any{"event": "turn_started", "session_id": "s1", "turn_id": "s1:1", "prompt": "go", "cwd": proj})
	waitBranch := time.Now().Add(20 * time.Second)
	for {
		code, body := get("/api/shadow/branches", url.Values{"cwd": {proj}})
		if code == 200 && strings.Contains(body, `"session/s1"`) {
			break
		}
		if time.Now().After(waitBranch) {
			t.Fatalf("no branch: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The forged events came first: they were handled (and ignored).
	if code, body := get("/api/shadow/branches", url.Values{"cwd": {other}}); code != 404 || strings.Contains(body, "session/evil") {
		t.Errorf("a forged turn event was journaled: %d %s", code, body)
	}
	if err := os.WriteFile(filepath.Join(proj, "a.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	add(map[string]any{"event": "turn_ended", "session_id": "s1", "turn_id": "s1:1", "prompt": "go"})
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := get("/api/shadow/log", url.Values{"cwd": {proj}, "session": {"s1"}})
		if code == 200 && strings.Contains(body, `"subject":"turn 1: go"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no turn commit: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd := exec.Command("git", "init", "-q", proj)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	if code, body := get("/api/git/status", url.Values{"cwd": {proj}}); code != 200 || !strings.Contains(body, `"a.txt"`) {
		t.Errorf("git status in the project: %d %s", code, body)
	}
	if code, body := get("/api/project/config", url.Values{"cwd": {proj}}); code != 200 || !strings.Contains(body, `"journal":true`) {
		t.Errorf("project config: %d %s", code, body)
	}
	outside := t.TempDir()
	for _, path := range []string{"/api/git/status", "/api/project/config"} {
		if code, body := get(path, url.Values{"cwd": {outside}}); code != 403 || !strings.Contains(body, `"forbidden"`) {
			t.Errorf("%s outside the roots: %d %s", path, code, body)
		}
	}
}
