// Package journal keeps svc-code's shadow journal: one git repository per
// project, written with the real git binary, that records what every turn
// of every session did to the project's files, bash-made changes included
// (the whole work tree is snapshotted, not just the files the agent named).
//
// Layout: the journal of a project is a bare repository at
// <data home>/projects/<hash>/shadow-git/ (package project) whose work tree
// is the project itself, staged through the journal's own index
// (shadow-git/shadow-index): the project's own .git is never read or
// written, and git never descends into any .git directory.
//
// Branches: refs/heads/session/<session_id>, one per chat session. A
// session's first commit has as parent the journal's newest commit
// (refs/shadow/last), so every branch continues the project's history.
// HEAD follows the branch last written, so plain `git --git-dir=… log -p`
// shows the latest session. Restores outside a session go to
// refs/heads/manual.
//
// Commits: at turn start, a "baseline" commit when the work tree differs
// from the branch (the user's changes between turns); at turn end, a "turn"
// commit when the turn changed anything. Messages carry the turn's first
// prompt line, the changed and skipped files, and Shadow-* trailers
// (Shadow-Kind, Shadow-Session, Shadow-Turn, Shadow-Turn-Id) that the read
// routes parse.
//
// What is snapshotted: what `git add -A` takes, honouring the project's
// .gitignore files, DefaultIgnore and the project's ignore setting; less
// files over the size cap and nested git repositories, which are listed in
// the message as skipped.
package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/shadow/internal/gitcmd"
	"github.com/svc-code/svc-code/services/shadow/internal/project"
	"github.com/svc-code/svc-code/services/shadow/internal/roots"
)

// DefaultMaxFileMB is the size cap when nothing sets one.
const DefaultMaxFileMB = 50

// SizeCap answers the server-wide size cap in MB (0: no cap).
type SizeCap func(ctx context.Context) int

// Journal writes and reads the journals of every project under a data
// home. It serialises the writes to each project's journal.
type Journal struct {
	store *project.Store
	git   gitcmd.Runner
	cap   SizeCap
	log   *slog.Logger
	now   func() time.Time
	// gcAuto is gc.auto for the journals' maintenance.
	gcAuto int
	// stepTimeout bounds one turn's journaling.
	stepTimeout time.Duration
	private     func() *roots.Denied

	mu          sync.Mutex
	locks       map[string]*sync.Mutex
	maintaining map[string]bool // projects with a maintenance job queued or running
	bg          sync.WaitGroup
}

// Options configure a Journal.
type Options struct {
	// Git runs git; the zero value runs "git" from PATH.
	Git gitcmd.Runner
	// MaxFileMB answers the server-wide cap; DefaultMaxFileMB when nil.
	MaxFileMB SizeCap
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// GCAutoObjects is the loose-object count past which a journal is
	// packed after a turn (git's gc.auto); DefaultGCAutoObjects when 0.
	GCAutoObjects int
	// StepTimeout bounds the journaling of one turn event;
	// DefaultStepTimeout when 0.
	StepTimeout time.Duration
	// Private answers what the journal never records, shows or writes:
	// svc-code's secrets (the file routes' private set); nil: nothing.
	Private func() *roots.Denied
}

// DefaultStepTimeout bounds the journaling of one turn event: a git
// command that hangs (a stuck file system, an enormous tree) fails the
// event, to be retried, rather than stall the journal of every project.
const DefaultStepTimeout = 10 * time.Minute

// DefaultGCAutoObjects is git's own gc.auto default.
const DefaultGCAutoObjects = 6700

// New returns a Journal over the store's data home.
func New(store *project.Store, log *slog.Logger, opts Options) *Journal {
	if opts.MaxFileMB == nil {
		opts.MaxFileMB = func(context.Context) int { return DefaultMaxFileMB }
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.GCAutoObjects <= 0 {
		opts.GCAutoObjects = DefaultGCAutoObjects
	}
	if opts.StepTimeout <= 0 {
		opts.StepTimeout = DefaultStepTimeout
	}
	return &Journal{
		store: store, git: opts.Git, cap: opts.MaxFileMB, log: log, now: opts.Now, gcAuto: opts.GCAutoObjects,
		stepTimeout: opts.StepTimeout, locks: map[string]*sync.Mutex{}, maintaining: map[string]bool{},
		private: opts.Private,
	}
}

// Store is the project store the journal works in.
func (j *Journal) Store() *project.Store { return j.store }

// LockName is the file, in a project's directory, whose flock serialises
// the journal's writers across processes (two shadow instances on one data
// home).
const LockName = "journal.lock"

// lock takes a project's write lock, in this process and (with flock on
// LockName) across processes; the answer releases it.
func (j *Journal) lock(hash string) func() {
	j.mu.Lock()
	m, ok := j.locks[hash]
	if !ok {
		m = &sync.Mutex{}
		j.locks[hash] = m
	}
	j.mu.Unlock()
	m.Lock()
	f, err := lockFile(project.Dir(j.store.DataHome(), hash))
	if err != nil {
		j.log.Warn("journal file lock failed, serialising in this process only", "project", hash, "err", err)
		return m.Unlock
	}
	return func() {
		_ = f.Close() // releases the flock
		m.Unlock()
	}
}

// lockFile takes an exclusive flock on dir's LockName, waiting for it.
func lockFile(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create project dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, LockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open journal lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock journal: %w", err)
	}
	return f, nil
}

func (j *Journal) repo(p project.Project) *Repo {
	return &Repo{Project: p, git: j.git, private: j.private}
}

// errPrivateProject: the project lies in svc-code's private files (its
// config directory, its data home), which the journal never records.
var errPrivateProject = protocol.Errorf(protocol.CodeForbidden, "the project lies in svc-code's private files: it has no journal")

// Open answers the journal of a known project (cwd resolved as in
// project.Resolve); a project without a journal is not_found.
func (j *Journal) Open(cwd string) (*Repo, project.Meta, error) {
	p, m, err := j.store.Known(cwd)
	if err != nil {
		return nil, project.Meta{}, err
	}
	r := j.repo(p)
	if r.denied().Path(p.Path) {
		return nil, project.Meta{}, errPrivateProject
	}
	if !r.exists() {
		return nil, project.Meta{}, protocol.Errorf(protocol.CodeNotFound, "no shadow journal for this project yet")
	}
	return r, m, nil
}

// OpenHash answers the journal of the project with this hash.
func (j *Journal) OpenHash(hash string) (*Repo, project.Meta, error) {
	m, err := j.store.Meta(hash)
	if err != nil {
		return nil, project.Meta{}, err
	}
	p := project.Project{
		Path: m.Path, Hash: hash,
		Dir: project.Dir(j.store.DataHome(), hash), Journal: project.JournalDir(j.store.DataHome(), hash),
	}
	r := j.repo(p)
	if r.denied().Path(p.Path) {
		return nil, project.Meta{}, errPrivateProject
	}
	if !r.exists() {
		return nil, project.Meta{}, protocol.Errorf(protocol.CodeNotFound, "no shadow journal for this project yet")
	}
	return r, m, nil
}

// maxBytes is the size cap for a project: its own setting, else the
// server's; 0 disables it.
func (j *Journal) maxBytes(ctx context.Context, m project.Meta) (int64, int) {
	mb := j.cap(ctx)
	if m.MaxFileSizeMB != nil {
		mb = *m.MaxFileSizeMB
	}
	return int64(mb) << 20, mb
}

// sessionRE is what a session id must look like to name a branch.
var sessionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// ValidSession reports whether id can name a session branch.
func ValidSession(id string) bool {
	return sessionRE.MatchString(id) && !strings.Contains(id, "..") && !strings.HasSuffix(id, ".lock") &&
		!strings.HasSuffix(id, ".")
}

// SessionRef is the branch of a session.
func SessionRef(id string) string { return SessionPrefix + id }

// Turn identifies a turn for the journal.
type Turn struct {
	Session string
	ID      string
	Number  int
	Prompt  string
	// Cwd is the session's working directory.
	Cwd string
	// At is when the event happened (commit dates).
	At time.Time
}

// Result is what a journal step did.
type Result struct {
	Project string // the project's hash
	// Commit is the branch head after the step: the new commit, or the
	// unchanged head when there was nothing to commit.
	Commit string
	// Committed reports whether a commit was made.
	Committed bool
	Changes   []Change
	Skipped   []Skipped
}

// ErrNoProject reports a turn whose working directory is gone: nothing
// can be journaled for it.
var ErrNoProject = errors.New("project directory is gone")

// begin resolves and locks the turn's project and opens (creating when
// needed) its journal.
func (j *Journal) begin(ctx context.Context, cwd string) (*Repo, project.Meta, func(), error) {
	p, m, err := j.store.Ensure(cwd)
	if err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return nil, project.Meta{}, nil, fmt.Errorf("%w: %s", ErrNoProject, pe.Message)
		}
		return nil, project.Meta{}, nil, err
	}
	if j.repo(p).denied().Path(p.Path) {
		return nil, project.Meta{}, nil, fmt.Errorf("%w: %s", ErrNoProject, errPrivateProject.Message)
	}
	unlock := j.lock(p.Hash)
	r := j.repo(p)
	if err := r.ensure(ctx); err != nil {
		unlock()
		return nil, project.Meta{}, nil, err
	}
	r.locked = true
	r.clearLocks(StaleLock)
	return r, m, unlock, nil
}

// TurnStarted records the tree at a turn's start: when it differs from the
// session branch's head (or, for a new branch, from the journal's newest
// commit), a baseline commit; baseline false skips the commit (an event
// handled too late to see the tree as it was) but still creates the branch.
func (j *Journal) TurnStarted(ctx context.Context, t Turn, baseline bool) (Result, error) {
	if !ValidSession(t.Session) {
		return Result{}, fmt.Errorf("session id %q cannot name a branch", t.Session)
	}
	ctx, cancel := context.WithTimeout(ctx, j.stepTimeout)
	defer cancel()
	r, m, unlock, err := j.begin(ctx, t.Cwd)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	ref := SessionRef(t.Session)
	head, parent, err := r.branchStart(ctx, ref)
	if err != nil {
		return Result{}, err
	}
	res := Result{Project: r.Project.Hash, Commit: parent}
	if !baseline {
		if head == "" && parent != "" {
			return res, r.setRef(ctx, ref, parent, "")
		}
		return res, nil
	}
	maxBytes, maxMB := j.maxBytes(ctx, m)
	tree, skipped, err := r.snapshot(ctx, m.Ignore, maxBytes)
	if err != nil {
		return Result{}, err
	}
	return r.commitIfChanged(ctx, ref, head, parent, tree, message{
		Kind: KindBaseline, Session: t.Session, Turn: t.Number, TurnID: t.ID, Prompt: t.Prompt,
		Skipped: skipped, MaxFileMB: maxMB,
	}, t.At, res)
}

// TurnEnded commits the turn's changes on the session's branch: the whole
// work tree as it is now, when it differs from the branch's head.
func (j *Journal) TurnEnded(ctx context.Context, t Turn, note string) (Result, error) {
	if !ValidSession(t.Session) {
		return Result{}, fmt.Errorf("session id %q cannot name a branch", t.Session)
	}
	bg := ctx // the maintenance outlives this step's deadline
	ctx, cancel := context.WithTimeout(ctx, j.stepTimeout)
	defer cancel()
	r, m, unlock, err := j.begin(ctx, t.Cwd)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	ref := SessionRef(t.Session)
	head, parent, err := r.branchStart(ctx, ref)
	if err != nil {
		return Result{}, err
	}
	maxBytes, maxMB := j.maxBytes(ctx, m)
	tree, skipped, err := r.snapshot(ctx, m.Ignore, maxBytes)
	if err != nil {
		return Result{}, err
	}
	res, err := r.commitIfChanged(ctx, ref, head, parent, tree, message{
		Kind: KindTurn, Session: t.Session, Turn: t.Number, TurnID: t.ID, Prompt: t.Prompt,
		Note: note, Skipped: skipped, MaxFileMB: maxMB,
	}, t.At, Result{Project: r.Project.Hash, Commit: parent})
	if err == nil && res.Committed {
		j.maintain(bg, r)
	}
	return res, err
}

// maintain packs the journal's loose objects once there are many (git gc
// --auto, git's own threshold), in the background under the project's
// lock, so a long repack delays only this project's next write. ctx ends
// it (git leaves a half-made pack for the next gc to clean); Wait waits
// for it. A failure leaves a working, only bigger, journal.
func (j *Journal) maintain(ctx context.Context, r *Repo) {
	j.mu.Lock()
	if j.maintaining[r.Project.Hash] {
		j.mu.Unlock()
		return
	}
	j.maintaining[r.Project.Hash] = true
	j.mu.Unlock()
	j.bg.Add(1)
	go func() {
		defer j.bg.Done()
		unlock := j.lock(r.Project.Hash)
		defer unlock()
		r := &Repo{Project: r.Project, git: r.git, locked: true, private: r.private}
		_, err := r.run(ctx, nil, "-c", "gc.auto="+strconv.Itoa(j.gcAuto), "-c", "gc.autoDetach=false", "gc", "--auto", "--quiet")
		if err != nil && ctx.Err() == nil {
			j.log.WarnContext(ctx, "journal maintenance failed", "project", r.Project.Hash, "err", err)
		}
		j.mu.Lock()
		delete(j.maintaining, r.Project.Hash)
		j.mu.Unlock()
	}()
}

// Wait waits for the background maintenance started so far; cancel the
// contexts of the writes first to cut it short.
func (j *Journal) Wait() { j.bg.Wait() }

// branchStart answers a branch's head and the parent of its next commit:
// the head, or for a new branch the journal's newest commit.
func (r *Repo) branchStart(ctx context.Context, ref string) (head, parent string, err error) {
	head, err = r.head(ctx, ref)
	if err != nil || head != "" {
		return head, head, err
	}
	last, err := r.head(ctx, LastRef)
	return "", last, err
}

// commitIfChanged commits tree on ref when it differs from parent's tree;
// a new branch with an unchanged tree is pointed at parent.
func (r *Repo) commitIfChanged(ctx context.Context, ref, head, parent, tree string, msg message, at time.Time, res Result) (Result, error) {
	parentTree, err := r.treeOf(ctx, parent)
	if err != nil {
		return Result{}, err
	}
	res.Skipped = msg.Skipped
	if parentTree == tree {
		if head == "" && parent != "" {
			return res, r.setRef(ctx, ref, parent, "")
		}
		return res, nil
	}
	msg.Changes, err = r.changes(ctx, parentTree, tree)
	if err != nil {
		return Result{}, err
	}
	sha, err := r.commit(ctx, ref, head, parent, tree, msg.String(), at)
	if err != nil {
		return Result{}, err
	}
	res.Commit, res.Committed, res.Changes = sha, true, msg.Changes
	return res, nil
}
