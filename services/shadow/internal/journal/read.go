package journal

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/shadow/internal/gitcmd"
)

// Bounds of the read routes.
const (
	DefaultLogLimit    = 50
	MaxLogLimit        = 1000
	DefaultSearchLimit = 20
	MaxSearchLimit     = 100
	MaxSearchPattern   = 1000
	maxLinesPerHit     = 20
	maxHitLine         = 500
	maxSearchOutput    = 32 << 20
	// MaxFileView bounds GET /api/shadow/file.
	MaxFileView = 16 << 20
	// MaxFileDiff bounds one file's diff in session changes.
	MaxFileDiff     = 256 << 10
	maxCommitPatch  = 16 << 20
	maxRevisionLen  = 256
	maxBranchCounts = 1000
)

var revisionRE = regexp.MustCompile(`^[A-Za-z0-9_./@^~{}+-]+$`)

// ResolveCommit turns a revision (a sha, a branch such as session/<id>,
// rev~2...) into a commit sha. A malformed revision is bad_request, one the
// journal does not have not_found.
func (r *Repo) ResolveCommit(ctx context.Context, rev string) (string, error) {
	if err := CheckRevision(rev); err != nil {
		return "", err
	}
	out, err := r.run(ctx, nil, "rev-parse", "-q", "--verify", "--end-of-options", rev+"^{commit}")
	if err != nil {
		var ee *gitcmd.ExitError
		if errors.As(err, &ee) {
			return "", protocol.Errorf(protocol.CodeNotFound, "unknown commit %q", rev)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// CheckRevision refuses what cannot be a plain revision: empty, too long,
// starting with "-" (an option), or with characters outside those of ref
// names and revision suffixes.
func CheckRevision(rev string) error {
	switch {
	case rev == "":
		return protocol.Errorf(protocol.CodeBadRequest, "a revision is required")
	case len(rev) > maxRevisionLen:
		return protocol.Errorf(protocol.CodeBadRequest, "revision longer than %d bytes", maxRevisionLen)
	case strings.HasPrefix(rev, "-"):
		return protocol.Errorf(protocol.CodeBadRequest, "a revision must not start with '-'")
	case !revisionRE.MatchString(rev) || strings.Contains(rev, ".."):
		return protocol.Errorf(protocol.CodeBadRequest, "invalid revision %q", rev)
	}
	return nil
}

// RelPath turns a path given by a client (relative to the project, or
// absolute inside it) into a clean slash-separated path relative to the
// project. A path outside the project is forbidden; one inside .git, empty
// or with a NUL byte is bad_request.
func (r *Repo) RelPath(p string) (string, error) {
	return RelPath(r.Project.Path, p)
}

// RelPath is Repo.RelPath for a project's real path.
func RelPath(root, p string) (string, error) {
	if p == "" {
		return "", protocol.Errorf(protocol.CodeBadRequest, "path is required")
	}
	if strings.ContainsRune(p, 0) {
		return "", protocol.Errorf(protocol.CodeBadRequest, "path contains a NUL byte")
	}
	abs := p
	if !filepath.IsAbs(p) {
		abs = filepath.Join(root, p)
	}
	abs = filepath.Clean(abs)
	rel, ok := within(root, abs)
	if !ok {
		// An absolute path through a symlink to the project is still inside.
		if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			rel, ok = within(root, filepath.Join(dir, filepath.Base(abs)))
		}
	}
	if !ok {
		return "", protocol.Errorf(protocol.CodeForbidden, "%s is outside the project", p)
	}
	if rel == "." {
		return "", protocol.Errorf(protocol.CodeBadRequest, "path names the project itself")
	}
	rel = filepath.ToSlash(rel)
	for _, part := range strings.Split(rel, "/") {
		if strings.EqualFold(part, ".git") {
			return "", protocol.Errorf(protocol.CodeBadRequest, "paths inside .git are not journaled")
		}
	}
	return rel, nil
}

func within(root, abs string) (string, bool) {
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// Commit is a journal commit as the read routes answer it.
type Commit struct {
	SHA     string    `json:"commit"`
	Parents []string  `json:"parents"`
	Time    time.Time `json:"time"`
	Subject string    `json:"subject"`
	Trailers
	// Files changed (by the first parent); only when asked for.
	Files []Change `json:"files,omitempty"`
}

const logFormat = "--format=%x1e%H%x00%P%x00%ct%x00%s%x00%(trailers:only,unfold)%x00"

// parseHeader reads the fields of logFormat; rest is what follows them.
func parseHeader(rec string) (Commit, string, bool) {
	f := strings.SplitN(rec, "\x00", 6)
	if len(f) < 5 {
		return Commit{}, "", false
	}
	sec, _ := strconv.ParseInt(f[2], 10, 64)
	c := Commit{
		SHA: f[0], Parents: strings.Fields(f[1]), Time: time.Unix(sec, 0).UTC(), Subject: f[3],
		Trailers: parseTrailers(f[4]),
	}
	if c.Parents == nil {
		c.Parents = []string{}
	}
	rest := ""
	if len(f) == 6 {
		rest = f[5]
	}
	return c, rest, true
}

// parseNameStatus reads the -z --name-status part of a log record.
func parseNameStatus(rest string) []Change {
	f := splitNul([]byte(strings.TrimLeft(rest, "\x00\n")))
	var cs []Change
	for i := 0; i+1 < len(f); i += 2 {
		cs = append(cs, Change{Status: strings.TrimLeft(f[i], "\n"), Path: f[i+1]})
	}
	return cs
}

// LogQuery selects journal commits.
type LogQuery struct {
	// Session keeps the commits made for this session (its branch).
	Session string
	// Path keeps the commits that changed this path (relative, clean).
	Path string
	// Limit and Skip page through the answer, newest first.
	Limit, Skip int
}

func sessionGrep(session string) []string {
	return []string{"-E", "--grep=^" + trailerSession + ": " + regexp.QuoteMeta(session) + "$"}
}

// Log answers journal commits, newest first, with the files each changed.
// Without a session it covers every branch.
func (r *Repo) Log(ctx context.Context, q LogQuery) ([]Commit, error) {
	args := []string{
		"log", "--no-color", "--no-renames", "-z", "--name-status", logFormat,
		"--max-count=" + strconv.Itoa(q.Limit), "--skip=" + strconv.Itoa(q.Skip),
	}
	if q.Session != "" {
		if !ValidSession(q.Session) {
			return nil, protocol.Errorf(protocol.CodeBadRequest, "invalid session id")
		}
		ref := SessionRef(q.Session)
		head, err := r.head(ctx, ref)
		if err != nil {
			return nil, err
		}
		if head == "" {
			return nil, protocol.Errorf(protocol.CodeNotFound, "this project's journal has no branch for session %s", q.Session)
		}
		args = append(append(args, sessionGrep(q.Session)...), ref)
	} else {
		args = append(args, "--all")
	}
	if q.Path != "" {
		args = append(args, "--", q.Path)
	}
	out, err := r.runWith(ctx, []string{"GIT_LITERAL_PATHSPECS=1"}, 0, nil, args...)
	if err != nil {
		if errors.Is(err, gitcmd.ErrOutputTooLarge) {
			return nil, protocol.Errorf(protocol.CodeBadRequest, "log too large: lower limit")
		}
		return nil, fmt.Errorf("journal log: %w", err)
	}
	commits := []Commit{}
	for _, rec := range strings.Split(string(out), "\x1e") {
		c, rest, ok := parseHeader(rec)
		if !ok {
			continue
		}
		c.Files = parseNameStatus(rest)
		commits = append(commits, c)
	}
	return commits, nil
}

// Branch is one journal branch.
type Branch struct {
	Name    string    `json:"name"`
	Session string    `json:"session_id,omitempty"`
	Head    string    `json:"head"`
	Time    time.Time `json:"time"`
	Subject string    `json:"subject"`
	// Commits counts the commits reachable from the branch (its history,
	// inherited commits included); SessionCommits those made for its
	// session.
	Commits        int `json:"commits"`
	SessionCommits int `json:"session_commits"`
}

// Branches lists the journal's branches, newest first, with commit counts.
func (r *Repo) Branches(ctx context.Context) ([]Branch, error) {
	out, err := r.run(ctx, nil, "for-each-ref", "--sort=-committerdate", "--count="+strconv.Itoa(maxBranchCounts),
		"--format=%(refname)%00%(objectname)%00%(committerdate:unix)%00%(contents:subject)", "refs/heads")
	if err != nil {
		return nil, fmt.Errorf("list branches: %w", err)
	}
	own, err := r.sessionCounts(ctx)
	if err != nil {
		return nil, err
	}
	branches := []Branch{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "\x00", 4)
		if len(f) != 4 {
			continue
		}
		sec, _ := strconv.ParseInt(f[2], 10, 64)
		b := Branch{
			Name: strings.TrimPrefix(f[0], "refs/heads/"), Head: f[1], Time: time.Unix(sec, 0).UTC(), Subject: f[3],
		}
		if strings.HasPrefix(f[0], SessionPrefix) {
			b.Session = strings.TrimPrefix(f[0], SessionPrefix)
			b.SessionCommits = own[b.Session]
		}
		n, err := r.line(ctx, "rev-list", "--count", f[1])
		if err != nil {
			return nil, fmt.Errorf("count commits of %s: %w", b.Name, err)
		}
		b.Commits, _ = strconv.Atoi(n)
		branches = append(branches, b)
	}
	return branches, nil
}

func (r *Repo) sessionCounts(ctx context.Context) (map[string]int, error) {
	out, err := r.run(ctx, nil, "log", "--all", "--format=%(trailers:key="+trailerSession+",valueonly,unfold)")
	if err != nil {
		return nil, fmt.Errorf("count session commits: %w", err)
	}
	counts := map[string]int{}
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			counts[l]++
		}
	}
	return counts, nil
}

// Version is one version of a file in its timeline.
type Version struct {
	Commit
	// Status of the file in this commit: A, M, D or T.
	Status string `json:"status"`
	// Blob is the file's object ("" when deleted); Size its size.
	Blob string `json:"blob,omitempty"`
	Mode string `json:"mode,omitempty"`
	Size int64  `json:"size"`
}

// Timeline answers every version of a file across all branches, newest
// first, each with the commit (turn, session) that made it.
func (r *Repo) Timeline(ctx context.Context, rel string, limit int) ([]Version, error) {
	if r.isPrivate(r.denied(), rel) {
		return nil, privateError(rel)
	}
	out, err := r.runWith(ctx, []string{"GIT_LITERAL_PATHSPECS=1"}, 0, nil, "log", "--all", "--no-color",
		"--no-renames", "-z", "--raw", "--no-abbrev", logFormat, "--max-count="+strconv.Itoa(limit), "--", rel)
	if err != nil {
		return nil, fmt.Errorf("file timeline: %w", err)
	}
	versions := []Version{}
	var blobs []string
	for _, rec := range strings.Split(string(out), "\x1e") {
		c, rest, ok := parseHeader(rec)
		if !ok {
			continue
		}
		f := splitNul([]byte(strings.TrimLeft(rest, "\x00\n")))
		for i := 0; i+1 < len(f); i += 2 {
			// :<old mode> <new mode> <old sha> <new sha> <status>
			meta := strings.Fields(strings.TrimLeft(f[i], "\n:"))
			if len(meta) != 5 || f[i+1] != rel {
				continue
			}
			v := Version{Commit: c, Status: meta[4], Mode: meta[1], Blob: meta[3]}
			if strings.Trim(v.Blob, "0") == "" {
				v.Blob, v.Mode = "", ""
			} else {
				blobs = append(blobs, v.Blob)
			}
			versions = append(versions, v)
		}
	}
	sizes, err := r.blobSizes(ctx, blobs)
	if err != nil {
		return nil, err
	}
	for i := range versions {
		versions[i].Size = sizes[versions[i].Blob]
	}
	return versions, nil
}

func (r *Repo) blobSizes(ctx context.Context, blobs []string) (map[string]int64, error) {
	sizes := map[string]int64{}
	if len(blobs) == 0 {
		return sizes, nil
	}
	out, err := r.run(ctx, strings.NewReader(strings.Join(blobs, "\n")+"\n"),
		"cat-file", "--batch-check=%(objectname) %(objectsize)")
	if err != nil {
		return nil, fmt.Errorf("blob sizes: %w", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			sizes[f[0]] = n
		}
	}
	return sizes, nil
}

// FileAt answers a file's content at a commit.
func (r *Repo) FileAt(ctx context.Context, commit, rel string) ([]byte, string, error) {
	if r.isPrivate(r.denied(), rel) {
		return nil, "", privateError(rel)
	}
	sha, err := r.ResolveCommit(ctx, commit)
	if err != nil {
		return nil, "", err
	}
	out, err := r.runWith(ctx, []string{"GIT_LITERAL_PATHSPECS=1"}, 0, nil, "ls-tree", "-z", sha, "--", rel)
	if err != nil {
		return nil, "", fmt.Errorf("find %s: %w", rel, err)
	}
	recs := splitNul(out)
	if len(recs) == 0 {
		return nil, "", protocol.Errorf(protocol.CodeNotFound, "%s is not in commit %s", rel, short(sha))
	}
	meta, _, _ := strings.Cut(recs[0], "\t")
	f := strings.Fields(meta)
	if len(f) != 3 || f[1] != "blob" {
		return nil, "", protocol.Errorf(protocol.CodeBadRequest, "%s is a directory in commit %s", rel, short(sha))
	}
	content, err := r.runWith(ctx, nil, MaxFileView, nil, "cat-file", "blob", f[2])
	if errors.Is(err, gitcmd.ErrOutputTooLarge) {
		return nil, "", protocol.Errorf(protocol.CodePayloadTooLarge, "%s is larger than %d MB", rel, MaxFileView>>20)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", rel, err)
	}
	return content, sha, nil
}

// SearchQuery is a full-text search over the journal's history.
type SearchQuery struct {
	Pattern string
	// Regex: Pattern is a POSIX extended regular expression (as git's -G
	// takes it, and it must also compile as a Go regexp); else a literal.
	Regex bool
	// CaseSensitive: match case; else case-insensitive.
	CaseSensitive bool
	Session       string
	Path          string
	Limit         int
}

// Hit is one commit whose changes match a search.
type Hit struct {
	Commit
	Matches   []Match `json:"matches"`
	Truncated bool    `json:"truncated,omitempty"`
}

// Match is one added ("+") or removed ("-") line that matches.
type Match struct {
	Path string `json:"path"`
	Side string `json:"side"`
	Line string `json:"line"`
}

// Search finds the commits, across all branches, whose changes add or
// remove a line matching the pattern (git log -G): where a text entered or
// left the project, newest first, with the matching lines.
func (r *Repo) Search(ctx context.Context, q SearchQuery) ([]Hit, error) {
	if strings.TrimSpace(q.Pattern) == "" {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "q (the pattern) is required")
	}
	if len(q.Pattern) > MaxSearchPattern || strings.ContainsAny(q.Pattern, "\x00\n") {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "the pattern must be one line of at most %d bytes", MaxSearchPattern)
	}
	denied := r.denied()
	pattern := q.Pattern
	if !q.Regex {
		pattern = regexp.QuoteMeta(pattern)
	}
	goPattern := pattern
	if !q.CaseSensitive {
		goPattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(goPattern)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "invalid regular expression: %v", err)
	}
	args := []string{
		"log", "--no-color", "--no-renames", "--no-ext-diff", "--no-textconv", "-p", "--unified=0",
		logFormat, "-G" + pattern, "--max-count=" + strconv.Itoa(q.Limit),
	}
	if !q.CaseSensitive {
		args = append(args, "-i")
	}
	if q.Session != "" {
		if !ValidSession(q.Session) {
			return nil, protocol.Errorf(protocol.CodeBadRequest, "invalid session id")
		}
		args = append(args, sessionGrep(q.Session)...)
	}
	args = append(args, "--all")
	if q.Path != "" {
		args = append(args, "--", q.Path)
	}
	out, err := r.runWith(ctx, []string{"GIT_LITERAL_PATHSPECS=1"}, maxSearchOutput, nil, args...)
	if err != nil {
		if errors.Is(err, gitcmd.ErrOutputTooLarge) {
			return nil, protocol.Errorf(protocol.CodeBadRequest, "too much matched: lower limit or narrow the pattern or path")
		}
		var ee *gitcmd.ExitError
		if errors.As(err, &ee) && ee.Code == 128 {
			return nil, protocol.Errorf(protocol.CodeBadRequest, "invalid regular expression for git")
		}
		return nil, fmt.Errorf("search journal: %w", err)
	}
	hits := []Hit{}
	for _, rec := range strings.Split(string(out), "\x1e") {
		c, rest, ok := parseHeader(rec)
		if !ok {
			continue
		}
		h := Hit{Commit: c, Matches: []Match{}}
		file := ""
		sc := bufio.NewScanner(strings.NewReader(rest))
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			l := sc.Text()
			switch {
			case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
				if p := diffPath(l[4:]); p != "" {
					file = p
				}
			case strings.HasPrefix(l, "+"), strings.HasPrefix(l, "-"):
				if !re.MatchString(l[1:]) {
					continue
				}
				if len(h.Matches) == maxLinesPerHit {
					h.Truncated = true
					continue
				}
				line := l[1:]
				if len(line) > maxHitLine {
					line = line[:maxHitLine]
				}
				h.Matches = append(h.Matches, Match{Path: file, Side: l[:1], Line: line})
			}
		}
		// Lines of svc-code's private files (journaled before they were
		// left out) are never shown; a commit that matched only there is
		// no hit.
		kept := h.Matches[:0]
		for _, m := range h.Matches {
			if !r.isPrivate(denied, m.Path) {
				kept = append(kept, m)
			}
		}
		if h.Matches = kept; len(kept) == 0 {
			continue
		}
		hits = append(hits, h)
	}
	return hits, nil
}

// diffPath reads the path of a "--- a/x" or "+++ b/x" header ("" for
// /dev/null).
func diffPath(s string) string {
	if s == "/dev/null" {
		return ""
	}
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	if len(s) > 2 && (strings.HasPrefix(s, "a/") || strings.HasPrefix(s, "b/")) {
		return s[2:]
	}
	return s
}

// CommitInfo answers one commit (sha resolved by ResolveCommit).
func (r *Repo) CommitInfo(ctx context.Context, sha string) (Commit, error) {
	out, err := r.run(ctx, nil, "log", "-1", "--no-color", logFormat, sha)
	if err != nil {
		return Commit{}, fmt.Errorf("read commit %s: %w", sha, err)
	}
	c, _, ok := parseHeader(strings.TrimPrefix(string(out), "\x1e"))
	if !ok {
		return Commit{}, fmt.Errorf("read commit %s: unexpected output", sha)
	}
	return c, nil
}

// FileDiff is one file's change in a commit.
type FileDiff struct {
	Path      string `json:"path"`
	Status    string `json:"status"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Binary    bool   `json:"binary,omitempty"`
	Diff      string `json:"diff"`
	Truncated bool   `json:"truncated,omitempty"`
	// Private: one of svc-code's private files, its diff never shown.
	Private bool `json:"private,omitempty"`
}

// Diff answers the files a commit changed (against its first parent, or
// the empty tree for a root commit), each with its unified diff.
func (r *Repo) Diff(ctx context.Context, c Commit) ([]FileDiff, error) {
	from := emptyTree
	if len(c.Parents) > 0 {
		from = c.Parents[0]
	}
	changes, err := r.changes(ctx, from, c.SHA)
	if err != nil {
		return nil, err
	}
	files := make([]FileDiff, len(changes))
	for i, ch := range changes {
		files[i] = FileDiff{Path: ch.Path, Status: ch.Status}
	}
	out, err := r.runWith(ctx, nil, maxCommitPatch, nil, "diff-tree", "-r", "-p", "--no-color", "--no-renames",
		"--no-ext-diff", "--no-textconv", "--no-commit-id", from, c.SHA)
	if errors.Is(err, gitcmd.ErrOutputTooLarge) {
		for i := range files {
			files[i].Truncated = true
		}
		return withoutPrivateDiffs(r, files), nil
	}
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", c.SHA, err)
	}
	chunks := splitPatch(out)
	if len(chunks) != len(files) {
		return withoutPrivateDiffs(r, files), nil // unexpected shape: the list without diffs
	}
	for i, ch := range chunks {
		fd := &files[i]
		for _, l := range bytes.Split(ch, []byte{'\n'}) {
			switch {
			case bytes.HasPrefix(l, []byte("+++ ")), bytes.HasPrefix(l, []byte("--- ")):
			case bytes.HasPrefix(l, []byte("+")):
				fd.Additions++
			case bytes.HasPrefix(l, []byte("-")):
				fd.Deletions++
			case bytes.HasPrefix(l, []byte("Binary files ")):
				fd.Binary = true
			}
		}
		if len(ch) > MaxFileDiff {
			ch, fd.Truncated = ch[:MaxFileDiff], true
		}
		fd.Diff = string(ch)
	}
	return withoutPrivateDiffs(r, files), nil
}

// withoutPrivateDiffs empties the diffs of svc-code's private files (ones
// journaled before they were left out): the file is named, its content
// never shown.
func withoutPrivateDiffs(r *Repo, files []FileDiff) []FileDiff {
	denied := r.denied()
	for i := range files {
		if r.isPrivate(denied, files[i].Path) {
			files[i].Diff, files[i].Additions, files[i].Deletions, files[i].Private = "", 0, 0, true
		}
	}
	return files
}

// splitPatch cuts a patch into one chunk per "diff --git" header.
func splitPatch(p []byte) [][]byte {
	var chunks [][]byte
	start := -1
	for i := 0; i < len(p); {
		if bytes.HasPrefix(p[i:], []byte("diff --git ")) {
			if start >= 0 {
				chunks = append(chunks, p[start:i])
			}
			start = i
		}
		next := bytes.IndexByte(p[i:], '\n')
		if next < 0 {
			break
		}
		i += next + 1
	}
	if start >= 0 {
		chunks = append(chunks, p[start:])
	}
	return chunks
}

// TurnChanges is one commit of a session with its files and diffs.
type TurnChanges struct {
	Commit
	Diffs []FileDiff `json:"diffs"`
}

// SessionChanges answers the session's turn and undo commits on its
// branch, oldest first, each with its files and diffs.
func (r *Repo) SessionChanges(ctx context.Context, session string, limit int) ([]TurnChanges, error) {
	commits, err := r.Log(ctx, LogQuery{Session: session, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := []TurnChanges{}
	for i := len(commits) - 1; i >= 0; i-- {
		c := commits[i]
		if c.Kind != KindTurn && c.Kind != KindUndo && c.Kind != KindRestore {
			continue
		}
		diffs, err := r.Diff(ctx, c)
		if err != nil {
			return nil, err
		}
		c.Files = nil
		out = append(out, TurnChanges{Commit: c, Diffs: diffs})
	}
	return out, nil
}

// Sessions lists the sessions with a branch in the journal.
func (r *Repo) Sessions(ctx context.Context) ([]string, error) {
	out, err := r.run(ctx, nil, "for-each-ref", "--format=%(refname)", SessionPrefix)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if id := strings.TrimPrefix(l, SessionPrefix); id != l {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// Exists reports whether the project path exists on disk.
func (r *Repo) Exists() bool {
	_, err := os.Stat(r.Project.Path)
	return err == nil
}
