// Package tasks serves the background tasks that agents start: GET
// /api/tasks lists them with their running state and a preview of their
// output, GET /api/tasks/{task_id} reads one task's output from an offset
// (for tailing).
//
// Claude Code writes each background shell's output (Bash with
// run_in_background) to a task file of its own,
// <root>/<project>/tasks/<task_id>.output, or, in newer versions,
// <root>/<project>/<session uuid>/tasks/<task_id>.output, where <project> is
// the working directory with every character other than A-Z, a-z and 0-9
// replaced by '-' and <root> is $CLAUDE_CODE_TMPDIR, else /tmp/claude-<uid>
// (older versions: /tmp/claude). A Finder looks in a list of such roots.
//
// A task is running while some process holds its output file open (the
// shell that writes it): on Linux every /proc/<pid>/fd is looked at. Where
// /proc cannot be read, a task counts as running when its file changed in
// the last RecentWrite.
//
// A task in a <session uuid> directory belongs to the chat session whose
// agent conversation has that uuid (Sessions, from PostgreSQL).
//
// Nothing outside a root is ever read: task ids are checked against a safe
// charset, and a task file (or a project directory) that resolves, through
// symlinks, to a place outside its root is refused.
package tasks

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Suffix ends every task file's name.
const Suffix = ".output"

// RecentWrite is how recently a task file must have changed to count as
// running when open files cannot be inspected.
const RecentWrite = 5 * time.Second

// PreviewBytes is the most output a task's preview carries.
const PreviewBytes = 2048

// DefaultRoots are the task roots Claude Code writes to, for the current
// user: $CLAUDE_CODE_TMPDIR when set, else /tmp/claude-<uid>, then the
// /tmp/claude of older versions.
func DefaultRoots(getenv func(string) string) []string {
	if d := getenv("CLAUDE_CODE_TMPDIR"); d != "" {
		return []string{d}
	}
	return []string{fmt.Sprintf("/tmp/claude-%d", os.Getuid()), "/tmp/claude"}
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// ValidID reports whether id can name a task: letters, digits, '_' and '-',
// at most 128 characters, not starting with '-' or '_'.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// ProjectKey is Claude Code's directory name for a working directory: every
// character other than A-Z, a-z and 0-9 replaced by '-'.
func ProjectKey(cwd string) string {
	var b strings.Builder
	for _, r := range cwd {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// Errors of Finder.Find.
var (
	ErrNotFound = errors.New("no such task")
	// ErrOutside means the task file resolves to a place outside its root.
	ErrOutside = errors.New("task file leaves the task directory")
)

// Task is one background task's output file.
type Task struct {
	ID string `json:"task_id"`
	// Provider is the agent that started it ("claude" or "codex").
	Provider string `json:"provider"`
	// Project is the directory name of the project (ProjectKey of its cwd).
	Project string `json:"project"`
	// AgentSession is Claude Code's session uuid when its layout has one;
	// SessionID the chat session whose agent that is, when known.
	AgentSession string    `json:"agent_session,omitempty"`
	SessionID    string    `json:"session_id,omitempty"`
	Path         string    `json:"path"`
	Size         int64     `json:"size"`
	UpdatedAt    time.Time `json:"updated_at"`
	Running      bool      `json:"running"`
	// RunningBy says how Running was decided: "open_file" (a process
	// holds the file open; PIDs lists them) or "recent_write".
	RunningBy string `json:"running_by"`
	PIDs      []int  `json:"pids,omitempty"`
	// Command, Cwd, ProcessID (Codex's processId), State and ExitCode
	// are those of a Codex command (codex.go); Path is "" for one.
	Command   string `json:"command,omitempty"`
	Cwd       string `json:"cwd,omitempty"`
	ProcessID string `json:"process_id,omitempty"`
	State     string `json:"state,omitempty"`
	ExitCode  *int   `json:"exit_code,omitempty"`
	// Preview is the end of the output (at most PreviewBytes, from a line
	// start when one is near); PreviewTruncated when output precedes it.
	Preview          *string `json:"preview,omitempty"`
	PreviewTruncated bool    `json:"preview_truncated,omitempty"`

	// root is the resolved root the file was found under: it is read
	// only through it (openTask).
	root string
}

// Finder finds task files under its roots.
type Finder struct {
	Roots []string
	// Proc is the proc file system ("/proc"); "" means /proc.
	Proc string
	// Now tells the time; nil means time.Now.
	Now func() time.Time
}

func (f *Finder) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// Filter narrows List.
type Filter struct {
	// Project keeps the tasks of this project directory name only.
	Project string
	// AgentSession, when OnlyAgentSession, keeps the tasks of this agent
	// session uuid only ("": none).
	AgentSession     string
	OnlyAgentSession bool
	// SessionID keeps the Codex tasks of this chat session only.
	SessionID string
	// Running keeps only running (true) or finished (false) tasks.
	Running *bool
	Limit   int
}

// List returns the tasks under every root, newest first, each with its
// running state and a preview. Entries that leave their root are skipped.
func (f *Finder) List(filter Filter) ([]Task, error) {
	var all []Task
	for _, root := range f.Roots {
		found, err := f.scanRoot(root, filter.Project, "")
		if err != nil {
			return nil, err
		}
		all = append(all, found...)
	}
	sort.SliceStable(all, func(i, j int) bool {
		if !all[i].UpdatedAt.Equal(all[j].UpdatedAt) {
			return all[i].UpdatedAt.After(all[j].UpdatedAt)
		}
		return all[i].ID < all[j].ID
	})
	holders := f.openFiles()
	out := all[:0]
	for _, t := range all {
		if filter.OnlyAgentSession && (filter.AgentSession == "" || t.AgentSession != filter.AgentSession) {
			continue
		}
		f.state(&t, holders)
		if filter.Running != nil && t.Running != *filter.Running {
			continue
		}
		out = append(out, t)
		if filter.Limit > 0 && len(out) == filter.Limit {
			break
		}
	}
	for i := range out {
		p, truncated, err := preview(out[i])
		if err != nil {
			continue // gone since the scan: keep it without a preview
		}
		out[i].Preview, out[i].PreviewTruncated = &p, truncated
	}
	return out, nil
}

// Find returns the task id with its running state, the newest when several
// roots or projects hold one of that name. A task file that resolves
// outside its root is ErrOutside (when no other file of that id is fine).
func (f *Finder) Find(id string) (Task, error) {
	if !ValidID(id) {
		return Task{}, fmt.Errorf("task id %q: %w", id, ErrNotFound)
	}
	var (
		best    *Task
		outside bool
	)
	for _, root := range f.Roots {
		found, err := f.scanRoot(root, "", id)
		if errors.Is(err, ErrOutside) {
			outside = true
			continue
		}
		if err != nil {
			return Task{}, err
		}
		for i := range found {
			if best == nil || found[i].UpdatedAt.After(best.UpdatedAt) {
				best = &found[i]
			}
		}
	}
	switch {
	case best != nil:
		f.state(best, f.openFiles())
		return *best, nil
	case outside:
		return Task{}, fmt.Errorf("task %s: %w", id, ErrOutside)
	}
	return Task{}, fmt.Errorf("task %s: %w", id, ErrNotFound)
}

// scanRoot lists the task files of root: <root>/<project>/tasks/*.output
// and <root>/<project>/<session>/tasks/*.output, only those of project when
// it is not "", only the file of id when id is not "". A missing root has
// no tasks. With id set, a matching file that leaves the root makes the
// answer ErrOutside when nothing else matched.
func (f *Finder) scanRoot(root, project, id string) ([]Task, error) {
	resolved, err := filepath.EvalSymlinks(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("task root %s: %w", root, err)
	}
	projects, err := os.ReadDir(resolved)
	if err != nil {
		return nil, fmt.Errorf("task root %s: %w", root, err)
	}
	var (
		out     []Task
		outside bool
	)
	add := func(projectName, session, dir string) {
		names := []string{}
		if id != "" {
			names = append(names, id+Suffix)
		} else {
			entries, err := os.ReadDir(dir)
			if err != nil {
				return
			}
			for _, e := range entries {
				names = append(names, e.Name())
			}
		}
		for _, name := range names {
			tid, ok := strings.CutSuffix(name, Suffix)
			if !ok || !ValidID(tid) {
				continue
			}
			path := filepath.Join(dir, name)
			t, err := stat(resolved, path)
			if errors.Is(err, ErrOutside) {
				outside = true
				continue
			}
			if err != nil {
				continue
			}
			t.ID, t.Provider, t.Project, t.AgentSession = tid, "claude", projectName, session
			out = append(out, t)
		}
	}
	for _, p := range projects {
		if !p.IsDir() || (project != "" && p.Name() != project) {
			continue // a symlinked project directory is not followed
		}
		pdir := filepath.Join(resolved, p.Name())
		add(p.Name(), "", filepath.Join(pdir, "tasks"))
		sessions, err := os.ReadDir(pdir)
		if err != nil {
			continue
		}
		for _, s := range sessions {
			if s.IsDir() && s.Name() != "tasks" {
				add(p.Name(), s.Name(), filepath.Join(pdir, s.Name(), "tasks"))
			}
		}
	}
	if len(out) == 0 && outside {
		return nil, ErrOutside
	}
	return out, nil
}

// stat describes the task file at path, refusing one that resolves (its
// directories or itself a symlink) outside root or is not a regular file.
func stat(root, path string) (Task, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return Task{}, err
	}
	rel, err := filepath.Rel(root, resolved)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return Task{}, ErrOutside
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return Task{}, err
	}
	if !fi.Mode().IsRegular() {
		return Task{}, fmt.Errorf("%s: not a regular file", path)
	}
	return Task{Path: resolved, Size: fi.Size(), UpdatedAt: fi.ModTime().UTC(), root: root}, nil
}

// openTask opens t's file for reading through its root (os.Root), so that
// a file or directory swapped for a symlink after the scan cannot lead
// outside it, without blocking (a FIFO swapped in is refused, not waited
// on), and checks it is still a regular file.
func openTask(t Task) (*os.File, fs.FileInfo, error) {
	rel, err := filepath.Rel(t.root, t.Path)
	if t.root == "" || err != nil || !filepath.IsLocal(rel) {
		return nil, nil, fmt.Errorf("task %s: %w", t.ID, ErrOutside)
	}
	root, err := os.OpenRoot(t.root)
	if err != nil {
		return nil, nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	defer root.Close()
	file, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if _, serr := stat(t.root, t.Path); errors.Is(serr, ErrOutside) {
			return nil, nil, fmt.Errorf("task %s: %w", t.ID, ErrOutside)
		}
		return nil, nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	fi, err := file.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file", t.Path)
	}
	if err != nil {
		_ = file.Close()
		return nil, nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	return file, fi, nil
}

// state sets t's running state from the open files (nil when they could
// not be inspected) or, failing that, from its last change.
func (f *Finder) state(t *Task, holders map[string][]int) {
	if holders != nil {
		t.RunningBy = "open_file"
		t.PIDs = holders[t.Path]
		t.Running = len(t.PIDs) > 0
		return
	}
	t.RunningBy = "recent_write"
	t.Running = f.now().Sub(t.UpdatedAt) < RecentWrite
}

// preview reads the end of t's file: at most PreviewBytes, starting after
// a newline when one falls in the first half, on a rune boundary.
func preview(t Task) (string, bool, error) {
	file, _, err := openTask(t)
	if err != nil {
		return "", false, err
	}
	defer file.Close()
	start := max(t.Size-PreviewBytes, 0)
	b, err := readAt(file, start, PreviewBytes)
	if err != nil {
		return "", false, err
	}
	if start > 0 {
		if i := strings.IndexByte(string(b), '\n'); i >= 0 && i < len(b)/2 {
			b = b[i+1:]
		} else {
			for len(b) > 0 && !utf8.RuneStart(b[0]) {
				b = b[1:]
			}
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), start > 0, nil
}

// readAt reads up to n bytes of file at offset.
func readAt(file *os.File, offset, n int64) ([]byte, error) {
	buf := make([]byte, n)
	got, err := file.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", file.Name(), err)
	}
	return buf[:got], nil
}

// Chunk is a piece of a task's output.
type Chunk struct {
	Offset     int64  `json:"offset"`
	NextOffset int64  `json:"next_offset"`
	Content    string `json:"content"`
	// EOF: the chunk reaches the end of what is written so far.
	EOF bool `json:"eof"`
}

// ErrOffset means the offset is past the end of the output.
var ErrOffset = errors.New("offset past the end of the output")

// Read returns up to limit bytes of t's output from offset, cut back to a
// rune boundary unless it reaches the end (NextOffset is where the next
// read starts; invalid UTF-8 is replaced by U+FFFD).
func Read(t Task, offset, limit int64) (Chunk, error) {
	file, fi, err := openTask(t)
	if err != nil {
		return Chunk{}, err
	}
	defer file.Close()
	size := fi.Size()
	if offset > size {
		return Chunk{}, fmt.Errorf("offset %d, size %d: %w", offset, size, ErrOffset)
	}
	b, err := readAt(file, offset, min(limit, size-offset))
	if err != nil {
		return Chunk{}, err
	}
	end := offset + int64(len(b)) // bytes written later are left for the next read
	if end < size {
		// Do not split a rune across two chunks.
		cut := len(b)
		for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
			if utf8.RuneStart(b[len(b)-i]) {
				if !utf8.FullRune(b[len(b)-i:]) {
					cut = len(b) - i
				}
				break
			}
		}
		if cut > 0 {
			b = b[:cut]
		}
	}
	return Chunk{
		Offset:     offset,
		NextOffset: offset + int64(len(b)),
		Content:    strings.ToValidUTF8(string(b), "\uFFFD"),
		EOF:        offset+int64(len(b)) >= size,
	}, nil
}
