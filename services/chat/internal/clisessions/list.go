// Package clisessions reads the sessions Claude Code and Codex keep on disk
// when a user runs them in a plain terminal: Claude Code's
// <claude dir>/projects/<project>/<session id>.jsonl and Codex's
// <codex home>/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl.
//
// Finder lists them (project, title from the first prompt, last activity,
// size; the head of each file read once, bounded, and cached by path,
// inode, size and modification time) and finds one by id; Reader pages
// through a file backwards from its end and follows what is appended,
// converting each line (Convert) into the lines a session's log holds.
// Nothing here writes to the CLIs' directories.
package clisessions

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/svc-code/svc-code/libs/protocol"
)

// Errors of Finder and Reader.
var (
	ErrBadID       = errors.New("bad session id")
	ErrBadProvider = errors.New("unknown provider")
	ErrNotFound    = errors.New("no such CLI session")
	ErrChanged     = errors.New("the file changed: it shrank or was replaced")
	ErrBadOffset   = errors.New("offset past the end of the file")
)

// Bounds of the head read for the listing.
const (
	// HeadBytes is how much of a file's start the listing reads for its
	// project and title.
	HeadBytes = 1 << 20
	// MaxTitle is the longest title, in characters.
	MaxTitle = 120
)

// Roots are the CLIs' directories.
type Roots struct {
	// Claude is Claude Code's projects directory (<claude dir>/projects).
	Claude string
	// Codex is Codex's sessions directory (<codex home>/sessions).
	Codex string
}

// Finder lists and finds the CLI sessions under Roots. It is safe for
// concurrent use.
type Finder struct {
	Roots Roots

	mu    sync.Mutex
	heads map[string]head   // by path
	codex map[string]string // Codex thread id → path, from the last walk
	// claude is where Find last found a Claude Code session.
	claude map[string]string
	// fsOps counts the calls into the file system (tests check that a bad
	// id or provider makes none).
	fsOps atomic.Int64
}

// FSOps is how many times f has called into the file system.
func (f *Finder) FSOps() int64 { return f.fsOps.Load() }

// head is what the listing reads from the start of a file.
type head struct {
	// prefix is the file's first bytes (up to prefixBytes).
	prefix  []byte
	size    int64
	mtime   time.Time
	project string
	title   string
	// done: both found, or the head bound reached: appending to the file
	// cannot change them.
	done bool
}

// Entry is one session file.
type Entry struct {
	Provider string
	ID       string
	Path     string // absolute
	File     string // relative to the provider's root
	Project  string
	Title    string
	Size     int64
	ModTime  time.Time
}

// Session is e as the API gives it.
func (e Entry) Session() protocol.CLISession {
	return protocol.CLISession{
		Provider: e.Provider, ID: e.ID, Project: e.Project, Title: e.Title,
		LastActivity: e.ModTime.UTC(), Size: e.Size,
	}
}

var idRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// ValidID reports whether id can name a session: letters, digits, '-' and
// '_' (no '.', '/', NUL: nothing that could leave a root).
func ValidID(id string) bool { return idRe.MatchString(id) }

// ValidProvider reports whether p is claude or codex.
func ValidProvider(p string) bool {
	return p == protocol.CLIProviderClaude || p == protocol.CLIProviderCodex
}

func (f *Finder) root(provider string) string {
	if provider == protocol.CLIProviderCodex {
		return f.Roots.Codex
	}
	return f.Roots.Claude
}

// codexID is the thread id at the end of a rollout file's name.
var codexID = regexp.MustCompile(`([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$`)

// List returns every session file of provider ("" for both), unsorted,
// with project and title.
func (f *Finder) List(provider string) ([]Entry, error) {
	var out []Entry
	for _, p := range []string{protocol.CLIProviderClaude, protocol.CLIProviderCodex} {
		if provider != "" && provider != p {
			continue
		}
		files, err := f.walk(p)
		if err != nil {
			return nil, err
		}
		for _, e := range files {
			out = append(out, f.withHead(e))
		}
	}
	return out, nil
}

// walk lists provider's files, without reading them: regular files only
// (a symbolic link is not followed), at the depth the CLI writes them.
func (f *Finder) walk(provider string) ([]Entry, error) {
	root := f.root(provider)
	if root == "" {
		return nil, nil
	}
	var out []Entry
	add := func(path, id string, info fs.FileInfo) {
		rel, _ := filepath.Rel(root, path)
		out = append(out, Entry{Provider: provider, ID: id, Path: path, File: rel, Size: info.Size(), ModTime: info.ModTime()})
	}
	f.fsOps.Add(1)
	if provider == protocol.CLIProviderClaude {
		projects, err := os.ReadDir(root)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		for _, p := range projects {
			if !p.IsDir() {
				continue
			}
			dir := filepath.Join(root, p.Name())
			files, err := os.ReadDir(dir)
			if err != nil {
				continue // gone, or not readable: not a session
			}
			for _, e := range files {
				id, ok := strings.CutSuffix(e.Name(), ".jsonl")
				if !ok || !e.Type().IsRegular() || !ValidID(id) {
					continue
				}
				if info, err := e.Info(); err == nil {
					add(filepath.Join(dir, e.Name()), id, info)
				}
			}
		}
		return out, nil
	}
	ids := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return nil // an unreadable directory: skip it
		}
		if d.IsDir() {
			if rel, _ := filepath.Rel(root, path); rel != "." && strings.Count(rel, string(filepath.Separator)) >= 3 {
				return fs.SkipDir // deeper than YYYY/MM/DD
			}
			return nil
		}
		m := codexID.FindStringSubmatch(d.Name())
		if m == nil || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			add(path, m[1], info)
			ids[m[1]] = path
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.codex = ids
	f.mu.Unlock()
	return out, nil
}

// Find returns the session id of provider.
func (f *Finder) Find(provider, id string) (Entry, error) {
	if !ValidProvider(provider) {
		return Entry{}, ErrBadProvider
	}
	if !ValidID(id) {
		return Entry{}, ErrBadID
	}
	root := f.root(provider)
	if root == "" {
		return Entry{}, ErrNotFound
	}
	if provider == protocol.CLIProviderClaude {
		// Where it was last found, else in every project directory.
		f.mu.Lock()
		path := f.claude[id]
		f.mu.Unlock()
		if e, ok := f.entryAt(provider, id, path); ok {
			return e, nil
		}
		f.fsOps.Add(1)
		projects, err := os.ReadDir(root)
		if err != nil {
			return Entry{}, ErrNotFound
		}
		for _, p := range projects {
			if !p.IsDir() {
				continue
			}
			path := filepath.Join(root, p.Name(), id+".jsonl")
			if e, ok := f.entryAt(provider, id, path); ok {
				f.mu.Lock()
				if f.claude == nil || len(f.claude) > 100_000 {
					f.claude = map[string]string{}
				}
				f.claude[id] = path
				f.mu.Unlock()
				return e, nil
			}
		}
		return Entry{}, ErrNotFound
	}
	f.mu.Lock()
	path := f.codex[id]
	f.mu.Unlock()
	if path != "" {
		if e, ok := f.entryAt(provider, id, path); ok {
			return e, nil
		}
	}
	if _, err := f.walk(provider); err != nil {
		return Entry{}, err
	}
	f.mu.Lock()
	path = f.codex[id]
	f.mu.Unlock()
	if e, ok := f.entryAt(provider, id, path); ok {
		return e, nil
	}
	return Entry{}, ErrNotFound
}

// entryAt is the entry of the regular file at path, with its head.
func (f *Finder) entryAt(provider, id, path string) (Entry, bool) {
	if path == "" {
		return Entry{}, false
	}
	f.fsOps.Add(1)
	info, err := os.Lstat(path)
	if err != nil || !info.Mode().IsRegular() {
		return Entry{}, false
	}
	rel, _ := filepath.Rel(f.root(provider), path)
	return f.withHead(Entry{Provider: provider, ID: id, Path: path, File: rel, Size: info.Size(), ModTime: info.ModTime()}), true
}

// withHead fills e's project and title from the cache, reading the file's
// head when the cache has nothing for this file, or something that a
// change of the file can have changed.
func (f *Finder) withHead(e Entry) Entry {
	f.mu.Lock()
	h, ok := f.heads[e.Path]
	f.mu.Unlock()
	fresh := ok && h.size == e.Size && h.mtime.Equal(e.ModTime)
	if ok && !fresh && h.done && e.Size >= h.size {
		// Appended to (or touched): its head is the same if the file is,
		// which its first bytes tell.
		f.fsOps.Add(1)
		fresh = samePrefix(e.Path, h.prefix)
	}
	if !fresh {
		f.fsOps.Add(1)
		h = readHead(e.Provider, e.Path)
		h.size, h.mtime = e.Size, e.ModTime
		f.mu.Lock()
		if f.heads == nil {
			f.heads = map[string]head{}
		}
		if len(f.heads) > 100_000 {
			clear(f.heads)
		}
		f.heads[e.Path] = h
		f.mu.Unlock()
	}
	e.Project, e.Title = h.project, h.title
	return e
}

// samePrefix reports whether the file at path starts with prefix.
func samePrefix(path string, prefix []byte) bool {
	file, err := os.Open(path)
	if err != nil {
		return false
	}
	defer file.Close()
	b := make([]byte, len(prefix))
	if _, err := io.ReadFull(file, b); err != nil {
		return false
	}
	return bytes.Equal(b, prefix)
}

// prefixBytes is how much of a file's start identifies it in the cache.
const prefixBytes = 512

// readHead reads up to HeadBytes of the file's start for its project and
// title.
func readHead(provider, path string) head {
	var h head
	file, err := os.Open(path)
	if err != nil {
		return h
	}
	defer file.Close()
	r := bufio.NewReaderSize(io.LimitReader(file, HeadBytes), 64<<10)
	var read int
	for {
		line, err := r.ReadBytes('\n')
		if len(h.prefix) < prefixBytes {
			h.prefix = append(h.prefix, line[:min(len(line), prefixBytes-len(h.prefix))]...)
		}
		read += len(line)
		if err != nil {
			// The bound, or the end of the file (a last line without its
			// newline is still being written): only at the bound can
			// nothing more come.
			h.done = read >= HeadBytes
			return h
		}
		h.scan(provider, line)
		if h.project != "" && h.title != "" {
			h.done = true
			return h
		}
	}
}

// scan takes the project and title from one line of a file's head. Lines
// that cannot hold what is missing are skipped before decoding (a head is
// mostly the CLIs' bookkeeping).
func (h *head) scan(provider string, line []byte) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return
	}
	if h.project == "" {
		var rec struct {
			Type    string `json:"type"`
			Cwd     string `json:"cwd"`
			Payload struct {
				Cwd string `json:"cwd"`
			} `json:"payload"`
		}
		if bytes.Contains(trimmed, []byte(`"cwd"`)) && json.Unmarshal(trimmed, &rec) == nil {
			switch {
			case provider == protocol.CLIProviderCodex && (rec.Type == "session_meta" || rec.Type == "turn_context"):
				h.project = rec.Payload.Cwd
			case provider == protocol.CLIProviderClaude:
				h.project = rec.Cwd
			}
		}
	}
	if h.title != "" || !bytes.Contains(trimmed, []byte(`"user"`)) {
		return
	}
	var obj map[string]any
	if json.Unmarshal(trimmed, &obj) != nil {
		return
	}
	if provider == protocol.CLIProviderCodex {
		if r := convertCodex(trimmed, obj, time.Time{}, ""); r.Kind == "user_prompt" {
			h.title = promptTitle(r.Payload)
		}
		return
	}
	if obj["type"] == "user" {
		if text, _, ok := claudePrompt(obj); ok {
			h.title = Title(commandTitle(text))
		}
	}
}

var (
	commandName = regexp.MustCompile(`<command-name>([^<]*)</command-name>`)
	commandArgs = regexp.MustCompile(`<command-args>([^<]*)</command-args>`)
)

// commandTitle shows a slash command Claude Code recorded as its markup
// (<command-name>/init</command-name><command-args>…) as "/init …".
func commandTitle(text string) string {
	m := commandName.FindStringSubmatch(text)
	if m == nil {
		return text
	}
	t := m[1]
	if a := commandArgs.FindStringSubmatch(text); a != nil && strings.TrimSpace(a[1]) != "" {
		t += " " + a[1]
	}
	return t
}

func promptTitle(payload json.RawMessage) string {
	var p protocol.StoredPrompt
	_ = json.Unmarshal(payload, &p)
	return Title(p.Content)
}

// Title is text on one line, spaces collapsed, at most MaxTitle
// characters (cut with "…").
func Title(text string) string {
	fields := strings.FieldsFunc(text, unicode.IsSpace)
	s := strings.Join(fields, " ")
	if utf8.RuneCountInString(s) <= MaxTitle {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:MaxTitle-1])) + "…"
}

// Query filters and pages a listing.
type Query struct {
	Provider string
	Text     string // matched, case-insensitively, in title, project and id
	Limit    int
	Offset   int
}

// Select sorts entries by last activity, newest first, and returns the page q
// asks for and how many matched.
func Select(entries []Entry, q Query) ([]Entry, int) {
	entries = slices.Clone(entries)
	if q.Text != "" {
		needle := strings.ToLower(q.Text)
		entries = slices.DeleteFunc(entries, func(e Entry) bool {
			return !strings.Contains(strings.ToLower(e.Title), needle) &&
				!strings.Contains(strings.ToLower(e.Project), needle) && !strings.Contains(e.ID, needle)
		})
	}
	slices.SortFunc(entries, func(a, b Entry) int {
		if c := b.ModTime.Compare(a.ModTime); c != 0 {
			return c
		}
		return strings.Compare(a.Provider+"/"+a.ID, b.Provider+"/"+b.ID)
	})
	total := len(entries)
	if q.Offset >= total {
		return []Entry{}, total
	}
	entries = entries[q.Offset:]
	if q.Limit > 0 && len(entries) > q.Limit {
		entries = entries[:q.Limit]
	}
	return entries, total
}
