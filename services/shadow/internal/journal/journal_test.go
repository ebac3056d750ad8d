package journal

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/services/shadow/internal/gitcmd"
	"github.com/svc-code/svc-code/services/shadow/internal/project"
)

// addEvent adds a turn event the way chat does.
func addEvent(t *testing.T, rdb *redis.Client, key string, values map[string]any) string {
	t.Helper()
	id, err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: key, Values: values}).Result()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func startConsumer(t *testing.T, c *Consumer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func turnDone(t *testing.T, turns *Turns, id string, ended bool) func() bool {
	return func() bool {
		row, ok, err := turns.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return ok && (row.Ended || !ended && row.Started)
	}
}

func TestStreamTurnJournalsEditsAndShellChanges(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one\n")
	e.write("keep.md", "untouched\n")
	// The project is a git repository of its own: the journal must leave it be.
	e.sh("git init -q . && git -c user.name=u -c user.email=u@x add -A && git -c user.name=u -c user.email=u@x commit -qm init")
	ownHead, _ := os.ReadFile(e.path(".git/HEAD"))
	ownIndex, _ := os.ReadFile(e.path(".git/index"))

	pool := mustPool(t)
	rdb, key := mustRedis(t)
	turns := NewTurns(pool)
	startConsumer(t, NewConsumer(rdb, key, e.journal, turns, nil, quietLog(), ConsumerOptions{Block: 100 * time.Millisecond}))

	addEvent(t, rdb, key, map[string]any{
		"event": "turn_started", "session_id": "s1", "turn_id": "s1:1", "prompt": "fix a\nand more",
		"cwd": e.project, "provider": "agent-sdk", "started_at": time.Now().UTC().Format(time.RFC3339Nano),
	})
	waitFor(t, "turn_started handled", turnDone(t, turns, "s1:1", false))

	e.write("a.txt", "one\ntwo\n")           // the agent's Edit
	e.sh("printf 'made by bash\\n' > b.txt") // the agent's Bash
	addEvent(t, rdb, key, map[string]any{    // no cwd: as chat sends turn_ended today
		"event": "turn_ended", "session_id": "s1", "turn_id": "s1:1", "prompt": "fix a\nand more",
		"ended_at": time.Now().UTC().Format(time.RFC3339Nano),
	})
	waitFor(t, "turn_ended handled", turnDone(t, turns, "s1:1", true))

	patch := e.plainGit("log", "-p")
	for _, want := range []string{"turn 1: fix a", "+two", "+made by bash", "b.txt", "Shadow-Session: s1", "Shadow-Turn: 1"} {
		if !strings.Contains(patch, want) {
			t.Errorf("git log -p lacks %q:\n%s", want, patch)
		}
	}
	files := e.plainGit("ls-tree", "-r", "--name-only", "session/s1")
	if strings.Contains(files, ".git/") {
		t.Errorf("the project's .git is in the journal:\n%s", files)
	}
	if got := e.commitCount("session/s1"); got != 2 {
		t.Errorf("session/s1 has %d commits, want 2 (baseline, turn)", got)
	}
	row, _, _ := turns.Get(context.Background(), "s1:1")
	if row.TurnNumber != 1 || row.ChangedFiles != 2 || row.EndCommit == "" || row.BaseCommit == "" {
		t.Errorf("shadow_turns row = %+v", row)
	}
	if h, _ := os.ReadFile(e.path(".git/HEAD")); string(h) != string(ownHead) {
		t.Error("the project's .git/HEAD changed")
	}
	if idx, _ := os.ReadFile(e.path(".git/index")); string(idx) != string(ownIndex) {
		t.Error("the project's .git/index changed")
	}
	pending, err := rdb.XPending(context.Background(), key, Group).Result()
	if err != nil || pending.Count != 0 {
		t.Errorf("pending entries = %+v, %v; want none", pending, err)
	}

	// Undo puts both files back as they were before the turn.
	r, _, err := e.journal.Open(e.project)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.journal.Undo(context.Background(), r, "s1", false); err != nil {
		t.Fatal(err)
	}
	if got := e.read("a.txt"); got != "one\n" || !e.missing("b.txt") || e.read("keep.md") != "untouched\n" {
		t.Errorf("after undo: a.txt = %q, b.txt missing = %v", got, e.missing("b.txt"))
	}
}

func TestHandleTwiceCommitsOnce(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one\n")
	turns := NewTurns(mustPool(t))
	c := NewConsumer(nil, "", e.journal, turns, nil, quietLog(), ConsumerOptions{})
	ctx := context.Background()
	now := time.Now()
	start := Event{Kind: "turn_started", SessionID: "s1", TurnID: "s1:3", Prompt: "p", Cwd: e.project, At: now, Added: now}
	end := Event{Kind: "turn_ended", SessionID: "s1", TurnID: "s1:3", Prompt: "p", At: now, Added: now}
	if err := c.Handle(ctx, start); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "two\n")
	for range 2 {
		if err := c.Handle(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Handle(ctx, start); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "three\n") // changed after the turn: a replay must not commit it
	if err := c.Handle(ctx, end); err != nil {
		t.Fatal(err)
	}
	if got := e.commitCount("session/s1"); got != 2 {
		t.Errorf("%d commits after replays, want 2", got)
	}
	if got := e.plainGit("show", "session/s1:a.txt"); got != "two\n" {
		t.Errorf("journaled a.txt = %q, want the turn's version", got)
	}
}

func TestCatchUpAfterDowntime(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one\n")
	pool := mustPool(t)
	rdb, key := mustRedis(t)
	turns := NewTurns(pool)
	// A first consumer creates the group, then shadow is down while turns happen.
	c := NewConsumer(rdb, key, e.journal, turns, nil, quietLog(), ConsumerOptions{Block: 100 * time.Millisecond, Late: time.Hour})
	if err := c.EnsureGroup(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, s := range []string{"s1:1", "s1:2"} {
		addEvent(t, rdb, key, map[string]any{"event": "turn_started", "session_id": "s1", "turn_id": s, "prompt": "p", "cwd": e.project})
		e.write("a.txt", strings.Repeat("x", i+1))
		addEvent(t, rdb, key, map[string]any{"event": "turn_ended", "session_id": "s1", "turn_id": s, "prompt": "p", "cwd": e.project})
	}
	startConsumer(t, c)
	waitFor(t, "both turns journaled", func() bool {
		return turnDone(t, turns, "s1:1", true)() && turnDone(t, turns, "s1:2", true)()
	})
	if got := e.plainGit("show", "session/s1:a.txt"); got != "xx" {
		t.Errorf("journaled a.txt = %q, want the latest content", got)
	}
	rows, err := turns.Session(context.Background(), "s1")
	if err != nil || len(rows) != 2 || rows[0].TurnNumber != 1 || rows[1].TurnNumber != 2 {
		t.Errorf("turn rows = %+v, %v", rows, err)
	}
}

func TestLateStartMakesNoBaseline(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one\n")
	turns := NewTurns(mustPool(t))
	c := NewConsumer(nil, "", e.journal, turns, nil, quietLog(), ConsumerOptions{})
	ctx := context.Background()
	old := time.Now().Add(-time.Hour)
	if err := c.Handle(ctx, Event{Kind: "turn_started", SessionID: "s1", TurnID: "s1:1", Cwd: e.project, At: old, Added: old}); err != nil {
		t.Fatal(err)
	}
	if got := e.commitCount("session/s1"); got != 0 {
		t.Errorf("a late turn_started made %d commits", got)
	}
	if err := c.Handle(ctx, Event{Kind: "turn_ended", SessionID: "s1", TurnID: "s1:1", Cwd: e.project, At: old, Added: old}); err != nil {
		t.Fatal(err)
	}
	if got := e.commitCount("session/s1"); got != 1 {
		t.Errorf("%d commits, want the turn's one", got)
	}
}

func TestBadEvents(t *testing.T) {
	e := newEnv(t)
	turns := NewTurns(mustPool(t))
	c := NewConsumer(nil, "", e.journal, turns, nil, quietLog(), ConsumerOptions{})
	ctx := context.Background()
	now := time.Now()
	tests := []struct {
		name string
		ev   Event
	}{
		{"cwd gone", Event{Kind: "turn_started", SessionID: "s1", TurnID: "s1:1", Cwd: e.project + "/nope", Added: now}},
		{"relative cwd", Event{Kind: "turn_started", SessionID: "s1", TurnID: "s1:2", Cwd: "rel", Added: now}},
		{"no cwd known", Event{Kind: "turn_ended", SessionID: "s2", TurnID: "s2:1", Added: now}},
		{"session not a ref", Event{Kind: "turn_ended", SessionID: "../x", TurnID: "x:1", Cwd: e.project, Added: now}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Handle(ctx, tt.ev)
			if err == nil || !permanent(err) {
				t.Errorf("Handle = %v, want a permanent error", err)
			}
		})
	}
	if _, err := os.Stat(e.journalDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bad events made a journal: %v", err)
	}
	for _, v := range []map[string]any{
		{"event": "turn_started", "turn_id": "x:1"},
		{"event": "turn_ended", "session_id": "s"},
	} {
		if _, err := ParseEvent("1-0", v); err == nil || !permanent(err) {
			t.Errorf("ParseEvent(%v) = %v, want a permanent error", v, err)
		}
	}
	ev, err := ParseEvent("1700000000000-0", map[string]any{
		"event": "turn_ended", "session_id": "s", "turn_id": "s:1", "turn_number": "zero",
		"ended_at": "2026-01-02T03:04:05.5Z", "cwd": "/p",
	})
	if err != nil || ev.TurnNumber != 0 || ev.Cwd != "/p" || ev.At.Year() != 2026 || ev.Added.UnixMilli() != 1700000000000 {
		t.Errorf("ParseEvent = %+v, %v", ev, err)
	}
	if ev, _ := ParseEvent("1-0", map[string]any{"event": "turn_started", "session_id": "s", "turn_id": "s:1", "turn_number": "7"}); ev.TurnNumber != 7 {
		t.Errorf("turn_number 7 read as %d", ev.TurnNumber)
	}
}

func TestSnapshotSkipsAndIgnores(t *testing.T) {
	e := newEnv(t)
	e.capMB = 1
	e.write("a.txt", "a\n")
	e.write(".gitignore", "*.log\n")
	e.write("debug.log", "ignored by the project\n")
	e.write("node_modules/x/index.js", "ignored by default\n")
	e.write("big.bin", strings.Repeat("z", 1<<20+1))
	e.write("nested/inner.txt", "in a nested repo\n")
	e.sh("cd nested && git init -q .")
	e.write("crlf.txt", "a\r\nb\r\n")
	e.write(".gitattributes", "*.txt text eol=lf\n")
	res, err := e.journal.TurnEnded(context.Background(), e.turn("s1", 1, "p"), "")
	if err != nil {
		t.Fatal(err)
	}
	files := e.plainGit("ls-tree", "-r", "--name-only", "session/s1")
	for _, f := range []string{"a.txt", ".gitignore", "crlf.txt"} {
		if !strings.Contains(files, f+"\n") {
			t.Errorf("%s missing from the snapshot:\n%s", f, files)
		}
	}
	for _, f := range []string{"debug.log", "node_modules", "big.bin", "nested"} {
		if strings.Contains(files, f) {
			t.Errorf("%s is in the snapshot:\n%s", f, files)
		}
	}
	if got := e.plainGit("cat-file", "blob", "session/s1:crlf.txt"); got != "a\r\nb\r\n" {
		t.Errorf("crlf.txt stored as %q, want its bytes unchanged", got)
	}
	msg := e.plainGit("log", "-1", "--format=%B", "session/s1")
	for _, want := range []string{"big.bin (1048577 bytes, over 1 MB)", "nested (nested git repository)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if len(res.Skipped) != 2 {
		t.Errorf("Skipped = %+v", res.Skipped)
	}

	// A file committed small and grown past the cap leaves the next snapshot.
	e.capMB = 0 // no cap: big.bin goes in
	if _, err := e.journal.TurnEnded(context.Background(), e.turn("s1", 2, "p"), ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.plainGit("ls-tree", "-r", "--name-only", "session/s1"), "big.bin") {
		t.Fatal("cap 0 should disable the cap")
	}
	e.capMB = 1
	e.write("a.txt", "a2\n")
	if _, err := e.journal.TurnEnded(context.Background(), e.turn("s1", 3, "p"), ""); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(e.plainGit("ls-tree", "-r", "--name-only", "session/s1"), "big.bin") {
		t.Error("a tracked file over the cap stayed in the snapshot")
	}
}

func TestNewSessionBranchContinuesHistory(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "a\n")
	ctx := context.Background()
	if _, err := e.journal.TurnStarted(ctx, e.turn("s1", 1, "p"), true); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "b\n")
	if _, err := e.journal.TurnEnded(ctx, e.turn("s1", 1, "p"), ""); err != nil {
		t.Fatal(err)
	}
	// A second session on the same, unchanged project: its branch starts at
	// the journal's newest commit without a new commit.
	res, err := e.journal.TurnStarted(ctx, e.turn("s2", 1, "q"), true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Committed {
		t.Error("an unchanged tree made a baseline commit")
	}
	if a, b := strings.TrimSpace(e.plainGit("rev-parse", "session/s1")), strings.TrimSpace(e.plainGit("rev-parse", "session/s2")); a != b {
		t.Errorf("session/s2 starts at %s, want session/s1's head %s", b, a)
	}
	if head := strings.TrimSpace(e.plainGit("symbolic-ref", "HEAD")); head != "refs/heads/session/s2" {
		t.Errorf("HEAD = %s, want the branch last written", head)
	}
	// The user edits between turns: the next start makes a baseline.
	e.write("a.txt", "user\n")
	res, err = e.journal.TurnStarted(ctx, e.turn("s2", 2, "q"), true)
	if err != nil || !res.Committed {
		t.Fatalf("TurnStarted = %+v, %v; want a baseline commit", res, err)
	}
	if got := e.plainGit("log", "-1", "--format=%s", "session/s2"); got != "baseline before turn 2: q\n" {
		t.Errorf("subject = %q", got)
	}
}

func TestJournalSurvivesGitEnvironment(t *testing.T) {
	// GIT_DIR and friends in shadow's own environment must not leak into git.
	e := newEnv(t)
	e.write("a.txt", "a\n")
	t.Setenv("GIT_DIR", "/nonexistent")
	t.Setenv("GIT_INDEX_FILE", "/nonexistent/index")
	if _, err := e.journal.TurnEnded(context.Background(), e.turn("s1", 1, "p"), ""); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "--git-dir="+e.journalDir(), "cat-file", "-e", "session/s1:a.txt")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if err := cmd.Run(); err != nil {
		t.Errorf("a.txt not journaled: %v", err)
	}
}

func TestNewGroupSkipsOldTurns(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one\n")
	pool := mustPool(t)
	rdb, key := mustRedis(t)
	turns := NewTurns(pool)
	old := time.Now().Add(-2 * FirstBacklog).UnixMilli()
	if err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: key, ID: fmt.Sprintf("%d-0", old), Values: map[string]any{
		"event": "turn_ended", "session_id": "old", "turn_id": "old:1", "cwd": e.project,
	}}).Err(); err != nil {
		t.Fatal(err)
	}
	addEvent(t, rdb, key, map[string]any{"event": "turn_ended", "session_id": "new", "turn_id": "new:1", "cwd": e.project})
	startConsumer(t, NewConsumer(rdb, key, e.journal, turns, nil, quietLog(), ConsumerOptions{Block: 100 * time.Millisecond}))
	waitFor(t, "the recent turn journaled", turnDone(t, turns, "new:1", true))
	if _, ok, _ := turns.Get(context.Background(), "old:1"); ok {
		t.Error("a turn from before the group's backlog was journaled")
	}
}

func TestDataHomeInsideTheProjectIsNotJournaled(t *testing.T) {
	// A session in the home directory, with the data home under it.
	e := newHomeSessionEnv(t)
	// A .gitignore outranks the journal's excludes: its negations must not
	// bring the data home back.
	e.write(".gitignore", "!.svc-code/\n!.svc-code/**\n")
	for n := 1; n <= 2; n++ {
		if _, err := e.journal.TurnEnded(context.Background(), e.turn("s1", n, "p"), ""); err != nil {
			t.Fatal(err)
		}
	}
	files := e.plainGit("ls-tree", "-r", "--name-only", "session/s1")
	if files != ".gitignore\nnotes.txt\n" {
		t.Errorf("journaled files:\n%s", files)
	}
}

func TestTurnsPackTheJournal(t *testing.T) {
	e := newEnv(t)
	e.journal = New(project.NewStore(e.home, nil), quietLog(), Options{GCAutoObjects: 5})
	t.Cleanup(e.journal.Wait)
	// git gc --auto estimates the loose objects from the directory
	// objects/17/ alone: make sure two blobs land there.
	for i, found := 0, 0; found < 2; i++ {
		content := fmt.Sprintf("file %d\n", i)
		sum := sha1.Sum([]byte(fmt.Sprintf("blob %d\x00%s", len(content), content)))
		if sum[0] == 0x17 {
			e.write(fmt.Sprintf("f%05d.txt", i), content)
			found++
		}
	}
	e.write("f07.txt", "file 7\n")
	if _, err := e.journal.TurnEnded(context.Background(), e.turn("s1", 1, "p"), ""); err != nil {
		t.Fatal(err)
	}
	e.journal.Wait()
	if out := e.plainGit("count-objects", "-v"); !strings.Contains(out, "packs: 1") {
		t.Errorf("journal not packed after a turn past gc.auto:\n%s", out)
	}
	if got := e.plainGit("show", "session/s1:f07.txt"); got != "file 7\n" {
		t.Errorf("f07.txt after packing = %q", got)
	}
}

func TestStaleLocksOfACrashAreCleared(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one\n")
	ctx := context.Background()
	if _, err := e.journal.TurnEnded(ctx, e.turn("s1", 1, "p"), ""); err != nil {
		t.Fatal(err)
	}
	// A crash in the middle of a write leaves git's locks behind.
	old := time.Now().Add(-2 * StaleLock)
	locks := []string{
		filepath.Join(e.journalDir(), IndexName+".lock"),
		filepath.Join(e.journalDir(), "refs", "heads", "session", "s1.lock"),
		filepath.Join(e.journalDir(), "refs", "shadow", "last.lock"),
	}
	for _, l := range locks {
		if err := os.WriteFile(l, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(l, old, old); err != nil {
			t.Fatal(err)
		}
	}
	fresh := filepath.Join(e.journalDir(), "refs", "heads", "snapshot.lock") // the helper's, in use
	if err := os.WriteFile(fresh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "two\n")
	if _, err := e.journal.TurnEnded(ctx, e.turn("s1", 2, "p"), ""); err != nil {
		t.Fatalf("a turn after a crash: %v", err)
	}
	if got := e.plainGit("show", "session/s1:a.txt"); got != "two\n" {
		t.Errorf("a.txt = %q", got)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("the helper's lock was removed")
	}
}

// TestHungGitDoesNotStallTheConsumer: a git command that never ends (a
// hung file system, a huge tree) is stopped at the step's deadline, so the
// consumer moves on to the other entries and projects.
func TestHungGitDoesNotStallTheConsumer(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one\n")
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(t.TempDir(), "git")
	script := "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = ls-files ] && exec sleep 60; done\nexec " + gitBin + " \"$@\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	j := New(project.NewStore(e.home, nil), quietLog(), Options{Git: gitcmd.Runner{Bin: fake}, StepTimeout: 500 * time.Millisecond})
	t.Cleanup(j.Wait)
	c := NewConsumer(nil, "", j, NewTurns(mustPool(t)), nil, quietLog(), ConsumerOptions{})
	start := time.Now()
	err = c.Handle(context.Background(), Event{
		Kind: "turn_ended", SessionID: "s1", TurnID: "s1:1", Cwd: e.project, Added: start, At: start,
	})
	if err == nil || permanent(err) {
		t.Errorf("Handle = %v, want a failure to retry", err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("Handle took %v: a hung git stalls the consumer", took)
	}
}

// TestJournalNeverRunsFilters: the journal is reachable with plain git
// (the shadow-git helper passes any command through), so its config and
// info/attributes may have been edited; a snapshot must still store bytes
// as they are and run no program: no filter that a .gitattributes assigns,
// no signing program for the commit.
func TestJournalNeverRunsFilters(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "a\n")
	ctx := context.Background()
	if _, err := e.journal.TurnEnded(ctx, e.turn("s1", 1, "p"), ""); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	e.plainGit("config", "filter.evil.clean", "touch "+marker+"; cat")
	prog := filepath.Join(t.TempDir(), "gpg")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.plainGit("config", "commit.gpgSign", "true")
	e.plainGit("config", "gpg.program", prog)
	if err := os.WriteFile(filepath.Join(e.journalDir(), "info", "attributes"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.write(".gitattributes", "* filter=evil\n")
	e.write("a.txt", "changed\n")
	if _, err := e.journal.TurnEnded(ctx, e.turn("s1", 2, "p"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a journal snapshot ran a program of the journal's config")
	}
}

// TestTwoInstancesShareAJournal: two shadow instances on one data home
// (two Journals here) write the same project's journal at once; each write
// must wait for the other's, not fail on git's lock files or lose a
// commit.
func TestTwoInstancesShareAJournal(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "0\n")
	other := New(project.NewStore(e.home, nil), quietLog(), Options{})
	t.Cleanup(other.Wait)
	ctx := context.Background()
	if _, err := e.journal.TurnEnded(ctx, e.turn("s0", 1, "init"), ""); err != nil {
		t.Fatal(err)
	}
	const perInstance = 8
	errs := make(chan error, 2*perInstance)
	for i, j := range []*Journal{e.journal, other} {
		go func() {
			for n := 1; n <= perInstance; n++ {
				session := fmt.Sprintf("i%d", i)
				e.write(fmt.Sprintf("f%d-%d.txt", i, n), "x\n")
				_, err := j.TurnEnded(ctx, e.turn(session, n, "concurrent"), "")
				errs <- err
			}
		}()
	}
	for range 2 * perInstance {
		if err := <-errs; err != nil {
			t.Errorf("TurnEnded: %v", err)
		}
	}
	// Every file made is in the journal's newest tree.
	tree := e.plainGit("ls-tree", "-r", "--name-only", "refs/shadow/last")
	for i := range 2 {
		for n := 1; n <= perInstance; n++ {
			if name := fmt.Sprintf("f%d-%d.txt", i, n); !strings.Contains(tree, name) {
				t.Errorf("%s missing from the journal:\n%s", name, tree)
			}
		}
	}
}

// TestFailedEntryStaysPendingThenGivesUp: an entry whose journaling fails
// is not acknowledged (it is retried), until MaxAttempts: then it is, so
// one bad entry cannot hold the group forever.
func TestFailedEntryStaysPendingThenGivesUp(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one\n")
	fake := filepath.Join(t.TempDir(), "git")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho broken >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	j := New(project.NewStore(e.home, nil), quietLog(), Options{Git: gitcmd.Runner{Bin: fake}})
	rdb, key := mustRedis(t)
	c := NewConsumer(rdb, key, j, NewTurns(mustPool(t)), nil, quietLog(), ConsumerOptions{})
	ctx := context.Background()
	if err := c.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	addEvent(t, rdb, key, map[string]any{"event": "turn_ended", "session_id": "s1", "turn_id": "s1:1", "cwd": e.project})
	streams, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: Group, Consumer: "t", Streams: []string{key, ">"}, Count: 1}).Result()
	if err != nil || len(streams) != 1 || len(streams[0].Messages) != 1 {
		t.Fatalf("read: %v %v", streams, err)
	}
	msg := streams[0].Messages[0]
	pending := func() int64 {
		p, err := rdb.XPending(ctx, key, Group).Result()
		if err != nil {
			t.Fatal(err)
		}
		return p.Count
	}
	for n := 1; n < MaxAttempts; n++ {
		c.handleOne(ctx, msg)
		if got := pending(); got != 1 {
			t.Fatalf("after failed attempt %d: %d pending, want 1 (not acknowledged)", n, got)
		}
	}
	c.handleOne(ctx, msg)
	if got := pending(); got != 0 {
		t.Errorf("after %d failed attempts: %d pending, want it acknowledged", MaxAttempts, got)
	}
}
