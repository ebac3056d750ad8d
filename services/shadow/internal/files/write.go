package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"
	"syscall"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/shadow/internal/beneath"
	"github.com/svc-code/svc-code/services/shadow/internal/roots"
)

// writeRequest is the body of POST /api/file/write.
type writeRequest struct {
	Path    *string `json:"path"`
	Content *string `json:"content"`
	// ExpectedVersion, when set, is the version the client read: the
	// write happens only if the file still has it. "" means the file must
	// not exist yet.
	ExpectedVersion *string `json:"expected_version"`
	// CreateDirs creates missing parent directories.
	CreateDirs bool `json:"create_dirs"`
}

// writeJSON is the answer of POST /api/file/write.
type writeJSON struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Mtime   string `json:"mtime"`
	Version string `json:"version"`
}

// hookChecked, set by tests only, runs between the path's check and its
// first use (a write, or opening a file to read): a test swaps a parent
// directory for a symbolic link there.
var hookChecked func(resolved string)

// newFileMode is the mode of a file the write creates.
const newFileMode = 0o644

func (s *server) writeFile(c *fiber.Ctx) error {
	var req writeRequest
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	switch {
	case req.Path == nil || *req.Path == "":
		return badRequest(`"path" is required (an absolute path)`)
	case req.Content == nil:
		return badRequest(`"content" is required (the whole new text of the file)`)
	case len(*req.Content) > MaxTextBytes:
		return protocol.Errorf(protocol.CodePayloadTooLarge, "content is %d bytes, over the %d-byte limit", len(*req.Content), MaxTextBytes)
	case strings.IndexByte(*req.Content, 0) >= 0:
		return &protocol.Error{Code: protocol.CodeUnsupportedMedia, Message: "content holds NUL bytes: only text files can be written"}
	}
	w, err := s.write(c.UserContext(), *req.Path, []byte(*req.Content), req.ExpectedVersion, req.CreateDirs)
	if err != nil {
		return err
	}
	return c.JSON(w)
}

// write writes content to the file at p (as asked, before resolution) when
// expected matches its version (nil: whatever it holds; "": only if it does
// not exist), atomically, every directory from its root opened beneath.
func (s *server) write(ctx context.Context, p string, content []byte, expected *string, createDirs bool) (writeJSON, error) {
	shown, resolved, err := s.resolve(ctx, p)
	if err != nil {
		return writeJSON{}, err
	}
	if hookChecked != nil {
		hookChecked(resolved)
	}
	root, rel, err := s.rootOf(ctx, resolved, shown)
	if err != nil {
		return writeJSON{}, err
	}
	unlock := s.locks.lock(resolved)
	defer unlock()

	// Every directory from the root down is opened with no symbolic link
	// allowed (beneath): a parent swapped for a link since the check is
	// refused, not followed.
	dirRel, name := path.Split(rel)
	dirRel = strings.TrimSuffix(dirRel, "/")
	dir, err := beneath.OpenDir(root, dirRel, false, 0)
	var old fs.FileInfo
	exists := false
	switch {
	case err == nil:
		defer dir.Close()
		old, err = dir.Lstat(name)
		exists = err == nil
		switch {
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return writeJSON{}, writePathError(err, shown)
		case exists && old.IsDir():
			return writeJSON{}, badRequest("%s is a directory", shown)
		case exists && !old.Mode().IsRegular():
			return writeJSON{}, badRequest("%s is not a regular file", shown)
		case exists && s.Roots.Denied().Linked(old):
			return writeJSON{}, pathError(roots.ErrPrivate, shown)
		}
	case errors.Is(err, syscall.ENOTDIR):
		return writeJSON{}, badRequest("the parent of %s is not a directory", shown)
	case !errors.Is(err, fs.ErrNotExist):
		return writeJSON{}, writePathError(err, shown)
	}
	if err := checkVersion(expected, dir, name, shown, exists); err != nil {
		return writeJSON{}, err
	}
	if dir == nil { // a parent directory is missing
		if !createDirs {
			return writeJSON{}, protocol.Errorf(protocol.CodeNotFound, "the directory of %s does not exist (set create_dirs to create it)", shown)
		}
		dir, err = beneath.OpenDir(root, dirRel, true, 0o755)
		switch {
		case errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EEXIST):
			return writeJSON{}, badRequest("the parent of %s is not a directory", shown)
		case err != nil:
			return writeJSON{}, writePathError(err, shown)
		}
		defer dir.Close()
	}
	mode := fs.FileMode(newFileMode)
	if exists {
		mode = old.Mode().Perm()
	}
	if err := atomicWrite(dir, name, content, mode, old); err != nil {
		return writeJSON{}, writePathError(err, shown)
	}
	fi, err := dir.Lstat(name)
	if err != nil {
		return writeJSON{}, fmt.Errorf("stat %s: %w", resolved, err)
	}
	return writeJSON{Path: shown, Size: int64(len(content)), Mtime: mtime(fi), Version: Version(content)}, nil
}

// rootOf answers the allowed root that holds resolved (the deepest) and
// resolved's path below it.
func (s *server) rootOf(ctx context.Context, resolved, shown string) (root, rel string, err error) {
	list, err := s.Roots.Roots(ctx)
	if err != nil {
		return "", "", err
	}
	for _, r := range list {
		if roots.Within(resolved, r) && len(r) > len(root) {
			root = r
		}
	}
	switch root {
	case "":
		return "", "", pathError(roots.ErrForbidden, shown) // the roots changed since the check
	case resolved:
		return "", "", badRequest("%s is a directory", shown)
	}
	return root, strings.TrimPrefix(strings.TrimPrefix(resolved, root), "/"), nil
}

// writePathError is pathError, with a symbolic link found on the way (the
// path changed since its check) refused as forbidden.
func writePathError(err error, shown string) error {
	if errors.Is(err, beneath.ErrSymlink) {
		return protocol.Errorf(protocol.CodeForbidden, "%s: a symbolic link appeared on the path since it was checked; nothing was written", shown)
	}
	return pathError(err, shown)
}

// checkVersion enforces expected_version against the file as it is now.
func checkVersion(expected *string, dir *beneath.Dir, name, shown string, exists bool) error {
	if expected == nil {
		return nil
	}
	if !exists {
		if *expected == "" {
			return nil
		}
		return protocol.Errorf(protocol.CodeConflict, "%s no longer exists: it was removed since it was read", shown)
	}
	if *expected == "" {
		return protocol.Errorf(protocol.CodeConflict, "%s already exists (expected_version \"\" means create only)", shown)
	}
	f, err := dir.OpenRead(name)
	if err != nil {
		return writePathError(err, shown)
	}
	defer f.Close()
	current, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if v := Version(current); v != *expected {
		return protocol.Errorf(protocol.CodeConflict, "%s changed since it was read: its version is now %s", shown, v)
	}
	return nil
}

// atomicWrite replaces name in dir with content: a temporary file in the
// same directory, written, synced, given the old file's mode (and owner,
// when allowed), renamed over name, and the directory synced. A reader
// sees the old content or the new, never a mix; a crash leaves one of the
// two.
func atomicWrite(dir *beneath.Dir, name string, content []byte, mode fs.FileMode, old fs.FileInfo) (err error) {
	tmp, tmpName, err := dir.CreateTemp("." + name + ".tmp-")
	if err != nil {
		return fmt.Errorf("create temporary file in %s: %w", dir.Path(), err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()         // the write failed already; this is cleanup
			_ = dir.Remove(tmpName) // the same: leave no temporary file behind
		}
	}()
	if _, err := tmp.Write(content); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if old != nil {
		if st, ok := old.Sys().(*syscall.Stat_t); ok {
			_ = tmp.Chown(int(st.Uid), int(st.Gid)) // keeps the owner when we may; else ours
		}
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := dir.Rename(tmpName, name); err != nil {
		return fmt.Errorf("rename onto %s: %w", name, err)
	}
	_ = dir.Sync() // the rename is durable once the directory is
	return nil
}

// pathLocks serialises writes to one path within this process, so that a
// version check and the rename that follows it are one step.
type pathLocks struct {
	mu    sync.Mutex
	locks map[string]*pathLock
}

type pathLock struct {
	mu   sync.Mutex
	refs int
}

func newPathLocks() *pathLocks { return &pathLocks{locks: map[string]*pathLock{}} }

func (p *pathLocks) lock(path string) (unlock func()) {
	p.mu.Lock()
	l := p.locks[path]
	if l == nil {
		l = &pathLock{}
		p.locks[path] = l
	}
	l.refs++
	p.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		p.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(p.locks, path)
		}
		p.mu.Unlock()
	}
}
