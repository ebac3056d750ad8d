package catalog

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Errors of the command edits.
var (
	ErrExists   = errors.New("command exists")
	ErrNotFound = errors.New("no such command")
	ErrInvalid  = errors.New("invalid command")
	// ErrOutside means a command's file would be reached through a
	// symlink that leaves its commands directory (or, for the project
	// scope, the project).
	ErrOutside = errors.New("the command's path leaves its commands directory")
)

// namePart is one ':'-separated part of a command name.
var namePart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// ValidName checks a command name that the routes may write: one to four
// parts joined by ':', each of letters, digits, '_' and '-' (not first),
// at most 64 characters; Codex prompts take one part only.
func ValidName(scope, name string) error {
	parts := strings.Split(name, ":")
	if len(parts) > maxCommandDepth || (scope == ScopeCodex && len(parts) > 1) {
		return fmt.Errorf("%w: name %q has too many ':' parts", ErrInvalid, name)
	}
	for _, p := range parts {
		if !namePart.MatchString(p) {
			return fmt.Errorf("%w: name %q: each part is 1-64 letters, digits, '_' or '-', not starting with '_' or '-'", ErrInvalid, name)
		}
	}
	return nil
}

// commandDir is where commands of scope live (cwd for the project scope).
func (c *Catalog) commandDir(scope, cwd string) (string, error) {
	switch scope {
	case ScopePersonal:
		return filepath.Join(c.Dirs.Claude, "commands"), nil
	case ScopeProject:
		if cwd == "" {
			return "", fmt.Errorf("%w: the project scope needs cwd", ErrInvalid)
		}
		return filepath.Join(cwd, ".claude", "commands"), nil
	case ScopeCodex:
		return filepath.Join(c.Dirs.Codex, "prompts"), nil
	}
	return "", fmt.Errorf("%w: scope %q: use %q, %q or %q", ErrInvalid, scope, ScopePersonal, ScopeProject, ScopeCodex)
}

// commandPath is the file of the command name in scope.
func (c *Catalog) commandPath(scope, cwd, name string) (string, error) {
	if err := ValidName(scope, name); err != nil {
		return "", err
	}
	dir, err := c.commandDir(scope, cwd)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Join(strings.Split(name, ":")...)+".md"), nil
}

// checkContent validates a command file's content: not blank, at most
// MaxFileBytes, UTF-8, and a frontmatter, when it starts with one, that
// parses.
func checkContent(content string) error {
	switch {
	case strings.TrimSpace(content) == "":
		return fmt.Errorf("%w: content is empty", ErrInvalid)
	case len(content) > MaxFileBytes:
		return fmt.Errorf("%w: content is larger than %d bytes", ErrInvalid, MaxFileBytes)
	case !utf8.ValidString(content):
		return fmt.Errorf("%w: content is not UTF-8", ErrInvalid)
	}
	if _, _, err := splitFrontmatter(content); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// Command reads one command of scope, with its content.
func (c *Catalog) Command(scope, cwd, name string) (Entry, error) {
	path, err := c.commandPath(scope, cwd, name)
	if err != nil {
		return Entry{}, err
	}
	e, err := readEntry(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Entry{}, fmt.Errorf("%s command %q: %w", scope, name, ErrNotFound)
	}
	if err != nil {
		return Entry{}, err
	}
	return c.finish(e, scope, cwd, name), nil
}

// finish fills what a single command's answer carries besides the file,
// its precedence included.
func (c *Catalog) finish(e Entry, scope, cwd, name string) Entry {
	e.Name, e.Scope, e.Kind, e.Provider, e.Invocation = name, scope, KindCommand, "claude", "/"+name
	if scope == ScopeCodex {
		e.Provider, e.Invocation = "codex", "/prompts:"+name
	}
	if all, err := c.Commands(cwd); err == nil {
		for _, o := range all {
			if o.Name == e.Name && o.Scope == scope && o.Provider == e.Provider {
				e.Active, e.ShadowedBy = o.Active, o.ShadowedBy
			}
		}
	}
	return e
}

// commandRoot opens the directory of scope's commands as an os.Root,
// creating it when missing: every write below goes through it, so that a
// symlinked subdirectory cannot lead a write or a delete out of it. The
// directory itself may be a symlink for the personal and Codex scopes
// (dotfiles); a project's must stay inside the project.
func (c *Catalog) commandRoot(scope, cwd string) (*os.Root, error) {
	dir, err := c.commandDir(scope, cwd)
	if err != nil {
		return nil, err
	}
	if scope != ScopeProject {
		if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // command directories are shared with the CLIs, like ~/.claude's
			return nil, fmt.Errorf("create %s: %w", dir, err)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", dir, err)
		}
		return root, nil
	}
	project, err := os.OpenRoot(cwd)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", cwd, err)
	}
	defer project.Close()
	rel := filepath.Join(".claude", "commands")
	if err := project.MkdirAll(rel, 0o755); err != nil {
		return nil, rootError(dir, err)
	}
	root, err := project.OpenRoot(rel)
	if err != nil {
		return nil, rootError(dir, err)
	}
	return root, nil
}

// rootError tells an os.Root refusing a path that leaves it (ErrOutside)
// from other failures; os.Root's error for it ("path escapes from parent")
// is not exported, hence the match on its text.
func rootError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes") {
		return fmt.Errorf("%s: %w", path, ErrOutside)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// relPath is the command file of name relative to its commands directory.
func relPath(name string) string {
	return filepath.Join(strings.Split(name, ":")...) + ".md"
}

// CreateCommand writes a new command; ErrExists when one of that name and
// scope exists. Directories are created as needed.
func (c *Catalog) CreateCommand(scope, cwd, name, content string) (Entry, error) {
	path, err := c.commandPath(scope, cwd, name)
	if err != nil {
		return Entry{}, err
	}
	if err := checkContent(content); err != nil {
		return Entry{}, err
	}
	root, err := c.commandRoot(scope, cwd)
	if err != nil {
		return Entry{}, err
	}
	defer root.Close()
	rel := relPath(name)
	if _, err := root.Lstat(rel); err == nil {
		return Entry{}, fmt.Errorf("%s command %q: %w", scope, name, ErrExists)
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return Entry{}, rootError(filepath.Dir(path), err)
		}
	}
	tmp, err := writeTemp(root, rel, content)
	if err != nil {
		return Entry{}, rootError(path, err)
	}
	defer root.Remove(tmp) //nolint:errcheck // gone already when linked and removed below
	// A hard link fails when the name exists: never replaces a command.
	if err := root.Link(tmp, rel); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Entry{}, fmt.Errorf("%s command %q: %w", scope, name, ErrExists)
		}
		return Entry{}, rootError(path, err)
	}
	return c.Command(scope, cwd, name)
}

// UpdateCommand replaces an existing command's content; ErrNotFound when
// there is none.
func (c *Catalog) UpdateCommand(scope, cwd, name, content string) (Entry, error) {
	path, err := c.commandPath(scope, cwd, name)
	if err != nil {
		return Entry{}, err
	}
	if err := checkContent(content); err != nil {
		return Entry{}, err
	}
	root, err := c.existingRoot(scope, cwd, name)
	if err != nil {
		return Entry{}, err
	}
	defer root.Close()
	rel := relPath(name)
	tmp, err := writeTemp(root, rel, content)
	if err != nil {
		return Entry{}, rootError(path, err)
	}
	if err := root.Rename(tmp, rel); err != nil {
		_ = root.Remove(tmp)
		return Entry{}, rootError(path, err)
	}
	return c.Command(scope, cwd, name)
}

// DeleteCommand removes a command file; ErrNotFound when there is none.
// Directories it leaves empty stay.
func (c *Catalog) DeleteCommand(scope, cwd, name string) (string, error) {
	path, err := c.commandPath(scope, cwd, name)
	if err != nil {
		return "", err
	}
	root, err := c.existingRoot(scope, cwd, name)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := root.Remove(relPath(name)); err != nil {
		return "", rootError(path, err)
	}
	return path, nil
}

// existingRoot opens scope's commands directory when the command name is
// a regular file in it (reached without leaving it): else ErrNotFound, or
// ErrOutside when its path leaves the directory.
func (c *Catalog) existingRoot(scope, cwd, name string) (*os.Root, error) {
	notFound := fmt.Errorf("%s command %q: %w", scope, name, ErrNotFound)
	dir, err := c.commandDir(scope, cwd)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, notFound
	}
	root, err := c.commandRoot(scope, cwd)
	if err != nil {
		return nil, err
	}
	fi, err := root.Lstat(relPath(name))
	if err == nil && fi.Mode().IsRegular() {
		return root, nil
	}
	_ = root.Close()
	if err != nil {
		if err := rootError(dir, err); errors.Is(err, ErrOutside) {
			return nil, fmt.Errorf("%s command %q: %w", scope, name, err)
		}
	}
	return nil, notFound
}

// writeTemp writes content to a new hidden file beside rel in root (mode
// 0644, as an editor would) and returns its name, relative to root.
func writeTemp(root *os.Root, rel, content string) (string, error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	name := filepath.Join(filepath.Dir(rel), ".svc-code-"+hex.EncodeToString(rnd[:])+".tmp")
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = root.Remove(name)
		return "", err
	}
	return name, nil
}
