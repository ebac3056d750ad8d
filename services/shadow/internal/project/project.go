// Package project names svc-code's projects and keeps their per-project
// directory under the data home.
//
// A project is identified by the resolved real path of a working directory:
// filepath.Abs, then filepath.EvalSymlinks, so /tmp/x and a symlink to it are
// the same project. Its hash is the first 16 hex characters of the SHA-256 of
// that real path (UTF-8 bytes, no trailing slash), and its directory is
// <data home>/projects/<hash>/, holding:
//
//   - project.json: the real path, the display name and the per-project
//     settings (Meta);
//   - shadow-git/: the shadow journal, a git repository (package journal).
//
// Known projects are the directories under <data home>/projects/ that hold a
// readable project.json, plus the working directories of chat's sessions.
package project

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
)

// Names inside a project's directory.
const (
	// MetaFile is the project's metadata and settings.
	MetaFile = "project.json"
	// JournalName is the shadow journal's directory.
	JournalName = "shadow-git"
	// projectsDir is the parent of every project's directory in the data home.
	projectsDir = "projects"
)

// HashLen is the length of a project hash, in hex characters.
const HashLen = 16

// Limits of the per-project settings.
const (
	MaxNameLen        = 200
	MaxIgnorePatterns = 200
	MaxPatternLen     = 500
	// MaxFileSizeMBLimit is the largest accepted max_file_size_mb (1 TiB).
	MaxFileSizeMBLimit = 1 << 20
)

// ErrUnknown reports a project without a directory under the data home.
var ErrUnknown = errors.New("unknown project")

// Resolve turns a working directory into a project's identity, its real
// path: absolute, cleaned, symlinks resolved. The directory must exist. A
// bad cwd is a *protocol.Error (bad_request or not_found).
func Resolve(cwd string) (string, error) {
	if cwd == "" {
		return "", protocol.Errorf(protocol.CodeBadRequest, "cwd is required")
	}
	if strings.ContainsRune(cwd, 0) {
		return "", protocol.Errorf(protocol.CodeBadRequest, "cwd contains a NUL byte")
	}
	if !filepath.IsAbs(cwd) {
		return "", protocol.Errorf(protocol.CodeBadRequest, "cwd must be an absolute path")
	}
	resolved, err := filepath.EvalSymlinks(filepath.Clean(cwd))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", protocol.Errorf(protocol.CodeNotFound, "no such directory: %s", cwd)
		}
		return "", protocol.Errorf(protocol.CodeBadRequest, "cannot resolve cwd %s", cwd)
	}
	resolved, err = filepath.Abs(resolved)
	if err != nil {
		return "", fmt.Errorf("absolute path of %s: %w", resolved, err)
	}
	st, err := os.Stat(resolved)
	if err != nil {
		return "", protocol.Errorf(protocol.CodeNotFound, "no such directory: %s", cwd)
	}
	if !st.IsDir() {
		return "", protocol.Errorf(protocol.CodeBadRequest, "cwd is not a directory: %s", cwd)
	}
	return resolved, nil
}

// Hash is the project hash of a real path: the first 16 hex characters of
// its SHA-256.
func Hash(realPath string) string {
	sum := sha256.Sum256([]byte(realPath))
	return hex.EncodeToString(sum[:])[:HashLen]
}

// ValidHash reports whether s has the shape of a project hash.
func ValidHash(s string) bool {
	if len(s) != HashLen {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Dir is a project's directory: <data home>/projects/<hash>.
func Dir(dataHome, hash string) string {
	return filepath.Join(dataHome, projectsDir, hash)
}

// JournalDir is a project's shadow journal: <data home>/projects/<hash>/shadow-git.
func JournalDir(dataHome, hash string) string {
	return filepath.Join(Dir(dataHome, hash), JournalName)
}

// Meta is the content of project.json.
type Meta struct {
	// Path is the project's real path.
	Path string `json:"path"`
	// Name is the display name; the base name of Path unless renamed.
	Name string `json:"name"`
	// Hash is Hash(Path), kept for readers of the file.
	Hash string `json:"hash"`
	// CreatedAt is when the directory was made.
	CreatedAt time.Time `json:"created_at"`
	// Ignore holds extra gitignore-style patterns the journal skips, on
	// top of the project's .gitignore files and the journal's defaults.
	Ignore []string `json:"ignore,omitempty"`
	// MaxFileSizeMB overrides the server's shadow_git.max_file_size_mb for
	// this project when set; 0 disables the cap.
	MaxFileSizeMB *int `json:"max_file_size_mb,omitempty"`
}

// Validate checks the settings part of m (name, ignore, max size).
func (m Meta) Validate() error {
	var errs []string
	if strings.TrimSpace(m.Name) == "" {
		errs = append(errs, "name must not be empty")
	}
	if len(m.Name) > MaxNameLen {
		errs = append(errs, fmt.Sprintf("name is longer than %d bytes", MaxNameLen))
	}
	if strings.ContainsAny(m.Name, "\x00\n\r") {
		errs = append(errs, "name must be one line")
	}
	if len(m.Ignore) > MaxIgnorePatterns {
		errs = append(errs, fmt.Sprintf("more than %d ignore patterns", MaxIgnorePatterns))
	}
	for _, p := range m.Ignore {
		switch {
		case strings.TrimSpace(p) == "":
			errs = append(errs, "an ignore pattern is empty")
		case len(p) > MaxPatternLen:
			errs = append(errs, fmt.Sprintf("an ignore pattern is longer than %d bytes", MaxPatternLen))
		case strings.ContainsAny(p, "\x00\n\r"):
			errs = append(errs, fmt.Sprintf("ignore pattern %q must be one line", p))
		case strings.HasPrefix(p, "!"):
			errs = append(errs, fmt.Sprintf("ignore pattern %q: negation is not supported", p))
		}
	}
	if m.MaxFileSizeMB != nil && (*m.MaxFileSizeMB < 0 || *m.MaxFileSizeMB > MaxFileSizeMBLimit) {
		errs = append(errs, fmt.Sprintf("max_file_size_mb must be between 0 and %d", MaxFileSizeMBLimit))
	}
	if len(errs) > 0 {
		return protocol.Errorf(protocol.CodeBadRequest, "%s", strings.Join(errs, "; "))
	}
	return nil
}

// Project is a resolved project.
type Project struct {
	// Path is the real path; Hash its hash.
	Path, Hash string
	// Dir is the project's directory in the data home; Journal its journal.
	Dir, Journal string
}

// SessionDirs lists the working directories of chat's sessions.
type SessionDirs interface {
	SessionCwds(ctx context.Context) ([]string, error)
}

// Store finds, creates and updates projects' directories under a data home.
// It is safe for concurrent use.
type Store struct {
	dataHome string
	sessions SessionDirs // may be nil
	mu       sync.Mutex  // serialises project.json writes
}

// NewStore returns a Store over dataHome. sessions, when non-nil, adds the
// working directories of chat's sessions to List.
func NewStore(dataHome string, sessions SessionDirs) *Store {
	return &Store{dataHome: dataHome, sessions: sessions}
}

// DataHome is the store's data home.
func (s *Store) DataHome() string { return s.dataHome }

// Of resolves cwd into a Project without creating anything.
func (s *Store) Of(cwd string) (Project, error) {
	resolved, err := Resolve(cwd)
	if err != nil {
		return Project{}, err
	}
	return s.at(resolved), nil
}

func (s *Store) at(resolved string) Project {
	h := Hash(resolved)
	return Project{Path: resolved, Hash: h, Dir: Dir(s.dataHome, h), Journal: JournalDir(s.dataHome, h)}
}

// Ensure resolves cwd and creates the project's directory and project.json
// when missing.
func (s *Store) Ensure(cwd string) (Project, Meta, error) {
	p, err := s.Of(cwd)
	if err != nil {
		return Project{}, Meta{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.readMeta(p.Hash)
	if err == nil {
		return p, m, nil
	}
	if !errors.Is(err, ErrUnknown) {
		return Project{}, Meta{}, err
	}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return Project{}, Meta{}, fmt.Errorf("create project dir: %w", err)
	}
	m = Meta{Path: p.Path, Name: filepath.Base(p.Path), Hash: p.Hash, CreatedAt: time.Now().UTC()}
	if m.Name == string(filepath.Separator) || m.Name == "." {
		m.Name = p.Path
	}
	if err := s.writeMeta(m); err != nil {
		return Project{}, Meta{}, err
	}
	return p, m, nil
}

// Known resolves cwd and answers it only when the project has a directory
// (an ErrUnknown wrapped in a not_found *protocol.Error otherwise).
func (s *Store) Known(cwd string) (Project, Meta, error) {
	p, err := s.Of(cwd)
	if err != nil {
		return Project{}, Meta{}, err
	}
	m, err := s.Meta(p.Hash)
	if err != nil {
		return Project{}, Meta{}, err
	}
	return p, m, nil
}

// Meta reads a project's project.json by hash. A missing project is a
// not_found *protocol.Error wrapping ErrUnknown.
func (s *Store) Meta(hash string) (Meta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readMeta(hash)
}

// Update applies change to the project's metadata, validates the result
// and writes it atomically.
func (s *Store) Update(hash string, change func(*Meta) error) (Meta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.readMeta(hash)
	if err != nil {
		return Meta{}, err
	}
	if err := change(&m); err != nil {
		return Meta{}, err
	}
	if err := m.Validate(); err != nil {
		return Meta{}, err
	}
	if err := s.writeMeta(m); err != nil {
		return Meta{}, err
	}
	return m, nil
}

type unknownError struct{ hash string }

func (e unknownError) Error() string { return "unknown project " + e.hash }
func (e unknownError) Unwrap() []error {
	return []error{ErrUnknown, protocol.Errorf(protocol.CodeNotFound, "no shadow journal for this project yet")}
}

func (s *Store) readMeta(hash string) (Meta, error) {
	if !ValidHash(hash) {
		return Meta{}, unknownError{hash}
	}
	b, err := os.ReadFile(filepath.Join(Dir(s.dataHome, hash), MetaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Meta{}, unknownError{hash}
	}
	if err != nil {
		return Meta{}, fmt.Errorf("read project %s: %w", hash, err)
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, fmt.Errorf("parse project %s: %w", hash, err)
	}
	return m, nil
}

func (s *Store) writeMeta(m Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode project %s: %w", m.Hash, err)
	}
	dir := Dir(s.dataHome, m.Hash)
	tmp, err := os.CreateTemp(dir, ".project-*.json")
	if err != nil {
		return fmt.Errorf("write project %s: %w", m.Hash, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write project %s: %w", m.Hash, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write project %s: %w", m.Hash, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, MetaFile)); err != nil {
		return fmt.Errorf("write project %s: %w", m.Hash, err)
	}
	return nil
}

// Listed is one known project.
type Listed struct {
	Path string `json:"path"`
	Name string `json:"name"`
	Hash string `json:"hash"`
	// HasJournal is true when the project has a directory (and journal)
	// under the data home; false for a session's cwd not yet journaled.
	HasJournal bool `json:"has_journal"`
	// Exists is false when the path is gone from disk.
	Exists bool `json:"exists"`
}

// List answers the known projects, sorted by path: every project directory
// with a readable project.json, then every session cwd not among them
// (resolved; a cwd that no longer exists is listed under its own path).
func (s *Store) List(ctx context.Context) ([]Listed, error) {
	byPath := map[string]Listed{}
	entries, err := os.ReadDir(filepath.Join(s.dataHome, projectsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || !ValidHash(e.Name()) {
			continue
		}
		m, err := s.Meta(e.Name())
		if err != nil {
			continue // a half-made or foreign directory
		}
		_, statErr := os.Stat(m.Path)
		byPath[m.Path] = Listed{Path: m.Path, Name: m.Name, Hash: m.Hash, HasJournal: true, Exists: statErr == nil}
	}
	if s.sessions != nil {
		cwds, err := s.sessions.SessionCwds(ctx)
		if err != nil {
			return nil, fmt.Errorf("list session cwds: %w", err)
		}
		for _, cwd := range cwds {
			resolved, err := Resolve(cwd)
			exists := err == nil
			if !exists {
				resolved = filepath.Clean(cwd)
			}
			if _, ok := byPath[resolved]; ok {
				continue
			}
			byPath[resolved] = Listed{Path: resolved, Name: filepath.Base(resolved), Hash: Hash(resolved), Exists: exists}
		}
	}
	out := make([]Listed, 0, len(byPath))
	for _, l := range byPath {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
