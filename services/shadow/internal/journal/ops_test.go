package journal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/shadow/internal/project"
)

// twoTurns journals two turns of session s1: turn 1 edits a.txt and
// creates b.txt (by shell); turn 2 edits c.txt and deletes d.txt.
func twoTurns(t *testing.T) (*env, *Repo) {
	t.Helper()
	e := newEnv(t)
	e.write("a.txt", "a0\n")
	e.write("c.txt", "c0\n")
	e.write("d.txt", "d0\n")
	ctx := context.Background()
	step := func(n int, change func()) {
		if _, err := e.journal.TurnStarted(ctx, e.turn("s1", n, "turn"), true); err != nil {
			t.Fatal(err)
		}
		change()
		if _, err := e.journal.TurnEnded(ctx, e.turn("s1", n, "turn"), ""); err != nil {
			t.Fatal(err)
		}
	}
	step(1, func() {
		e.write("a.txt", "a1\n")
		e.sh("mkdir -p sub && echo b1 > sub/b.txt")
	})
	step(2, func() {
		e.write("c.txt", "c2\n")
		e.sh("rm d.txt")
	})
	r, _, err := e.journal.Open(e.project)
	if err != nil {
		t.Fatal(err)
	}
	return e, r
}

func TestUndoRestoresTurnByTurn(t *testing.T) {
	e, r := twoTurns(t)
	ctx := context.Background()
	res, err := e.journal.Undo(ctx, r, "s1", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Turn != 2 || e.read("c.txt") != "c0\n" || e.read("d.txt") != "d0\n" || e.read("a.txt") != "a1\n" {
		t.Fatalf("after undo of turn 2: %+v, c=%q", res, e.read("c.txt"))
	}
	res, err = e.journal.Undo(ctx, r, "s1", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Turn != 1 || e.read("a.txt") != "a0\n" || !e.missing("sub/b.txt") || !e.missing("sub") {
		t.Fatalf("after undo of turn 1: %+v", res)
	}
	if _, err := e.journal.Undo(ctx, r, "s1", false); !isCode(err, protocol.CodeNotFound) {
		t.Errorf("third undo: %v, want not_found", err)
	}
	log := e.plainGit("log", "--format=%s", "session/s1")
	if !strings.Contains(log, "undo turn 2") || !strings.Contains(log, "undo turn 1") {
		t.Errorf("undo commits missing:\n%s", log)
	}
}

func TestUndoConflict(t *testing.T) {
	e, r := twoTurns(t)
	ctx := context.Background()
	e.write("c.txt", "the user's edit\n")
	_, err := e.journal.Undo(ctx, r, "s1", false)
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0] != (Conflict{Path: "c.txt", Reason: "modified"}) {
		t.Fatalf("Undo = %v, want a conflict on c.txt", err)
	}
	if e.read("c.txt") != "the user's edit\n" || !e.missing("d.txt") {
		t.Fatal("a refused undo changed files")
	}
	before := e.commitCount("session/s1")
	res, err := e.journal.Undo(ctx, r, "s1", true)
	if err != nil {
		t.Fatal(err)
	}
	if e.read("c.txt") != "c0\n" || res.Saved == "" || len(res.Overwritten) != 1 {
		t.Fatalf("forced undo: %+v", res)
	}
	// The overwritten edit is in the journal.
	if got := e.plainGit("show", res.Saved+":c.txt"); got != "the user's edit\n" {
		t.Errorf("saved c.txt = %q", got)
	}
	if got := e.commitCount("session/s1"); got != before+2 {
		t.Errorf("%d commits, want %d (snapshot + undo)", got, before+2)
	}
}

func TestRestore(t *testing.T) {
	e, r := twoTurns(t)
	ctx := context.Background()
	first := strings.TrimSpace(e.plainGit("rev-list", "--max-parents=0", "session/s1"))

	res, err := e.journal.Restore(ctx, r, first, "a.txt", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if e.read("a.txt") != "a0\n" || e.read("c.txt") != "c2\n" || len(res.Changed) != 1 {
		t.Fatalf("restore of a.txt: %+v", res)
	}
	if h := strings.TrimSpace(e.plainGit("rev-parse", "manual")); h != res.Commit {
		t.Errorf("manual = %s, want the restore commit %s", h, res.Commit)
	}
	// A directory: sub/ did not exist at the first commit.
	if _, err := e.journal.Restore(ctx, r, first, "sub", "", false); err != nil {
		t.Fatal(err)
	}
	if !e.missing("sub/b.txt") || !e.missing("sub") {
		t.Error("restoring sub/ to a commit without it left it on disk")
	}

	e.write("c.txt", "user\n")
	_, err = e.journal.Restore(ctx, r, first, "", "", false)
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].Path != "c.txt" {
		t.Fatalf("Restore of the tree = %v, want a conflict on c.txt", err)
	}
	if e.read("c.txt") != "user\n" || !e.missing("d.txt") {
		t.Fatal("a refused restore changed files")
	}
	if _, err := e.journal.Restore(ctx, r, first, "", "s1", true); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{"a.txt": "a0\n", "c.txt": "c0\n", "d.txt": "d0\n"} {
		if got := e.read(f); got != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	if !e.missing("sub/b.txt") {
		t.Error("sub/b.txt survived a restore of the whole tree")
	}
}

func TestRestoreBadInput(t *testing.T) {
	e, r := twoTurns(t)
	ctx := context.Background()
	head := strings.TrimSpace(e.plainGit("rev-parse", "session/s1"))
	outside := filepath.Join(filepath.Dir(e.project), "elsewhere.txt")
	tests := []struct {
		name, commit, path, code string
	}{
		{"unknown commit", "0123456789abcdef0123456789abcdef01234567", "", protocol.CodeNotFound},
		{"unknown branch", "session/nope", "", protocol.CodeNotFound},
		{"option as revision", "--all", "", protocol.CodeBadRequest},
		{"range", "a..b", "", protocol.CodeBadRequest},
		{"space", "HEAD a", "", protocol.CodeBadRequest},
		{"path not in commit", head, "nope.txt", protocol.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.journal.Restore(ctx, r, tt.commit, tt.path, "", false)
			if !isCode(err, tt.code) {
				t.Errorf("Restore = %v, want %s", err, tt.code)
			}
		})
	}
	for _, p := range []string{"../x", outside, "/etc/passwd", ".git/config", "a/../../x", "x\x00y", ""} {
		if _, err := r.RelPath(p); err == nil {
			t.Errorf("RelPath(%q) accepted", p)
		}
	}
	if rel, err := r.RelPath(filepath.Join(e.project, "sub", "b.txt")); err != nil || rel != "sub/b.txt" {
		t.Errorf("RelPath(absolute inside) = %q, %v", rel, err)
	}
	if e.read("a.txt") != "a1\n" || e.read("c.txt") != "c2\n" {
		t.Error("bad input changed files")
	}
}

func TestUndoKeepsFilesTheJournalLacks(t *testing.T) {
	e := newEnv(t)
	e.capMB = 1
	ctx := context.Background()
	e.write("a.txt", "a0\n")
	if _, err := e.journal.TurnStarted(ctx, e.turn("s1", 1, "p"), true); err != nil {
		t.Fatal(err)
	}
	e.write("big.bin", "small at first\n")
	if _, err := e.journal.TurnEnded(ctx, e.turn("s1", 1, "p"), ""); err != nil {
		t.Fatal(err)
	}
	// The user grows big.bin past the cap: a forced undo must not delete it.
	big := strings.Repeat("z", 1<<20+10)
	e.write("big.bin", big)
	r, _, err := e.journal.Open(e.project)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.journal.Undo(ctx, r, "s1", true)
	if err != nil {
		t.Fatal(err)
	}
	if e.read("big.bin") != big || len(res.Kept) != 1 {
		t.Errorf("forced undo: %+v; big.bin kept = %v", res, e.read("big.bin") == big)
	}
}

func TestRestoreRefusesSymlinkedParent(t *testing.T) {
	e, r := twoTurns(t)
	ctx := context.Background()
	// The user replaces sub/ by a link to a directory outside the project;
	// restoring sub/b.txt must not write through it.
	outside := t.TempDir()
	if err := os.RemoveAll(e.path("sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, e.path("sub")); err != nil {
		t.Fatal(err)
	}
	second := strings.TrimSpace(e.plainGit("rev-parse", "session/s1~1"))
	// Forced or not, whatever the answer, nothing is written outside.
	_, _ = e.journal.Restore(ctx, r, second, "sub/b.txt", "", true)
	_, _ = e.journal.Restore(ctx, r, second, "", "", true)
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("restore wrote through a symlink out of the project: %v", entries)
	}
}

func isCode(err error, code string) bool {
	var pe *protocol.Error
	return errors.As(err, &pe) && pe.Code == code
}

// TestUndoKeepsUnjournaledFilesInADirectory: a turn replaced file x by a
// directory x/ holding a journaled file and an ignored one; undoing it must
// not delete the ignored file (the journal holds no copy) to put x back,
// even forced: x is a conflict, kept.
func TestUndoKeepsUnjournaledFilesInADirectory(t *testing.T) {
	e := newEnv(t)
	e.write(".gitignore", "*.log\n")
	e.write("x", "file x\n")
	ctx := context.Background()
	if _, err := e.journal.TurnStarted(ctx, e.turn("s1", 1, "dir"), true); err != nil {
		t.Fatal(err)
	}
	e.sh("rm x && mkdir x && echo a > x/a.txt && echo precious > x/debug.log")
	if _, err := e.journal.TurnEnded(ctx, e.turn("s1", 1, "dir"), ""); err != nil {
		t.Fatal(err)
	}
	r, _, err := e.journal.Open(e.project)
	if err != nil {
		t.Fatal(err)
	}
	var ce *ConflictError
	if _, err := e.journal.Undo(ctx, r, "s1", false); !errors.As(err, &ce) {
		t.Fatalf("undo = %v, want a conflict on x", err)
	}
	res, err := e.journal.Undo(ctx, r, "s1", true)
	if err != nil {
		t.Fatal(err)
	}
	if e.missing("x/debug.log") || e.read("x/debug.log") != "precious\n" {
		t.Fatalf("undo deleted an ignored file the journal has no copy of: %+v", res)
	}
	if !e.missing("x/a.txt") {
		t.Errorf("x/a.txt should be gone: %+v", res)
	}
	if len(res.Kept) != 1 || res.Kept[0].Path != "x" {
		t.Errorf("kept = %+v, want x", res.Kept)
	}
}

// TestUndoFinishesOnceItWrites: a request deadline that passes while an
// undo writes the files must not leave it half done (some files put back,
// no undo commit): once the checks pass, the undo runs to its end.
func TestUndoFinishesOnceItWrites(t *testing.T) {
	e, _ := twoTurns(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The clock is read for the snapshot commit of the user's state, right
	// before the files are written: the request ends there.
	j := New(project.NewStore(e.home, nil), quietLog(), Options{Now: func() time.Time { cancel(); return time.Now() }})
	t.Cleanup(j.Wait)
	r, _, err := j.Open(e.project)
	if err != nil {
		t.Fatal(err)
	}
	e.write("user.txt", "an unrelated change of the user's\n")
	res, err := j.Undo(ctx, r, "s1", false)
	if err != nil {
		t.Fatalf("undo = %v (c.txt %q, d missing %v)", err, e.read("c.txt"), e.missing("d.txt"))
	}
	if e.read("c.txt") != "c0\n" || e.read("d.txt") != "d0\n" || res.Commit == "" || res.Saved == "" {
		t.Errorf("undo half done: %+v", res)
	}
}

// TestUndoOfASymlinkKeepsNeighbours: putting a symbolic link back goes
// through a temporary name; a file of the user's that happens to bear a
// name like it must survive.
func TestUndoOfASymlinkKeepsNeighbours(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "a\n")
	e.write("link.shadow-tmp", "the user's own file\n")
	e.sh("ln -s a.txt link")
	ctx := context.Background()
	if _, err := e.journal.TurnStarted(ctx, e.turn("s1", 1, "rm link"), true); err != nil {
		t.Fatal(err)
	}
	e.sh("rm link")
	if _, err := e.journal.TurnEnded(ctx, e.turn("s1", 1, "rm link"), ""); err != nil {
		t.Fatal(err)
	}
	r, _, err := e.journal.Open(e.project)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.journal.Undo(ctx, r, "s1", false); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(e.path("link")); err != nil || target != "a.txt" {
		t.Errorf("link = %q, %v; want a.txt", target, err)
	}
	if e.missing("link.shadow-tmp") || e.read("link.shadow-tmp") != "the user's own file\n" {
		t.Error("undo deleted a file of the user's named like its temporary link")
	}
}

// TestUndoOfTheFirstCommitDeletesNothing: a turn whose start was not
// journaled (shadow down, or its first start catching up) and that is the
// journal's first commit holds the whole project, not the turn's changes:
// there is no state from before it, and undoing it must not delete the
// project.
func TestUndoOfTheFirstCommitDeletesNothing(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "the user's file\n")
	e.write("src/b.go", "package b\n")
	ctx := context.Background()
	if _, err := e.journal.TurnStarted(ctx, e.turn("s1", 1, "late"), false); err != nil {
		t.Fatal(err)
	}
	e.write("c.txt", "made by the turn\n")
	if _, err := e.journal.TurnEnded(ctx, e.turn("s1", 1, "late"), "start not journaled"); err != nil {
		t.Fatal(err)
	}
	r, _, err := e.journal.Open(e.project)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.journal.Undo(ctx, r, "s1", true)
	if !isCode(err, protocol.CodeConflict) {
		t.Errorf("undo = %+v, %v; want a conflict", res, err)
	}
	if e.missing("a.txt") || e.missing("src/b.go") || e.missing("c.txt") {
		t.Fatalf("undo of the journal's first commit deleted the project: %+v", res)
	}
}

// TestUndoOfAFileMadeADirectory: a turn replaced file x by a directory
// x/ of new files; undo puts the file back, with no conflict (the
// directory holds nothing but what the turn made).
func TestUndoOfAFileMadeADirectory(t *testing.T) {
	e := newEnv(t)
	e.write("x", "file x\n")
	ctx := context.Background()
	if _, err := e.journal.TurnStarted(ctx, e.turn("s1", 1, "dir"), true); err != nil {
		t.Fatal(err)
	}
	e.sh("rm x && mkdir -p x/y && echo a > x/a.txt && echo b > x/y/b.txt")
	if _, err := e.journal.TurnEnded(ctx, e.turn("s1", 1, "dir"), ""); err != nil {
		t.Fatal(err)
	}
	r, _, err := e.journal.Open(e.project)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.journal.Undo(ctx, r, "s1", false)
	if err != nil {
		t.Fatal(err)
	}
	if e.read("x") != "file x\n" || len(res.Kept) != 0 {
		t.Errorf("after undo: %+v", res)
	}
}

// TestRestoreRefusesParentSwappedAfterCheck: between the check of a
// file's parents and the write, sub/ is replaced by a symbolic link to a
// directory outside the project. The restore fails and writes nothing
// there.
func TestRestoreRefusesParentSwappedAfterCheck(t *testing.T) {
	e, r := twoTurns(t)
	ctx := context.Background()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "b.txt"), []byte("outside's own\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.write("sub/b.txt", "changed by the user\n")
	swapped := false
	hookChecked = func(abs string) {
		if swapped || !strings.HasSuffix(abs, "/sub/b.txt") {
			return
		}
		swapped = true
		if err := os.Rename(e.path("sub"), e.path("sub.moved")); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(outside, e.path("sub")); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { hookChecked = nil })
	first := strings.TrimSpace(e.plainGit("rev-parse", "session/s1~1"))
	_, err := e.journal.Restore(ctx, r, first, "sub/b.txt", "", true)
	if !swapped {
		t.Fatal("the hook did not run")
	}
	if err == nil {
		t.Error("restore through a swapped parent succeeded")
	}
	entries, _ := os.ReadDir(outside)
	data, _ := os.ReadFile(filepath.Join(outside, "b.txt"))
	if len(entries) != 1 || string(data) != "outside's own\n" {
		t.Errorf("restore wrote outside the project: %d entries, b.txt %q", len(entries), data)
	}
}
