package journal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/pgmigrate"
	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/services/shadow/internal/project"
)

func testRedisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// mustPool answers a pool on a schema of the test's own, with shadow's
// migrations applied.
func mustPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgmigratetest.MustSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pgmigrate.Apply(ctx, pool, "shadow", os.DirFS("../app/migrations")); err != nil {
		t.Fatalf("apply migrations: %v", err)
	}
	return pool
}

// mustRedis answers a client and a stream key unique to the test; the key
// is deleted when the test ends.
func mustRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	opts, err := redis.ParseURL(testRedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("Redis must be reachable at TEST_REDIS_URL: %v", err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	key := "test:" + strings.ReplaceAll(t.Name(), "/", "_") + ":" + hex.EncodeToString(b) + ":turns"
	t.Cleanup(func() {
		rdb.Del(context.Background(), key)
		rdb.Close()
	})
	return rdb, key
}

// env is a data home, a project directory and a journal over them.
type env struct {
	t       *testing.T
	home    string
	project string // the project's real path
	journal *Journal
	capMB   int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	home := t.TempDir()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, home: home, project: dir, capMB: DefaultMaxFileMB}
	e.journal = New(project.NewStore(home, nil), quietLog(), Options{
		MaxFileMB: func(context.Context) int { return e.capMB },
	})
	t.Cleanup(e.journal.Wait) // before the directories go
	return e
}

// newHomeSessionEnv is a session in the home directory, which holds the
// data home (.svc-code, with a secret in it) beside the user's notes.txt.
func newHomeSessionEnv(t *testing.T) *env {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, ".svc-code")
	e := &env{t: t, home: home, project: dir, capMB: DefaultMaxFileMB}
	e.journal = New(project.NewStore(home, nil), quietLog(), Options{})
	t.Cleanup(e.journal.Wait)
	e.write("notes.txt", "hi\n")
	e.write(".svc-code/postgres.env", "DATABASE_URL=secret\n")
	return e
}

func (e *env) path(rel string) string { return filepath.Join(e.project, filepath.FromSlash(rel)) }

func (e *env) write(rel, content string) {
	e.t.Helper()
	p := e.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(e.path(rel))
	if err != nil {
		e.t.Fatalf("read %s: %v", rel, err)
	}
	return string(b)
}

func (e *env) missing(rel string) bool {
	_, err := os.Lstat(e.path(rel))
	return os.IsNotExist(err)
}

// sh runs a shell command in the project, as a Bash tool call would.
func (e *env) sh(script string) {
	e.t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = e.project
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("sh %q: %v\n%s", script, err, out)
	}
}

func (e *env) journalDir() string {
	return project.JournalDir(e.home, project.Hash(e.project))
}

// plainGit runs plain git on the journal the way a user would: only
// --git-dir, nothing else.
func (e *env) plainGit(args ...string) string {
	e.t.Helper()
	cmd := exec.Command("git", append([]string{"--git-dir=" + e.journalDir()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (e *env) commitCount(ref string) int {
	e.t.Helper()
	cmd := exec.Command("git", "--git-dir="+e.journalDir(), "rev-list", "--count", ref)
	out, err := cmd.Output()
	if err != nil {
		return 0
	}
	n := 0
	for _, c := range strings.TrimSpace(string(out)) {
		n = n*10 + int(c-'0')
	}
	return n
}

func (e *env) turn(session string, n int, prompt string) Turn {
	return Turn{
		Session: session, ID: session + ":" + string(rune('0'+n)), Number: n, Prompt: prompt,
		Cwd: e.project, At: time.Now(),
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
