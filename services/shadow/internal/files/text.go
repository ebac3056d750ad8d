package files

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/shadow/internal/roots"
)

// openRegular opens the resolved path for reading: never through a link
// put there since the check (O_NOFOLLOW), never blocking on a FIFO
// (O_NONBLOCK, then a regular file is required), never another name (a hard
// link) of one of svc-code's secret files.
func (s *server) openRegular(resolved, shown string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(resolved, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, pathError(err, shown)
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
func (s *server) readText(resolved, shown string) ([]byte, fs.FileInfo, error) {
	f, fi, err := s.openRegular(resolved, shown)
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
	data, fi, err := s.readText(resolved, shown)
	if err != nil {
		return err
	}
	return c.JSON(fileJSON{Path: shown, Content: string(data), Size: int64(len(data)), Mtime: mtime(fi), Version: Version(data)})
}
