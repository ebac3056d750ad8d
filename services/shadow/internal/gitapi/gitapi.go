// Package gitapi serves /api/git/{status,diff,log,show}: read-only views of
// the project's OWN git repository (not the shadow journal), the project
// named by the query parameter cwd.
//
// git runs with the repository's configuration but nothing that could run
// a program or write: no pager, no external diff, no textconv, no
// fsmonitor, no hooks, no signature checks, no network (protocol.allow
// never, so a partial clone cannot fetch), GIT_OPTIONAL_LOCKS=0 (status
// does not refresh the index), no system or global configuration, and
// every revision is checked not to start with "-". Output is bounded.
//
// The repository must lie inside the allowed roots (Deps.Allow) as a
// whole, not only cwd: its top level, its git and common directories and
// its object stores. git's discovery is stopped at the roots
// (GIT_CEILING_DIRECTORIES), what it found is checked (confine), and the
// commands then run on that repository by name. A repository that leaves
// the roots answers as no repository at all (404).
package gitapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/shadow/internal/gitcmd"
	"github.com/svc-code/svc-code/services/shadow/internal/journal"
	"github.com/svc-code/svc-code/services/shadow/internal/project"
	"github.com/svc-code/svc-code/services/shadow/internal/roots"
)

// Bounds.
const (
	RequestTimeout  = 30 * time.Second
	MaxOutput       = 8 << 20
	DefaultLogLimit = 50
	MaxLogLimit     = 1000
)

// Deps is what the routes need.
type Deps struct {
	Git gitcmd.Runner
	// Allow, when set, vets a cwd (the allowed roots).
	Allow func(ctx context.Context, cwd string) error
	// Private, when set, answers svc-code's private files: diffs and
	// patches leave them out, and their content is never shown.
	Private func() *roots.Denied
}

type server struct{ Deps }

// Register adds the routes to app.
func Register(app *fiber.App, d Deps) {
	s := &server{d}
	app.Get("/api/git/status", s.status)
	app.Get("/api/git/diff", s.diff)
	app.Get("/api/git/log", s.log)
	app.Get("/api/git/show", s.show)
}

func badRequest(format string, args ...any) error {
	return protocol.Errorf(protocol.CodeBadRequest, format, args...)
}

// safety are the options every command runs with.
var safety = []string{
	"--no-pager",
	"-c", "core.fsmonitor=false",
	"-c", "core.pager=cat",
	"-c", "core.hooksPath=" + os.DevNull,
	"-c", "core.quotepath=false",
	"-c", "core.untrackedCache=false",
	"-c", "diff.external=",
	"-c", "color.ui=false",
	"-c", "log.showSignature=false",
	"-c", "protocol.allow=never",
}

// repo is a project's own repository.
type repo struct {
	git gitcmd.Runner
	dir string // the project's resolved path
	top string // the work tree's top level, resolved (confine)
	// env neutralises the repository's filter drivers (filterEnv) and
	// names the repository (pin).
	env []string
	// pin names the repository open checked: GIT_DIR, GIT_COMMON_DIR,
	// GIT_WORK_TREE.
	pin []string
}

func (r repo) run(ctx context.Context, limit int, args ...string) ([]byte, error) {
	return r.runSpecs(ctx, limit, true, args...)
}

// runSpecs is run; literal false lets pathspec magic through (the
// arguments then spell each pathspec's magic themselves).
func (r repo) runSpecs(ctx context.Context, limit int, literal bool, args ...string) ([]byte, error) {
	env := append([]string{"GIT_OPTIONAL_LOCKS=0", "GIT_NO_REPLACE_OBJECTS=1"}, r.env...)
	if literal {
		env = append(env, "GIT_LITERAL_PATHSPECS=1")
	}
	return r.git.Run(ctx, gitcmd.Cmd{
		Dir:       r.dir,
		Env:       env,
		Args:      append(append([]string{}, safety...), args...),
		MaxOutput: limit,
	})
}

// filterEnv answers the environment that empties every filter driver the
// repository's configuration names (filter.<name>.clean, .smudge,
// .process, and .required false): status and a work-tree diff hash the
// files, which runs a clean filter that .gitattributes assigns, a program
// of the repository's choosing. Overrides go through GIT_CONFIG_COUNT,
// which takes any driver name verbatim ("-c" would split one holding "=").
func filterEnv(ctx context.Context, r repo) ([]string, error) {
	out, err := r.run(ctx, 0, "config", "-z", "--name-only", "--get-regexp", `^filter\.`)
	var ee *gitcmd.ExitError
	if errors.As(err, &ee) && ee.Code == 1 { // no filter configured
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list filter drivers: %w", err)
	}
	seen := map[string]bool{}
	var env []string
	n := 0
	for _, key := range strings.Split(string(out), "\x00") {
		key = strings.TrimSpace(key)
		first, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
		if first < 0 || last <= first {
			continue // filter.<key> without a driver name
		}
		name := key[first+1 : last]
		if seen[name] {
			continue
		}
		seen[name] = true
		for _, kv := range [][2]string{{"clean", ""}, {"smudge", ""}, {"process", ""}, {"required", "false"}} {
			env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=filter.%s.%s", n, name, kv[0]),
				fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, kv[1]))
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	return append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(n)), nil
}

// open resolves cwd and checks it is inside a git work tree that lies,
// with its whole repository, inside the allowed roots (confine). The
// commands that follow run on the repository it found, named outright
// (GIT_DIR, GIT_COMMON_DIR, GIT_WORK_TREE), so that nothing discovers
// another one meanwhile.
func (s *server) open(c *fiber.Ctx) (repo, context.Context, context.CancelFunc, error) {
	cwd := strings.Clone(c.Query("cwd"))
	resolved, err := project.Resolve(cwd)
	if err != nil {
		return repo{}, nil, nil, err
	}
	if s.Allow != nil {
		if err := s.Allow(c.UserContext(), resolved); err != nil {
			return repo{}, nil, nil, err
		}
	}
	notRepo := protocol.Errorf(protocol.CodeNotFound, "%s is not inside a git work tree", cwd)
	ctx, cancel := context.WithTimeout(c.UserContext(), RequestTimeout)
	r := repo{git: s.Git, dir: resolved}
	if ceiling := s.ceiling(ctx, resolved); ceiling != "" {
		r.env = []string{"GIT_CEILING_DIRECTORIES=" + ceiling}
	}
	if err := s.confine(ctx, &r); err != nil {
		cancel()
		var ee *gitcmd.ExitError
		if errors.As(err, &ee) && strings.Contains(ee.Stderr, "dubious ownership") {
			return repo{}, nil, nil, protocol.Errorf(protocol.CodeForbidden, "git refuses a repository owned by another user: %s", cwd)
		}
		if errors.Is(err, errOutside) || errors.As(err, &ee) {
			return repo{}, nil, nil, notRepo
		}
		return repo{}, nil, nil, err
	}
	r.env = r.pin
	fenv, err := filterEnv(ctx, r)
	if err != nil {
		cancel()
		return repo{}, nil, nil, err
	}
	r.env = append(fenv, r.pin...)
	return r, ctx, cancel, nil
}

// errOutside: a part of the repository lies outside the allowed roots.
var errOutside = errors.New("repository outside the allowed roots")

// ceiling answers the nearest ancestor of dir (resolved and allowed) that
// is outside the allowed roots, for GIT_CEILING_DIRECTORIES: git's
// repository discovery walks up from dir and must not reach it. Whatever
// lies inside an allowed path is allowed, so above the first ancestor
// refused every one is refused too. "" when there is no such ancestor or
// no roots to keep to. It is a first fence: confine checks what git found
// (a path holding ":" would split the list).
func (s *server) ceiling(ctx context.Context, dir string) string {
	if s.Allow == nil {
		return ""
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		if s.Allow(ctx, p) != nil {
			return p
		}
		if p == "/" {
			return ""
		}
	}
}

// maxAlternateDepth is how deep git itself follows alternates of
// alternates.
const maxAlternateDepth = 5

// confine finds the repository of r.dir and checks that it lies inside
// the allowed roots: its work tree's top level (core.worktree may put it
// elsewhere), its git directory (a .git file or symbolic link may point
// anywhere), the common directory of a linked worktree, the object
// directory and the object stores it borrows (objects/info/alternates).
// Each is resolved as roots resolves paths, symbolic links included. It
// sets r.top and r.pin (the environment naming that repository). It
// answers git's error when git finds no repository (or refuses one), and
// errOutside when r.dir is not in a work tree or the repository leaves
// the roots.
func (s *server) confine(ctx context.Context, r *repo) error {
	out, err := r.run(ctx, 0, "rev-parse", "--path-format=absolute", "--is-inside-work-tree",
		"--show-toplevel", "--git-dir", "--git-common-dir")
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	// Not four lines: a path holding a newline, not worth the doubt.
	if len(lines) != 4 || lines[0] != "true" {
		return errOutside
	}
	lines = lines[1:]
	paths := make([]string, 3)
	for i, p := range lines {
		if paths[i], err = s.inside(ctx, p); err != nil {
			return err
		}
	}
	top, gitDir, common := paths[0], paths[1], paths[2]
	objects, err := s.inside(ctx, filepath.Join(common, "objects"))
	if err != nil {
		return err
	}
	if err := s.alternatesInside(ctx, objects, 0); err != nil {
		return err
	}
	r.top = top
	r.pin = []string{"GIT_DIR=" + gitDir, "GIT_COMMON_DIR=" + common, "GIT_WORK_TREE=" + top}
	return nil
}

// inside resolves p (absolute) and answers it when it is inside the
// allowed roots, else errOutside.
func (s *server) inside(ctx context.Context, p string) (string, error) {
	if !filepath.IsAbs(p) || strings.IndexByte(p, 0) >= 0 {
		return "", errOutside
	}
	resolved, err := roots.Realpath(filepath.Clean(p))
	if err != nil {
		return "", errOutside
	}
	if s.Allow != nil && s.Allow(ctx, resolved) != nil {
		return "", errOutside
	}
	return resolved, nil
}

// alternatesInside checks the object stores that objects (an object
// directory, resolved) borrows, as git reads them: one per line of
// info/alternates, "#" comments and empty lines skipped, relative to
// objects, their own alternates followed in turn. A quoted entry is
// refused rather than unquoted.
func (s *server) alternatesInside(ctx context.Context, objects string, depth int) error {
	data, err := os.ReadFile(filepath.Join(objects, "info", "alternates")) //nolint:gosec // objects is resolved and inside the allowed roots (inside)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || depth >= maxAlternateDepth {
		return errOutside
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '"' {
			return errOutside
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(objects, line)
		}
		alt, err := s.inside(ctx, line)
		if err != nil {
			return err
		}
		if err := s.alternatesInside(ctx, alt, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// revParam reads an optional revision parameter.
func revParam(c *fiber.Ctx, name string) (string, error) {
	rev := strings.Clone(c.Query(name))
	if rev == "" {
		return "", nil
	}
	if err := journal.CheckRevision(rev); err != nil {
		return "", err
	}
	return rev, nil
}

// pathParam reads an optional path parameter: relative to cwd, or absolute
// inside it.
func pathParam(c *fiber.Ctx, r repo) (string, error) {
	p := strings.Clone(c.Query("path"))
	if p == "" {
		return "", nil
	}
	return journal.RelPath(r.dir, p)
}

// withRevs appends the revisions that are set to git's arguments.
func withRevs(args []string, revs ...string) []string {
	for _, rev := range revs {
		if rev != "" {
			args = append(args, rev)
		}
	}
	return args
}

// withPath ends git's arguments with "--" and the path, if any, so that
// the path is never read as a revision or an option.
func withPath(args []string, path string) []string {
	args = append(args, "--")
	if path != "" {
		args = append(args, path)
	}
	return args
}

// private answers svc-code's private files inside the repository,
// relative to its top level (nil: none).
func (s *server) private(r repo) []string {
	if s.Private == nil {
		return nil
	}
	return s.Private().Under(r.top)
}

// withPathExcluding is withPath leaving out the paths of private
// (relative to the top level): the arguments are then run with
// runSpecs(literal false), every pathspec spelled with its magic.
func withPathExcluding(args []string, path string, private []string) []string {
	args = append(args, "--")
	if path != "" {
		args = append(args, ":(literal)"+path)
	} else {
		args = append(args, ":(top)")
	}
	for _, p := range private {
		args = append(args, ":(exclude,top,literal)"+p)
	}
	return args
}

// gitError turns a failing git command into a client error where the
// client's input is the cause (an unknown revision, a bad path).
func gitError(err error) error {
	var ee *gitcmd.ExitError
	if errors.As(err, &ee) && ee.Code == 128 {
		msg := strings.TrimSpace(ee.Stderr)
		msg = strings.TrimPrefix(msg, "fatal: ")
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return protocol.Errorf(protocol.CodeBadRequest, "git: %s", msg)
	}
	if errors.Is(err, gitcmd.ErrOutputTooLarge) {
		return protocol.Errorf(protocol.CodePayloadTooLarge, "output over %d MB: narrow it with path or limit", MaxOutput>>20)
	}
	return err
}

// verifyRev answers not_found when rev is not a commit of the repository.
func verifyRev(ctx context.Context, r repo, rev string) error {
	if rev == "" {
		return nil
	}
	if _, err := r.run(ctx, 0, "rev-parse", "-q", "--verify", "--end-of-options", rev+"^{commit}"); err != nil {
		var ee *gitcmd.ExitError
		if errors.As(err, &ee) {
			return protocol.Errorf(protocol.CodeNotFound, "unknown revision %q", rev)
		}
		return err
	}
	return nil
}

// StatusEntry is one changed path of git status.
type StatusEntry struct {
	Path string `json:"path"`
	// OrigPath is the source of a rename or copy.
	OrigPath string `json:"orig_path,omitempty"`
	// Index and Worktree are git's XY codes ("." for unchanged, "?" for
	// untracked, "U" for unmerged...).
	Index    string `json:"index"`
	Worktree string `json:"worktree"`
	// Kind: changed, renamed, unmerged or untracked.
	Kind string `json:"kind"`
}

// Status is the answer of GET /api/git/status.
type Status struct {
	Root     string        `json:"root"`
	Branch   string        `json:"branch"`
	Head     string        `json:"head"`
	Upstream string        `json:"upstream,omitempty"`
	Ahead    int           `json:"ahead"`
	Behind   int           `json:"behind"`
	Files    []StatusEntry `json:"files"`
}

func (s *server) status(c *fiber.Ctx) error {
	r, ctx, cancel, err := s.open(c)
	if err != nil {
		return err
	}
	defer cancel()
	out, err := r.run(ctx, MaxOutput, "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=normal",
		"--ignore-submodules=dirty") // a submodule's work tree would be read with its own config
	if err != nil {
		return gitError(err)
	}
	st := parseStatus(out)
	st.Root = r.top
	return c.JSON(st)
}

// parseStatus reads `git status --porcelain=v2 -z --branch`.
func parseStatus(out []byte) Status {
	st := Status{Files: []StatusEntry{}}
	recs := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	for i := 0; i < len(recs); i++ {
		rec := recs[i]
		switch {
		case strings.HasPrefix(rec, "# branch.oid "):
			st.Head = strings.TrimPrefix(rec, "# branch.oid ")
		case strings.HasPrefix(rec, "# branch.head "):
			st.Branch = strings.TrimPrefix(rec, "# branch.head ")
		case strings.HasPrefix(rec, "# branch.upstream "):
			st.Upstream = strings.TrimPrefix(rec, "# branch.upstream ")
		case strings.HasPrefix(rec, "# branch.ab "):
			f := strings.Fields(strings.TrimPrefix(rec, "# branch.ab "))
			if len(f) == 2 {
				st.Ahead, _ = strconv.Atoi(strings.TrimPrefix(f[0], "+"))
				st.Behind, _ = strconv.Atoi(strings.TrimPrefix(f[1], "-"))
			}
		case strings.HasPrefix(rec, "1 "):
			if f := strings.SplitN(rec, " ", 9); len(f) == 9 {
				st.Files = append(st.Files, StatusEntry{Path: f[8], Index: f[1][:1], Worktree: f[1][1:], Kind: "changed"})
			}
		case strings.HasPrefix(rec, "2 "):
			if f := strings.SplitN(rec, " ", 10); len(f) == 10 {
				e := StatusEntry{Path: f[9], Index: f[1][:1], Worktree: f[1][1:], Kind: "renamed"}
				if i+1 < len(recs) {
					i++
					e.OrigPath = recs[i]
				}
				st.Files = append(st.Files, e)
			}
		case strings.HasPrefix(rec, "u "):
			if f := strings.SplitN(rec, " ", 11); len(f) == 11 {
				st.Files = append(st.Files, StatusEntry{Path: f[10], Index: f[1][:1], Worktree: f[1][1:], Kind: "unmerged"})
			}
		case strings.HasPrefix(rec, "? "):
			st.Files = append(st.Files, StatusEntry{Path: rec[2:], Index: "?", Worktree: "?", Kind: "untracked"})
		}
	}
	return st
}

// diff answers GET /api/git/diff: the work tree against the index, or with
// staged=true the index against HEAD, or with from (and to) against
// revisions.
func (s *server) diff(c *fiber.Ctx) error {
	r, ctx, cancel, err := s.open(c)
	if err != nil {
		return err
	}
	defer cancel()
	from, err := revParam(c, "from")
	if err != nil {
		return err
	}
	to, err := revParam(c, "to")
	if err != nil {
		return err
	}
	if to != "" && from == "" {
		return badRequest("to needs from")
	}
	staged := c.Query("staged")
	if staged != "" && staged != "true" && staged != "false" {
		return badRequest("staged must be true or false")
	}
	path, err := pathParam(c, r)
	if err != nil {
		return err
	}
	for _, rev := range []string{from, to} {
		if err := verifyRev(ctx, r, rev); err != nil {
			return err
		}
	}
	// --ignore-submodules=dirty: a submodule's work tree would be read with
	// its own configuration (its filters); its commit changes still show.
	args := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", "--stat=200", "--patch"}
	if staged == "true" {
		args = append(args, "--cached")
	}
	var out []byte
	if private := s.private(r); len(private) > 0 {
		out, err = r.runSpecs(ctx, MaxOutput, false, withPathExcluding(withRevs(args, from, to), path, private)...)
	} else {
		out, err = r.run(ctx, MaxOutput, withPath(withRevs(args, from, to), path)...)
	}
	if err != nil {
		return gitError(err)
	}
	return c.JSON(fiber.Map{"diff": string(out)})
}

// Commit is one entry of GET /api/git/log.
type Commit struct {
	SHA         string    `json:"commit"`
	Parents     []string  `json:"parents"`
	AuthorName  string    `json:"author_name"`
	AuthorEmail string    `json:"author_email"`
	Time        time.Time `json:"time"`
	Subject     string    `json:"subject"`
	Refs        string    `json:"refs,omitempty"`
}

const logFormat = "--format=%H%x00%P%x00%an%x00%ae%x00%ct%x00%s%x00%D%x1e"

func parseLog(out []byte) []Commit {
	commits := []Commit{}
	for _, rec := range strings.Split(string(out), "\x1e") {
		f := strings.Split(strings.TrimLeft(rec, "\n"), "\x00")
		if len(f) != 7 {
			continue
		}
		sec, _ := strconv.ParseInt(f[4], 10, 64)
		parents := strings.Fields(f[1])
		if parents == nil {
			parents = []string{}
		}
		commits = append(commits, Commit{
			SHA: f[0], Parents: parents, AuthorName: f[2], AuthorEmail: f[3], Time: time.Unix(sec, 0).UTC(),
			Subject: f[5], Refs: f[6],
		})
	}
	return commits
}

func (s *server) log(c *fiber.Ctx) error {
	r, ctx, cancel, err := s.open(c)
	if err != nil {
		return err
	}
	defer cancel()
	rev, err := revParam(c, "rev")
	if err != nil {
		return err
	}
	path, err := pathParam(c, r)
	if err != nil {
		return err
	}
	limit := DefaultLogLimit
	if v := c.Query("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > MaxLogLimit {
			return badRequest("limit must be a whole number from 1 to %d", MaxLogLimit)
		}
	}
	skip := 0
	if v := c.Query("skip"); v != "" {
		if skip, err = strconv.Atoi(v); err != nil || skip < 0 {
			return badRequest("skip must be a whole number from 0")
		}
	}
	if err := verifyRev(ctx, r, rev); err != nil {
		return err
	}
	args := []string{"log", "--no-color", logFormat, "--max-count=" + strconv.Itoa(limit), "--skip=" + strconv.Itoa(skip)}
	out, err := r.run(ctx, MaxOutput, withPath(withRevs(args, rev), path)...)
	if err != nil {
		var ee *gitcmd.ExitError
		if errors.As(err, &ee) && strings.Contains(ee.Stderr, "does not have any commits") {
			return c.JSON(fiber.Map{"commits": []Commit{}})
		}
		return gitError(err)
	}
	return c.JSON(fiber.Map{"commits": parseLog(out)})
}

// show answers GET /api/git/show: a commit with its patch, or with path
// the file's content at that revision.
func (s *server) show(c *fiber.Ctx) error {
	r, ctx, cancel, err := s.open(c)
	if err != nil {
		return err
	}
	defer cancel()
	rev, err := revParam(c, "rev")
	if err != nil {
		return err
	}
	if rev == "" {
		rev = "HEAD"
	}
	path, err := pathParam(c, r)
	if err != nil {
		return err
	}
	if err := verifyRev(ctx, r, rev); err != nil {
		return err
	}
	if path != "" {
		prefix, err := r.run(ctx, 0, "rev-parse", "--show-prefix")
		if err != nil {
			return err
		}
		full := strings.TrimSpace(string(prefix)) + path
		if s.Private != nil && s.Private().Path(filepath.Join(r.top, filepath.FromSlash(full))) {
			return protocol.Errorf(protocol.CodeForbidden, "%s is one of svc-code's private files: its content is never shown", path)
		}
		out, err := r.run(ctx, MaxOutput, "cat-file", "blob", rev+":"+full)
		if err != nil {
			var ee *gitcmd.ExitError
			if errors.As(err, &ee) {
				return protocol.Errorf(protocol.CodeNotFound, "%s is not a file at %s", path, rev)
			}
			return gitError(err)
		}
		body := fiber.Map{"rev": rev, "path": path, "size": len(out), "encoding": "utf-8", "content": string(out)}
		if !utf8.Valid(out) {
			body["encoding"], body["content"] = "base64", base64.StdEncoding.EncodeToString(out)
		}
		return c.JSON(body)
	}
	out, err := r.run(ctx, MaxOutput, "log", "-1", "--no-color", logFormat, rev)
	if err != nil {
		return gitError(err)
	}
	commits := parseLog(out)
	if len(commits) != 1 {
		return fmt.Errorf("show %s: unexpected log output", rev)
	}
	showArgs := []string{"show", "--no-color", "--no-ext-diff", "--no-textconv", "--format=", "--stat=200", "--patch", rev}
	var patch []byte
	if private := s.private(r); len(private) > 0 {
		patch, err = r.runSpecs(ctx, MaxOutput, false, withPathExcluding(showArgs, "", private)...)
	} else {
		patch, err = r.run(ctx, MaxOutput, showArgs...)
	}
	if err != nil {
		return gitError(err)
	}
	return c.JSON(fiber.Map{"commit": commits[0], "diff": string(patch)})
}
