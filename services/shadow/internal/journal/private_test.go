package journal

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/secretpaths"
	"github.com/svc-code/svc-code/services/shadow/internal/roots"
)

// TestJournalLeavesPrivateFilesOut: a session in the home directory, whose
// config file the journal recorded before it knew better (turn 1, no
// private set). From then on the journal records none of it (turn 2), never
// shows the recorded version (file, timeline, diff, search) and never
// writes it back (restore, undo).
func TestJournalLeavesPrivateFilesOut(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const cfg = ".config/svc-code/config.yaml"
	e.write("a.txt", "a0\n")
	e.write(cfg, "cookie_secret: SECRET-0\n")
	turn := func(n int, change func()) {
		t.Helper()
		if _, err := e.journal.TurnStarted(ctx, e.turn("s1", n, "turn"), true); err != nil {
			t.Fatal(err)
		}
		change()
		if _, err := e.journal.TurnEnded(ctx, e.turn("s1", n, "turn"), ""); err != nil {
			t.Fatal(err)
		}
	}
	turn(1, func() {
		e.write("a.txt", "a1\n")
		e.write(cfg, "cookie_secret: SECRET-1\n")
	})
	vars := map[string]string{"HOME": e.project, "SVC_CODE_HOME": e.home}
	set := secretpaths.For(func(k string) string { return vars[k] }, nil)
	e.journal.private = func() *roots.Denied { return roots.NewDenied(set) }
	turn(2, func() {
		e.write("a.txt", "a2\n")
		e.write(cfg, "cookie_secret: SECRET-2\n")
	})

	if files := e.plainGit("ls-tree", "-r", "--name-only", "session/s1"); strings.Contains(files, "config.yaml") {
		t.Errorf("the journal's newest tree holds the config file:\n%s", files)
	}
	if log := e.plainGit("log", "-p", "--all"); strings.Contains(log, "SECRET-2") {
		t.Errorf("the journal recorded the config file after it became private:\n%s", log)
	}
	r, _, err := e.journal.Open(e.project)
	if err != nil {
		t.Fatal(err)
	}
	turn1 := ""
	for _, l := range strings.Split(e.plainGit("log", "--format=%H %s", "session/s1"), "\n") {
		if sha, subject, _ := strings.Cut(l, " "); strings.HasPrefix(subject, "turn 1") {
			turn1 = sha
		}
	}
	if turn1 == "" {
		t.Fatalf("no commit of turn 1:\n%s", e.plainGit("log", "--oneline", "session/s1"))
	}
	if _, _, err := r.FileAt(ctx, turn1, cfg); !isCode(err, protocol.CodeForbidden) {
		t.Errorf("FileAt of the config file: %v, want forbidden", err)
	}
	if _, err := r.Timeline(ctx, cfg, 10); !isCode(err, protocol.CodeForbidden) {
		t.Errorf("Timeline of the config file: %v, want forbidden", err)
	}
	c, err := r.CommitInfo(ctx, turn1)
	if err != nil {
		t.Fatal(err)
	}
	diffs, err := r.Diff(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(diffs); strings.Contains(string(b), "SECRET") || !strings.Contains(string(b), `"private":true`) {
		t.Errorf("diff of turn 1 shows the config file: %s", b)
	}
	hits, err := r.Search(ctx, SearchQuery{Pattern: "SECRET", Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 0 {
		t.Errorf("search found the config file's lines: %+v", hits)
	}
	if _, err := e.journal.Restore(ctx, r, turn1, cfg, "s1", true); !isCode(err, protocol.CodeForbidden) {
		t.Errorf("restore of the config file: %v, want forbidden", err)
	}
	res, err := e.journal.Restore(ctx, r, turn1, "", "s1", true)
	if err != nil {
		t.Fatal(err)
	}
	if e.read("a.txt") != "a1\n" || e.read(cfg) != "cookie_secret: SECRET-2\n" {
		t.Errorf("after restoring the tree of turn 1: a.txt %q, config %q; want a1 and the config untouched", e.read("a.txt"), e.read(cfg))
	}
	if b, _ := json.Marshal(res.Kept); !strings.Contains(string(b), `{"path":".config/svc-code/config.yaml","reason":"private"}`) {
		t.Errorf("kept %s, want the config file as private", b)
	}
	if _, err := e.journal.Undo(ctx, r, "s1", true); err != nil {
		t.Fatal(err)
	}
	if e.read(cfg) != "cookie_secret: SECRET-2\n" {
		t.Errorf("undo wrote the config file: %q", e.read(cfg))
	}
}

// A project inside svc-code's private files has no journal.
func TestJournalRefusesAPrivateProject(t *testing.T) {
	e := newEnv(t)
	vars := map[string]string{"HOME": "/nonexistent", "SVC_CODE_HOME": e.home, "XDG_CONFIG_HOME": e.project + "/.."}
	set := secretpaths.For(func(k string) string { return vars[k] }, nil)
	set.Trees = append(set.Trees, e.project)
	e.journal.private = func() *roots.Denied { return roots.NewDenied(set) }
	e.write("a.txt", "a\n")
	if _, err := e.journal.TurnStarted(context.Background(), e.turn("s1", 1, "turn"), true); err == nil {
		t.Error("a turn in a private directory was journaled")
	}
}

// TestHomeSessionWithoutGitignoreIsJournaled: a session in the home
// directory, which holds the data home, and no .gitignore at all. git add
// complains that the excluded data home is ignored too (info/exclude);
// the snapshot must still be taken, without the data home.
func TestHomeSessionWithoutGitignoreIsJournaled(t *testing.T) {
	e := newHomeSessionEnv(t)
	for n := 1; n <= 2; n++ {
		if _, err := e.journal.TurnEnded(context.Background(), e.turn("s1", n, "p"), ""); err != nil {
			t.Fatal(err)
		}
		e.write("notes.txt", "hi again\n")
	}
	if files := e.plainGit("ls-tree", "-r", "--name-only", "session/s1"); files != "notes.txt\n" {
		t.Errorf("journaled files:\n%s", files)
	}
}

// A hard link to a secret file inside the project is not journaled: the
// journal matches it by device and inode.
func TestJournalSkipsHardLinksToSecrets(t *testing.T) {
	e := newEnv(t)
	key := filepath.Join(e.home, "internal.key")
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("SECRET-KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(key, e.path("k")); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "a\n")
	vars := map[string]string{"HOME": "/nonexistent", "SVC_CODE_HOME": e.home}
	set := secretpaths.For(func(k string) string { return vars[k] }, nil)
	e.journal.private = func() *roots.Denied { return roots.NewDenied(set) }
	res, err := e.journal.TurnEnded(context.Background(), e.turn("s1", 1, "p"), "")
	if err != nil {
		t.Fatal(err)
	}
	if files := e.plainGit("ls-tree", "-r", "--name-only", "session/s1"); files != "a.txt\n" {
		t.Errorf("journaled files:\n%s (result %+v)", files, res)
	}
	if log := e.plainGit("log", "-p", "--all"); strings.Contains(log, "SECRET-KEY") {
		t.Errorf("the journal holds the key:\n%s", log)
	}
}
