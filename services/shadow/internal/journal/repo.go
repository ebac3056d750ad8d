package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/shadow/internal/gitcmd"
	"github.com/svc-code/svc-code/services/shadow/internal/project"
	"github.com/svc-code/svc-code/services/shadow/internal/roots"
)

// Author and committer of every journal commit.
const (
	AuthorName  = "svc-code shadow"
	AuthorEmail = "shadow@svc-code.invalid"
)

// Refs of a journal.
const (
	// SessionPrefix starts every session branch: refs/heads/session/<id>.
	SessionPrefix = "refs/heads/session/"
	// ManualBranch receives restores not tied to a session.
	ManualBranch = "refs/heads/manual"
	// LastRef always names the journal's newest commit, whatever its branch:
	// a new session branch starts from it.
	LastRef = "refs/shadow/last"
	// IndexName is the journal's own index file, inside the journal.
	IndexName = "shadow-index"
	// emptyTree is git's empty tree (SHA-1 object format).
	emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
	zeroOID   = "0000000000000000000000000000000000000000"
)

// DefaultIgnore is what the journal skips besides the project's .gitignore
// files and the project's own ignore setting: dependency, virtualenv and
// cache directories that tools re-create, and editor droppings. Build
// outputs (dist/, build/, target/) are not in it: projects ignore them in
// their .gitignore, and some projects keep sources under those names.
var DefaultIgnore = []string{
	"node_modules/",
	".venv/",
	"venv/",
	"__pycache__/",
	"*.pyc",
	".mypy_cache/",
	".pytest_cache/",
	".ruff_cache/",
	".tox/",
	".gradle/",
	".next/",
	".nuxt/",
	".svelte-kit/",
	".parcel-cache/",
	".terraform/",
	".cache/",
	".DS_Store",
	"Thumbs.db",
}

// attributes neutralises the work tree's .gitattributes for the journal
// ($GIT_DIR/info/attributes wins over them): bytes are stored as they are,
// with no end-of-line conversion and no clean/smudge filter.
const attributes = "* -text -eol -filter -ident -working-tree-encoding\n"

// Repo is one project's journal.
type Repo struct {
	Project project.Project
	git     gitcmd.Runner
	// locked is set while the holder has the project's write lock: only
	// then may a killed command's lock files be removed.
	locked bool
	// private answers svc-code's private files (Options.Private); nil:
	// nothing is.
	private func() *roots.Denied
}

// denied is the private set as it is now (nil: nothing is private).
func (r *Repo) denied() *roots.Denied {
	if r.private == nil {
		return nil
	}
	return r.private()
}

// isPrivate reports whether rel (slash-separated, in the project) is one
// of svc-code's private files or below one, by d (from denied).
func (r *Repo) isPrivate(d *roots.Denied, rel string) bool {
	return d.Path(filepath.Join(r.Project.Path, filepath.FromSlash(rel)))
}

// privateError refuses rel, one of svc-code's private files.
func privateError(rel string) error {
	return protocol.Errorf(protocol.CodeForbidden, "%s is one of svc-code's private files: the journal neither shows nor writes it", rel)
}

// leftOut answers what no snapshot takes, relative to the project: the
// data home when the project holds it (the journals themselves) and
// svc-code's other private files inside the project (its config
// directory, files named by *_FILE variables).
func (r *Repo) leftOut() []string {
	var out []string
	if rel, ok := r.dataHomeInside(); ok {
		out = append(out, rel)
	}
	out = append(out, r.denied().Under(r.Project.Path)...)
	slices.Sort(out)
	// Only the outermost: git add refuses an exclude pathspec naming a
	// path inside an ignored directory.
	var outer []string
	for _, p := range out {
		if len(outer) > 0 {
			last := outer[len(outer)-1]
			if p == last || strings.HasPrefix(p, last+"/") {
				continue
			}
		}
		outer = append(outer, p)
	}
	return outer
}

// Dir is the journal's git directory.
func (r *Repo) Dir() string { return r.Project.Journal }

// globals are the configuration every journal command runs with.
func (r *Repo) globals() []string {
	return []string{
		"-c", "core.autocrlf=false",
		"-c", "core.safecrlf=false",
		"-c", "core.symlinks=true",
		"-c", "core.quotepath=false",
		"-c", "core.fsmonitor=false",
		"-c", "core.hooksPath=" + os.DevNull,
		"-c", "core.excludesFile=" + os.DevNull,
		"-c", "core.attributesFile=" + os.DevNull,
		"-c", "safe.directory=*",
		"-c", "diff.external=",
		"-c", "gc.auto=0",
	}
}

func (r *Repo) env() []string {
	return []string{
		"GIT_DIR=" + r.Project.Journal,
		"GIT_WORK_TREE=" + r.Project.Path,
		"GIT_INDEX_FILE=" + filepath.Join(r.Project.Journal, IndexName),
		"GIT_AUTHOR_NAME=" + AuthorName,
		"GIT_AUTHOR_EMAIL=" + AuthorEmail,
		"GIT_COMMITTER_NAME=" + AuthorName,
		"GIT_COMMITTER_EMAIL=" + AuthorEmail,
		"GIT_NO_REPLACE_OBJECTS=1",
	}
}

// run runs git on the journal, in the project's work tree.
func (r *Repo) run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	return r.runWith(ctx, nil, 0, stdin, args...)
}

// runWith is run with an output bound and extra environment. A command
// killed because ctx ended may leave git's lock files behind: they are
// removed at once (the journal's writers hold the project's lock, so no
// other writer of ours can own them), when the caller holds that lock.
func (r *Repo) runWith(ctx context.Context, extraEnv []string, limit int, stdin io.Reader, args ...string) ([]byte, error) {
	out, err := r.git.Run(ctx, gitcmd.Cmd{
		Dir:       r.Project.Path,
		Env:       append(r.env(), extraEnv...),
		Args:      append(r.globals(), args...),
		Stdin:     stdin,
		MaxOutput: limit,
	})
	if err != nil && ctx.Err() != nil && r.locked {
		r.clearLocks(0)
	}
	return out, err
}

// StaleLock is the age past which a lock file of the journal, found when a
// write starts, is taken for the leftover of a crash and removed.
const StaleLock = time.Minute

// clearLocks removes the lock files git leaves when it is killed, of the
// journal's own index and refs (not refs/heads/snapshot, which the
// shadow-git helper writes), when they are at least olderThan old.
func (r *Repo) clearLocks(olderThan time.Duration) {
	j := r.Project.Journal
	locks := []string{
		filepath.Join(j, IndexName+".lock"),
		filepath.Join(j, "HEAD.lock"),
		filepath.Join(j, "packed-refs.lock"),
		filepath.Join(j, filepath.FromSlash(LastRef)+".lock"),
		filepath.Join(j, filepath.FromSlash(ManualBranch)+".lock"),
	}
	sessions := filepath.Join(j, filepath.FromSlash(strings.TrimSuffix(SessionPrefix, "/")))
	if entries, err := os.ReadDir(sessions); err == nil {
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".lock") {
				locks = append(locks, filepath.Join(sessions, e.Name()))
			}
		}
	}
	for _, l := range locks {
		if st, err := os.Lstat(l); err == nil && time.Since(st.ModTime()) >= olderThan {
			_ = os.Remove(l)
		}
	}
}

func (r *Repo) line(ctx context.Context, args ...string) (string, error) {
	out, err := r.run(ctx, nil, args...)
	return strings.TrimSpace(string(out)), err
}

// exists reports whether the journal has been initialised.
func (r *Repo) exists() bool {
	_, err := os.Stat(filepath.Join(r.Project.Journal, "HEAD"))
	return err == nil
}

// ensure creates the journal (a bare repository) when missing.
func (r *Repo) ensure(ctx context.Context) error {
	if r.exists() {
		return nil
	}
	if err := os.MkdirAll(r.Project.Dir, 0o700); err != nil {
		return fmt.Errorf("create project dir: %w", err)
	}
	// The journal is made aside and renamed into place, so a directory
	// without HEAD is not ours to touch.
	if _, err := os.Stat(r.Project.Journal); err == nil {
		return fmt.Errorf("journal %s exists but is not a git directory", r.Project.Journal)
	}
	tmp := r.Project.Journal + ".init"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("clear journal init dir: %w", err)
	}
	if _, err := r.git.Run(ctx, gitcmd.Cmd{Dir: r.Project.Dir, Args: []string{
		"-c", "init.defaultBranch=manual", "init", "--quiet", "--bare", tmp,
	}}); err != nil {
		return fmt.Errorf("init journal: %w", err)
	}
	cfg := [][2]string{
		{"core.logAllRefUpdates", "always"},
		{"core.autocrlf", "false"},
		{"core.symlinks", "true"},
		{"core.quotepath", "false"},
		{"gc.auto", "0"},
		{"user.name", AuthorName},
		{"user.email", AuthorEmail},
	}
	for _, kv := range cfg {
		if _, err := r.git.Run(ctx, gitcmd.Cmd{Dir: r.Project.Dir, Args: []string{
			"--git-dir=" + tmp, "config", kv[0], kv[1],
		}}); err != nil {
			return fmt.Errorf("configure journal: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(tmp, "info"), 0o700); err != nil {
		return fmt.Errorf("journal info dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "info", "attributes"), []byte(attributes), 0o600); err != nil {
		return fmt.Errorf("journal attributes: %w", err)
	}
	desc := fmt.Sprintf("svc-code shadow journal of %s\n", r.Project.Path)
	if err := os.WriteFile(filepath.Join(tmp, "description"), []byte(desc), 0o600); err != nil {
		return fmt.Errorf("journal description: %w", err)
	}
	if err := os.Rename(tmp, r.Project.Journal); err != nil {
		return fmt.Errorf("install journal: %w", err)
	}
	return nil
}

// writeExclude writes the journal's ignore rules ($GIT_DIR/info/exclude):
// the defaults, then the project's own patterns.
func (r *Repo) writeExclude(extra []string) error {
	var b strings.Builder
	b.WriteString("# Written by svc-code shadow at every snapshot; edit the project's config instead.\n")
	for _, p := range DefaultIgnore {
		b.WriteString(p + "\n")
	}
	// The data home (the journals themselves) when the project holds it,
	// e.g. a session in the home directory, and svc-code's other private
	// files.
	if out := r.leftOut(); len(out) > 0 {
		b.WriteString("# svc-code's data home and private files\n")
		for _, rel := range out {
			b.WriteString("/" + escapeIgnore(rel) + "\n")
		}
	}
	if len(extra) > 0 {
		b.WriteString("# project config\n")
		for _, p := range extra {
			b.WriteString(p + "\n")
		}
	}
	if err := writeInfo(r.Project.Journal, "exclude", b.String()); err != nil {
		return fmt.Errorf("write journal excludes: %w", err)
	}
	// The attributes too, every time: the journal is open to plain git (the
	// shadow-git helper), and without them a filter that the journal's
	// config names and a .gitattributes assigns would run at the snapshot.
	if err := writeInfo(r.Project.Journal, "attributes", attributes); err != nil {
		return fmt.Errorf("write journal attributes: %w", err)
	}
	return nil
}

// writeInfo makes $GIT_DIR/info/<name> a regular file holding content,
// replacing (never writing through) whatever is there.
func writeInfo(journal, name, content string) error {
	dir := filepath.Join(journal, "info")
	path := filepath.Join(dir, name)
	if st, err := os.Lstat(path); err == nil && st.Mode().IsRegular() {
		if old, err := os.ReadFile(path); err == nil && string(old) == content {
			return nil
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("journal info dir: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // a no-op after the rename
	if _, err := f.WriteString(content); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// dataHomeInside answers the data home's path relative to the project when
// the project contains it.
func (r *Repo) dataHomeInside() (string, bool) {
	home := filepath.Dir(filepath.Dir(r.Project.Dir)) // <data home>/projects/<hash>
	if resolved, err := filepath.EvalSymlinks(home); err == nil {
		home = resolved
	}
	rel, err := filepath.Rel(r.Project.Path, home)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	if rel == "." { // the project is the data home: leave out the journals
		return "projects", true
	}
	return filepath.ToSlash(rel), true
}

// onlyLeftOutIgnored reports whether err is git add's complaint that
// pathspecs name ignored paths, listing only paths of left: git makes it
// when an exclude pathspec names a directory that info/exclude ignores
// too, after staging everything else. Any other failure is one.
func onlyLeftOutIgnored(err error, left []string) bool {
	var ee *gitcmd.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	lines := strings.Split(strings.TrimSpace(ee.Stderr), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "The following paths are ignored") {
		return false
	}
	for _, l := range lines[1:] {
		if !slices.Contains(left, strings.TrimSuffix(l, "/")) {
			return false
		}
	}
	return true
}

// escapeIgnore escapes a path for a gitignore pattern.
func escapeIgnore(p string) string {
	var b strings.Builder
	for _, c := range p {
		if strings.ContainsRune(`\*?[]!# `, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Skipped is a file the snapshot left out.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	Size   int64  `json:"size,omitempty"`
}

// Reasons a file is skipped.
const (
	ReasonTooLarge = "too_large"
	ReasonNested   = "nested_repository"
)

// snapshot stages the work tree into the journal's index and writes its
// tree: everything git would add with `git add -A`, honouring the
// project's .gitignore files and the journal's excludes, less the files
// over maxBytes (0: no cap) and nested git repositories, which are skipped.
func (r *Repo) snapshot(ctx context.Context, ignore []string, maxBytes int64) (string, []Skipped, error) {
	if err := r.writeExclude(ignore); err != nil {
		return "", nil, err
	}
	var lastErr error
	for range 3 { // a nested repository made between the listing and the add: list again
		tree, skipped, err := r.trySnapshot(ctx, maxBytes)
		if err == nil {
			return tree, skipped, nil
		}
		lastErr = err
		var ee *gitcmd.ExitError
		if !errors.As(err, &ee) || !strings.Contains(ee.Stderr, "does not have a commit checked out") {
			break
		}
	}
	return "", nil, lastErr
}

func (r *Repo) trySnapshot(ctx context.Context, maxBytes int64) (string, []Skipped, error) {
	// The data home, when the project holds it, and svc-code's private
	// files are left out by pathspec as well as by info/exclude: a negation in a .gitignore outranks the
	// excludes, never a pathspec.
	var unstage []string
	scope := []string{"--", "."}
	left := r.leftOut()
	for _, rel := range left {
		scope = append(scope, ":(exclude,literal)"+rel)
		unstage = append(unstage, rel)
	}
	out, err := r.run(ctx, nil, append([]string{"ls-files", "-z", "-t", "-c", "-o", "--exclude-standard"}, scope...)...)
	if err != nil {
		return "", nil, fmt.Errorf("list work tree: %w", err)
	}
	var skipped []Skipped
	denied := r.denied()
	seen := map[string]bool{}
	for _, rec := range splitNul(out) {
		if len(rec) < 3 {
			continue
		}
		tag, rel := rec[0], rec[2:]
		if seen[rel] {
			continue
		}
		seen[rel] = true
		if strings.HasSuffix(rel, "/") {
			skipped = append(skipped, Skipped{Path: strings.TrimSuffix(rel, "/"), Reason: ReasonNested})
			continue
		}
		if maxBytes <= 0 && !denied.HasLinks() {
			continue
		}
		st, err := os.Lstat(filepath.Join(r.Project.Path, filepath.FromSlash(rel)))
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		switch {
		case denied.Linked(st): // another name of a secret file
			skipped = append(skipped, Skipped{Path: rel, Reason: ReasonPrivate})
		case maxBytes > 0 && st.Size() > maxBytes:
			skipped = append(skipped, Skipped{Path: rel, Reason: ReasonTooLarge, Size: st.Size()})
		default:
			continue
		}
		if tag == 'H' {
			unstage = append(unstage, rel)
		}
	}
	// Tracked files that an ignore rule now covers leave the snapshot too.
	ignored, err := r.run(ctx, nil, append([]string{"ls-files", "-z", "-c", "-i", "--exclude-standard"}, scope...)...)
	if err != nil {
		return "", nil, fmt.Errorf("list ignored: %w", err)
	}
	unstage = append(unstage, splitNul(ignored)...)
	if len(unstage) > 0 {
		if _, err := r.runWith(ctx, []string{"GIT_LITERAL_PATHSPECS=1"}, 0, nulList(unstage),
			"rm", "--cached", "-r", "-q", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return "", nil, fmt.Errorf("unstage skipped: %w", err)
		}
	}
	specs := append([]string{}, scope[1:]...)
	for _, s := range skipped {
		specs = append(specs, ":(exclude,literal)"+s.Path)
	}
	_, err = r.run(ctx, nulList(specs), "-c", "advice.addIgnoredFile=false", "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul")
	if err != nil && !onlyLeftOutIgnored(err, left) {
		return "", nil, fmt.Errorf("stage work tree: %w", err)
	}
	tree, err := r.line(ctx, "write-tree")
	if err != nil {
		return "", nil, fmt.Errorf("write tree: %w", err)
	}
	return tree, skipped, nil
}

// head answers the commit a ref points at, "" when it does not exist.
func (r *Repo) head(ctx context.Context, ref string) (string, error) {
	out, err := r.run(ctx, nil, "rev-parse", "-q", "--verify", ref+"^{commit}")
	if err != nil {
		var ee *gitcmd.ExitError
		if errors.As(err, &ee) && ee.Code == 1 {
			return "", nil
		}
		return "", fmt.Errorf("resolve %s: %w", ref, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// treeOf answers a commit's tree (the empty tree for "").
func (r *Repo) treeOf(ctx context.Context, commit string) (string, error) {
	if commit == "" {
		return emptyTree, nil
	}
	t, err := r.line(ctx, "rev-parse", commit+"^{tree}")
	if err != nil {
		return "", fmt.Errorf("tree of %s: %w", commit, err)
	}
	return t, nil
}

// Change is one file changed between two trees.
type Change struct {
	// Status is A (added), M (modified), D (deleted) or T (type changed).
	Status string `json:"status"`
	Path   string `json:"path"`
}

// changes lists the files that differ between two trees.
func (r *Repo) changes(ctx context.Context, from, to string, paths ...string) ([]Change, error) {
	args := []string{"diff-tree", "-r", "-z", "--no-renames", "--name-status", from, to}
	if len(paths) > 0 {
		args = append(append(args, "--"), paths...)
	}
	out, err := r.runWith(ctx, []string{"GIT_LITERAL_PATHSPECS=1"}, 0, nil, args...)
	if err != nil {
		return nil, fmt.Errorf("diff trees: %w", err)
	}
	f := splitNul(out)
	var cs []Change
	for i := 0; i+1 < len(f); i += 2 {
		cs = append(cs, Change{Status: f[i], Path: f[i+1]})
	}
	return cs, nil
}

// commit writes a commit of tree with parent on ref (whose current value
// must be old, "" for a new ref), and moves LastRef and HEAD to it.
func (r *Repo) commit(ctx context.Context, ref, old, parent, tree, msg string, when time.Time) (string, error) {
	args := []string{"commit-tree", tree}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	args = append(args, "-F", "-")
	date := when.UTC().Format(time.RFC3339)
	out, err := r.runWith(ctx, []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}, 0,
		strings.NewReader(msg), args...)
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	sha := strings.TrimSpace(string(out))
	if err := r.setRef(ctx, ref, sha, old); err != nil {
		return "", err
	}
	return sha, nil
}

// setRef moves ref from old ("" for a new ref) to sha, and LastRef and HEAD
// along with it. Both refs move in one transaction, or neither does.
func (r *Repo) setRef(ctx context.Context, ref, sha, old string) error {
	if old == "" {
		old = zeroOID
	}
	tx := fmt.Sprintf("update %s %s %s\nupdate %s %s\n", ref, sha, old, LastRef, sha)
	if _, err := r.run(ctx, strings.NewReader(tx), "update-ref", "-m", "shadow", "--stdin"); err != nil {
		return fmt.Errorf("update %s: %w", ref, err)
	}
	if cur, err := os.ReadFile(filepath.Join(r.Project.Journal, "HEAD")); err == nil && string(cur) == "ref: "+ref+"\n" {
		return nil
	}
	if _, err := r.run(ctx, nil, "symbolic-ref", "HEAD", ref); err != nil {
		return fmt.Errorf("move HEAD: %w", err)
	}
	return nil
}

func splitNul(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	parts := bytes.Split(b, []byte{0})
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out
}

func nulList(items []string) io.Reader {
	return strings.NewReader(strings.Join(items, "\x00") + "\x00")
}
