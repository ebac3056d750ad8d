package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/shadow/internal/beneath"
	"github.com/svc-code/svc-code/services/shadow/internal/roots"
)

// openRegular opens the resolved path for reading: every directory from
// its root down opened with no symbolic link allowed (a parent swapped for
// a link since the check is refused), the file itself never through a link
// (O_NOFOLLOW), never blocking on a FIFO (O_NONBLOCK, then a regular file
// is required), never another name (a hard link) of one of svc-code's
// secret files.
func (s *server) openRegular(ctx context.Context, resolved, shown string) (*os.File, fs.FileInfo, error) {
	root, rel, err := s.rootOf(ctx, resolved, shown)
	if err != nil {
		return nil, nil, err
	}
	if hookChecked != nil {
		hookChecked(resolved)
	}
	dirRel, name := path.Split(rel)
	dir, err := beneath.OpenDir(root, strings.TrimSuffix(dirRel, "/"), false, 0)
	if err != nil {
		return nil, nil, readPathError(err, shown)
	}
	f, err := dir.OpenRead(name)
	_ = dir.Close()
	if err != nil {
		return nil, nil, readPathError(err, shown)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("stat %s: %w", resolved, err)
	case fi.IsDir():
		err = badRequest("%s is a directory: list it with GET /api/files", shown)
	case !fi.Mode().IsRegular():
		err = badRequest("%s is not a regular file", shown)
	case s.Roots.Denied().Linked(fi):
		err = pathError(roots.ErrPrivate, shown)
	}
	if err != nil {
		_ = f.Close() // read-only: nothing to lose
		return nil, nil, err
	}
	return f, fi, nil
}

// readText reads a whole text file: over MaxTextBytes is 413, binary
// content 415.
func (s *server) readText(ctx context.Context, resolved, shown string) ([]byte, fs.FileInfo, error) {
	f, fi, err := s.openRegular(ctx, resolved, shown)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi.Size() > MaxTextBytes {
		return nil, nil, tooLarge(shown, fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxTextBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", resolved, err)
	}
	if len(data) > MaxTextBytes { // grew since the stat
		return nil, nil, tooLarge(shown, int64(len(data)))
	}
	if IsBinary(data) {
		return nil, nil, &protocol.Error{
			Code:    protocol.CodeUnsupportedMedia,
			Message: shown + " is a binary file (NUL bytes or invalid UTF-8): fetch it with GET /api/file-raw",
		}
	}
	return data, fi, nil
}

// readPathError is pathError, with a symbolic link found on the way (the
// path changed since its check) refused as forbidden.
func readPathError(err error, shown string) error {
	if errors.Is(err, beneath.ErrSymlink) {
		return protocol.Errorf(protocol.CodeForbidden, "%s: a symbolic link appeared on the path since it was checked", shown)
	}
	return pathError(err, shown)
}

func tooLarge(shown string, size int64) error {
	return protocol.Errorf(protocol.CodePayloadTooLarge,
		"%s is %d bytes, over the %d-byte limit of text files: fetch it with GET /api/file-raw", shown, size, MaxTextBytes)
}

// IsBinary reports whether data is not text: it holds a NUL byte or is not
// valid UTF-8.
func IsBinary(data []byte) bool {
	return bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data)
}

// Version is the opaque version of a file's content: "sha256:" and the
// hex digest.
func Version(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func mtime(fi fs.FileInfo) string {
	return fi.ModTime().UTC().Format(time.RFC3339Nano)
}

// fileJSON is the answer of GET /api/file.
type fileJSON struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Size    int64  `json:"size"`
	Mtime   string `json:"mtime"`
	Version string `json:"version"`
}

func (s *server) readFile(c *fiber.Ctx) error {
	shown, resolved, err := s.resolve(c.UserContext(), query(c, "path"))
	if err != nil {
		return err
	}
	data, fi, err := s.readText(c.UserContext(), resolved, shown)
	if err != nil {
		return err
	}
	return c.JSON(fileJSON{Path: shown, Content: string(data), Size: int64(len(data)), Mtime: mtime(fi), Version: Version(data)})
}
