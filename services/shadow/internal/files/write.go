package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
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
	shown, resolved, err := s.resolve(c.UserContext(), *req.Path)
	if err != nil {
		return err
	}
	unlock := s.locks.lock(resolved)
	defer unlock()

	content := []byte(*req.Content)
	old, err := os.Lstat(resolved)
	exists := err == nil
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return badRequest("the parent of %s is not a directory", shown)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return pathError(err, shown)
	case exists && old.IsDir():
		return badRequest("%s is a directory", shown)
	case exists && !old.Mode().IsRegular():
		return badRequest("%s is not a regular file", shown)
	case exists && s.Roots.Denied().Linked(old):
		return pathError(roots.ErrPrivate, shown)
	}
	if err := checkVersion(req.ExpectedVersion, resolved, shown, exists); err != nil {
		return err
	}
	dir := filepath.Dir(resolved)
	if err := ensureDir(dir, shown, req.CreateDirs); err != nil {
		return err
	}
	mode := fs.FileMode(newFileMode)
	if exists {
		mode = old.Mode().Perm()
	}
	if err := atomicWrite(resolved, content, mode, old); err != nil {
		return pathError(err, shown)
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return fmt.Errorf("stat %s: %w", resolved, err)
	}
	return c.JSON(writeJSON{Path: shown, Size: int64(len(content)), Mtime: mtime(fi), Version: Version(content)})
}

// checkVersion enforces expected_version against the file as it is now.
func checkVersion(expected *string, resolved, shown string, exists bool) error {
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
	f, err := os.OpenFile(resolved, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return pathError(err, shown)
	}
	defer f.Close()
	current, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", resolved, err)
	}
	if v := Version(current); v != *expected {
		return protocol.Errorf(protocol.CodeConflict, "%s changed since it was read: its version is now %s", shown, v)
	}
	return nil
}

// ensureDir checks that dir exists, creating it when asked.
func ensureDir(dir, shown string, create bool) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil || errors.Is(err, syscall.ENOTDIR):
		return badRequest("the parent of %s is not a directory", shown)
	case !errors.Is(err, fs.ErrNotExist):
		return pathError(err, shown)
	case !create:
		return protocol.Errorf(protocol.CodeNotFound, "the directory of %s does not exist (set create_dirs to create it)", shown)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // directories as mkdir -p makes them
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EEXIST) {
			return badRequest("the parent of %s is not a directory", shown)
		}
		return pathError(err, shown)
	}
	return nil
}

// atomicWrite replaces path with content: a temporary file in the same
// directory, written, synced, given the old file's mode (and owner, when
// allowed), renamed over path, and the directory synced. A reader sees the
// old content or the new, never a mix; a crash leaves one of the two.
func atomicWrite(path string, content []byte, mode fs.FileMode, old fs.FileInfo) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()           // the write failed already; this is cleanup
			_ = os.Remove(tmp.Name()) // the same: leave no temporary file behind
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
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename onto %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename is durable once the directory is
		_ = d.Close()
	}
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
