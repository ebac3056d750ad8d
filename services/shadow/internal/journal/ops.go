package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/shadow/internal/beneath"
	"github.com/svc-code/svc-code/services/shadow/internal/gitcmd"
)

// entry is a tree entry: mode and object.
type entry struct {
	Mode string
	OID  string
}

// treeEntries lists every file of a tree (recursively) by path.
func (r *Repo) treeEntries(ctx context.Context, tree string) (map[string]entry, error) {
	out, err := r.run(ctx, nil, "ls-tree", "-r", "-z", "--full-tree", tree)
	if err != nil {
		return nil, fmt.Errorf("list tree %s: %w", tree, err)
	}
	m := map[string]entry{}
	for _, rec := range splitNul(out) {
		meta, p, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 3 {
			continue
		}
		m[p] = entry{Mode: f[0], OID: f[2]}
	}
	return m, nil
}

// Conflict is a file the user changed since the journal last saw it, which
// an undo or restore would overwrite.
type Conflict struct {
	Path string `json:"path"`
	// Reason: modified, created or deleted (since the journal's version).
	Reason string `json:"reason"`
}

// ConflictError answers an undo or restore refused because of conflicts;
// nothing was changed.
type ConflictError struct {
	Conflicts []Conflict
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%d files changed since the journal's version", len(e.Conflicts))
}

// conflicts compares the work tree's entries for paths with the expected
// ones.
func conflicts(paths []string, work, expected map[string]entry) []Conflict {
	var out []Conflict
	for _, p := range paths {
		w, inWork := work[p]
		x, inExpected := expected[p]
		switch {
		case inWork && inExpected && w != x:
			out = append(out, Conflict{Path: p, Reason: "modified"})
		case inWork && !inExpected:
			out = append(out, Conflict{Path: p, Reason: "created"})
		case !inWork && inExpected:
			out = append(out, Conflict{Path: p, Reason: "deleted"})
		}
	}
	return out
}

// OpResult is what an undo or restore did.
type OpResult struct {
	// Commit is the undo or restore commit ("" when nothing changed).
	Commit string `json:"commit,omitempty"`
	// Saved is the snapshot commit of the user's unjournaled changes made
	// first, if there were any.
	Saved string `json:"saved,omitempty"`
	// Changed lists the files written (A, M, T) or removed (D) on disk.
	Changed []Change `json:"changed"`
	// Overwritten lists the conflicts a forced operation overwrote (their
	// versions are in Saved).
	Overwritten []Conflict `json:"overwritten,omitempty"`
	// Kept lists the conflicting files left untouched even when forced: the
	// journal has no copy of them (over the size cap, ignored, nested
	// repositories).
	Kept []Conflict `json:"kept,omitempty"`
	// Undone is the turn commit an undo reverted.
	Undone string `json:"undone,omitempty"`
	// Turn is the undone turn's number.
	Turn int `json:"turn_number,omitempty"`
}

// hold takes the project's journal lock for an undo or restore: it answers
// r as the lock's holder, with the lock files a killed git left cleared, and
// the unlock.
func (j *Journal) hold(r *Repo) (*Repo, func()) {
	unlock := j.lock(r.Project.Hash)
	r = &Repo{Project: r.Project, git: r.git, locked: true, private: r.private}
	r.clearLocks(StaleLock)
	return r, unlock
}

// commitFiles answers a commit's tree and every file of it by path (the
// empty tree for "").
func (r *Repo) commitFiles(ctx context.Context, commit string) (string, map[string]entry, error) {
	tree, err := r.treeOf(ctx, commit)
	if err != nil {
		return "", nil, err
	}
	files, err := r.treeEntries(ctx, tree)
	if err != nil {
		return "", nil, err
	}
	return tree, files, nil
}

// Undo puts the project's files back as they were before the session's
// last turn that changed them and is not undone yet: every file that turn
// changed gets its version from before the turn. A file the user (or
// another session) changed since that turn is a conflict: nothing is
// written and a *ConflictError answers, unless force. The user's state is
// committed first (a snapshot) when it is not in the journal yet, so even a
// forced undo loses nothing; the undo itself is a commit on the session's
// branch (Shadow-Undoes names the turn commit), so a second undo reverts
// the turn before.
func (j *Journal) Undo(ctx context.Context, r *Repo, session string, force bool) (OpResult, error) {
	if !ValidSession(session) {
		return OpResult{}, protocol.Errorf(protocol.CodeBadRequest, "invalid session id")
	}
	r, unlock := j.hold(r)
	defer unlock()
	m, err := j.store.Meta(r.Project.Hash)
	if err != nil {
		return OpResult{}, err
	}
	ref := SessionRef(session)
	head, err := r.head(ctx, ref)
	if err != nil {
		return OpResult{}, err
	}
	if head == "" {
		return OpResult{}, protocol.Errorf(protocol.CodeNotFound, "this project's journal has no branch for session %s", session)
	}
	target, parent, turn, err := r.lastTurn(ctx, ref, session)
	if err != nil {
		return OpResult{}, err
	}
	if parent == "" {
		// The journal's first commit: a turn whose start was not journaled
		// (shadow was down, or catching up at its first start) holds the
		// whole project, not the turn's changes. "Before it" is nothing;
		// reverting to that would delete the project.
		return OpResult{}, protocol.Errorf(protocol.CodeConflict,
			"turn %d is the journal's first commit (its start was not journaled): there is no state from before it to go back to", turn)
	}
	parentTree, before, err := r.commitFiles(ctx, parent)
	if err != nil {
		return OpResult{}, err
	}
	targetTree, afterTurn, err := r.commitFiles(ctx, target)
	if err != nil {
		return OpResult{}, err
	}
	changed, err := r.changes(ctx, parentTree, targetTree)
	if err != nil {
		return OpResult{}, err
	}
	paths := changePaths(changed)
	res, err := j.apply(ctx, r, m.Ignore, ref, head, head, paths, afterTurn, before, force, message{
		Kind: KindUndo, Session: session, Turn: turn, Undoes: target,
		Note: fmt.Sprintf("Undid turn %d (commit %s).", turn, target),
	})
	if err != nil {
		return OpResult{}, err
	}
	res.Undone, res.Turn = target, turn
	return res, nil
}

// lastTurn finds the newest turn commit of the session on ref (first
// parents only) that no undo commit names.
func (r *Repo) lastTurn(ctx context.Context, ref, session string) (commit, parent string, turn int, err error) {
	out, err := r.run(ctx, nil, "log", "--first-parent", "--no-color",
		"--format=%x1e%H%x00%P%x00%(trailers:only,unfold)", ref)
	if err != nil {
		return "", "", 0, fmt.Errorf("read session log: %w", err)
	}
	undone := map[string]bool{}
	for _, rec := range strings.Split(string(out), "\x1e") {
		f := strings.SplitN(rec, "\x00", 3)
		if len(f) != 3 {
			continue
		}
		t := parseTrailers(f[2])
		if t.Session != session {
			continue
		}
		switch {
		case t.Kind == KindUndo:
			undone[t.Undoes] = true
		case t.Kind == KindTurn && !undone[f[0]]:
			parents := strings.Fields(f[1])
			p := ""
			if len(parents) > 0 {
				p = parents[0]
			}
			return f[0], p, t.Turn, nil
		}
	}
	return "", "", 0, protocol.Errorf(protocol.CodeNotFound, "session %s has no journaled turn left to undo", session)
}

// Restore puts a file, a directory or (path "") the whole tree back to its
// state at commit. Files the user changed since the journal's newest commit
// are conflicts (a *ConflictError, nothing written) unless force; as with
// Undo the user's state is saved first. The restore is a commit on the
// session's branch, or refs/heads/manual when session is "".
func (j *Journal) Restore(ctx context.Context, r *Repo, commit, relPath, session string, force bool) (OpResult, error) {
	if session != "" && !ValidSession(session) {
		return OpResult{}, protocol.Errorf(protocol.CodeBadRequest, "invalid session id")
	}
	if relPath != "" && r.isPrivate(r.denied(), relPath) {
		return OpResult{}, privateError(relPath)
	}
	sha, err := r.ResolveCommit(ctx, commit)
	if err != nil {
		return OpResult{}, err
	}
	r, unlock := j.hold(r)
	defer unlock()
	m, err := j.store.Meta(r.Project.Hash)
	if err != nil {
		return OpResult{}, err
	}
	ref := ManualBranch
	if session != "" {
		ref = SessionRef(session)
	}
	head, parent, err := r.branchStart(ctx, ref)
	if err != nil {
		return OpResult{}, err
	}
	maxBytes, _ := j.maxBytes(ctx, m)
	workTree, _, err := r.snapshot(ctx, m.Ignore, maxBytes)
	if err != nil {
		return OpResult{}, err
	}
	targetTree, target, err := r.commitFiles(ctx, sha)
	if err != nil {
		return OpResult{}, err
	}
	var specs []string
	if relPath != "" {
		specs = []string{relPath}
	}
	changed, err := r.changes(ctx, workTree, targetTree, specs...)
	if err != nil {
		return OpResult{}, err
	}
	if relPath != "" && len(changed) == 0 && !coversAny(target, relPath) {
		return OpResult{}, protocol.Errorf(protocol.CodeNotFound, "%s is not in commit %s", relPath, short(sha))
	}
	last, err := r.head(ctx, LastRef)
	if err != nil {
		return OpResult{}, err
	}
	_, journaled, err := r.commitFiles(ctx, last)
	if err != nil {
		return OpResult{}, err
	}
	what := "the tree"
	if relPath != "" {
		what = relPath
	}
	return j.apply(ctx, r, m.Ignore, ref, head, parent, changePaths(changed), journaled, target, force, message{
		Kind: KindRestore, Session: session, Note: fmt.Sprintf("Restored %s to commit %s.", what, sha),
	})
}

// ApplyTimeout bounds the writing part of an undo or restore (the saving
// snapshot, the files, the commit), which no request deadline cuts short.
const ApplyTimeout = 5 * time.Minute

// apply writes want's version of each path (removing those want lacks),
// after checking that the work tree still holds expected's version of
// each, and commits the result on ref (whose head is head, "" for a new
// branch that starts at parent). Paths the snapshot skips (over the size
// cap, nested repositories) and ignored files on disk are never written
// over, even when forced: the journal holds no copy of them. They are
// reported in Kept. svc-code's private files (journaled before they were
// left out) are never touched either: reported in Kept as "private".
func (j *Journal) apply(ctx context.Context, r *Repo, ignore []string, ref, head, parent string, paths []string,
	expected, want map[string]entry, force bool, msg message,
) (OpResult, error) {
	denied := r.denied()
	var private []Conflict
	paths = slices.DeleteFunc(slices.Clone(paths), func(p string) bool {
		if r.isPrivate(denied, p) {
			private = append(private, Conflict{Path: p, Reason: ReasonPrivate})
			return true
		}
		return false
	})
	m, err := j.store.Meta(r.Project.Hash)
	if err != nil {
		return OpResult{}, err
	}
	maxBytes, maxMB := j.maxBytes(ctx, m)
	workTree, skipped, err := r.snapshot(ctx, ignore, maxBytes)
	if err != nil {
		return OpResult{}, err
	}
	work, err := r.treeEntries(ctx, workTree)
	if err != nil {
		return OpResult{}, err
	}
	// A path the snapshot skips (over the cap, nested repository) cannot be
	// compared: whatever is on disk there counts as a change of the user's.
	keep := map[string]bool{}
	for _, s := range skipped {
		work[s.Path] = entry{Mode: "skipped"}
		keep[s.Path] = true
	}
	// What the removals below take away: the journaled files want lacks.
	removed := map[string]bool{}
	for _, p := range paths {
		if _, ok := want[p]; !ok {
			if _, ok := work[p]; ok {
				removed[p] = true
			}
		}
	}
	for _, p := range paths {
		if _, ok := work[p]; !ok {
			abs := filepath.Join(r.Project.Path, filepath.FromSlash(p))
			st, err := os.Lstat(abs)
			if err != nil {
				continue
			}
			if st.IsDir() && emptiedBy(abs, p, removed) {
				continue // a directory the removals empty: no file of the user's there
			}
			work[p] = entry{Mode: "ignored"} // on disk but not in the snapshot
			keep[p] = true
		}
	}
	found := conflicts(paths, work, expected)
	if len(found) > 0 && !force {
		return OpResult{}, &ConflictError{Conflicts: found}
	}
	// From here on the operation runs to its end, whatever the request's
	// deadline: stopped between its writes it would leave the project half
	// undone, with no commit saying so.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ApplyTimeout)
	defer cancel()
	res := OpResult{Changed: []Change{}, Kept: private}
	// Save the user's state first when the journal does not have it.
	parentTree, err := r.treeOf(ctx, parent)
	if err != nil {
		return OpResult{}, err
	}
	if parentTree != workTree {
		snap, err := r.commitIfChanged(ctx, ref, head, parent, workTree, message{
			Kind: KindSnapshot, Session: msg.Session, Skipped: skipped, MaxFileMB: maxMB,
			Note: "The work tree as it was before an undo or restore.",
		}, j.now(), Result{})
		if err != nil {
			return OpResult{}, err
		}
		res.Saved, head, parent = snap.Commit, snap.Commit, snap.Commit
	}
	for _, c := range found {
		if keep[c.Path] {
			res.Kept = append(res.Kept, c)
		} else {
			res.Overwritten = append(res.Overwritten, c)
		}
	}
	// Removals first (a file may give way to a directory), deepest first.
	sort.Slice(paths, func(a, b int) bool { return paths[a] > paths[b] })
	for _, p := range paths {
		if _, ok := want[p]; ok {
			continue
		}
		if _, onDisk := work[p]; !onDisk || keep[p] {
			continue
		}
		if err := r.removeFile(p); err != nil {
			return res, err
		}
		res.Changed = append(res.Changed, Change{Status: "D", Path: p})
	}
	sort.Strings(paths)
	for _, p := range paths {
		e, ok := want[p]
		if !ok || e.Mode == "160000" || keep[p] {
			continue
		}
		if err := r.writeFile(ctx, p, e); errors.Is(err, errDirInTheWay) {
			// Files appeared in the directory since the check: they stay.
			res.Kept = append(res.Kept, Conflict{Path: p, Reason: "created"})
			continue
		} else if err != nil {
			return res, err
		}
		status := "M"
		if _, was := work[p]; !was {
			status = "A"
		}
		res.Changed = append(res.Changed, Change{Status: status, Path: p})
	}
	tree, skipped, err := r.snapshot(ctx, ignore, maxBytes)
	if err != nil {
		return res, err
	}
	msg.Skipped, msg.MaxFileMB = skipped, maxMB
	done, err := r.commitIfChanged(ctx, ref, head, parent, tree, msg, j.now(), Result{})
	if err != nil {
		return res, err
	}
	if done.Committed {
		res.Commit = done.Commit
	}
	return res, nil
}

// emptiedBy reports whether every file below the directory abs (rel in
// the project) is among removed, so that the removals leave it empty.
func emptiedBy(abs, rel string, removed map[string]bool) bool {
	errNotEmpty := errors.New("not emptied")
	err := filepath.WalkDir(abs, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		sub, err := filepath.Rel(abs, p)
		if err != nil || !removed[rel+"/"+filepath.ToSlash(sub)] {
			return errNotEmpty
		}
		return nil
	})
	return err == nil
}

func changePaths(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path
	}
	return out
}

func coversAny(entries map[string]entry, rel string) bool {
	if _, ok := entries[rel]; ok {
		return true
	}
	prefix := strings.TrimSuffix(rel, "/") + "/"
	for p := range entries {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// hookChecked, set by tests only, runs between the check of a file's
// path and its first use: a test swaps a parent directory for a symbolic
// link there.
var hookChecked func(abs string)

// ReasonPrivate marks, in Kept, a path that is one of svc-code's private
// files: an undo or restore never writes it.
const ReasonPrivate = "private"

// errUnsafePath reports a journal path that would leave the project.
var errUnsafePath = errors.New("unsafe path")

// errDirInTheWay reports a file to write where a directory that is not
// empty stands.
var errDirInTheWay = errors.New("a directory that is not empty is in the way")

// checkRel checks that rel is a path inside the project that the journal
// may write: relative, no empty, ".", ".." or ".git" element.
func checkRel(rel string) error {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.ContainsRune(rel, 0) {
		return fmt.Errorf("%w: %q", errUnsafePath, rel)
	}
	for _, p := range strings.Split(rel, "/") {
		if p == "" || p == "." || p == ".." || strings.EqualFold(p, ".git") {
			return fmt.Errorf("%w: %q", errUnsafePath, rel)
		}
	}
	return nil
}

// openParent opens the directory of rel beneath the project, every
// directory on the way a real one (a symbolic link is refused, never
// followed, even one swapped in a moment ago), creating missing ones when
// create is set; it answers the directory and rel's last element.
func (r *Repo) openParent(rel string, create bool) (*beneath.Dir, string, error) {
	if err := checkRel(rel); err != nil {
		return nil, "", err
	}
	if hookChecked != nil {
		hookChecked(filepath.Join(r.Project.Path, filepath.FromSlash(rel)))
	}
	dir, name := path.Split(rel)
	d, err := beneath.OpenDir(r.Project.Path, strings.TrimSuffix(dir, "/"), create, 0o755)
	switch {
	case errors.Is(err, beneath.ErrSymlink), errors.Is(err, syscall.ENOTDIR):
		return nil, "", fmt.Errorf("%w: %q: %w", errUnsafePath, rel, err)
	case err != nil:
		return nil, "", fmt.Errorf("open the directory of %s: %w", rel, err)
	}
	return d, name, nil
}

// writeFile puts a tree entry's content at rel, atomically (a temporary
// file renamed over it).
func (r *Repo) writeFile(ctx context.Context, rel string, e entry) error {
	dir, name, err := r.openParent(rel, true)
	if err != nil {
		return err
	}
	defer dir.Close()
	if st, err := dir.Lstat(name); err == nil && st.IsDir() {
		// Only an empty one gives way: what is left in it is not the
		// journal's to delete.
		if err := dir.RemoveDir(name); err != nil {
			return fmt.Errorf("%w: %s: %w", errDirInTheWay, rel, err)
		}
	}
	if e.Mode == "120000" {
		target, err := r.run(ctx, nil, "cat-file", "blob", e.OID)
		if err != nil {
			return fmt.Errorf("read link %s: %w", rel, err)
		}
		// A fresh temporary name (never one that exists: it could be a
		// file of the user's), renamed over the path.
		var tmp string
		for i := 0; ; i++ {
			tmp = fmt.Sprintf("%s.shadow-link-%d-%d", name, os.Getpid(), i)
			err := dir.Symlink(string(target), tmp)
			if err == nil {
				break
			}
			if !errors.Is(err, os.ErrExist) || i >= 100 {
				return fmt.Errorf("write link %s: %w", rel, err)
			}
		}
		if err := dir.Rename(tmp, name); err != nil {
			_ = dir.Remove(tmp)
			return fmt.Errorf("write link %s: %w", rel, err)
		}
		return nil
	}
	mode := os.FileMode(0o644)
	if e.Mode == "100755" {
		mode = 0o755
	}
	f, tmp, err := dir.CreateTemp(".shadow-restore-")
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = dir.Remove(tmp)
		}
	}()
	_, err = r.git.Run(ctx, gitcmd.Cmd{
		Dir: r.Project.Path, Env: r.env(), Args: append(r.globals(), "cat-file", "blob", e.OID), Stdout: f,
	})
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := dir.Rename(tmp, name); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	renamed = true
	return nil
}

// removeFile deletes rel and then its parents that became empty.
func (r *Repo) removeFile(rel string) error {
	dir, name, err := r.openParent(rel, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = dir.Remove(name)
	_ = dir.Close()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", rel, err)
	}
	for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
		parent, base, err := r.openParent(d, false)
		if err != nil {
			break
		}
		err = parent.RemoveDir(base)
		_ = parent.Close()
		if err != nil {
			break // not empty
		}
	}
	return nil
}

func short(sha string) string { return sha[:min(len(sha), 12)] }
