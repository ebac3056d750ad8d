package uploads

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/svc-code/svc-code/libs/safename"
)

// maxNameBytes bounds a stored file's name.
const maxNameBytes = 120

// maxSuffix is how many "-N" suffixes are tried before giving up.
const maxSuffix = 10000

// SafeName turns an uploaded file name into one safe to store: its last
// path element only (either slash), letters, digits, space and . _ - + ( )
// , kept and anything else replaced by '_', no leading dots or spaces, at
// most 120 bytes (the extension kept); "file" when nothing is left.
func SafeName(name string) string {
	return safename.Clean(name, maxNameBytes)
}

// withExt replaces name's extension with ext (".png") unless it already
// has it (".jpeg" counts for ".jpg").
func withExt(name, ext string) string {
	cur := strings.ToLower(filepath.Ext(name))
	if cur == ext || (ext == ".jpg" && cur == ".jpeg") {
		return name
	}
	return strings.TrimSuffix(name, filepath.Ext(name)) + ext
}

// createUnique creates a new file named name in dir, or name-1, name-2, ...
// before the extension when that exists: never replacing a file.
func createUnique(dir, name string) (*os.File, error) {
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if stem == "" {
		stem, ext = name, ""
	}
	for i := range maxSuffix {
		candidate := name
		if i > 0 {
			candidate = fmt.Sprintf("%s-%d%s", stem, i, ext)
		}
		f, err := os.OpenFile(filepath.Join(dir, candidate), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create upload %s: %w", candidate, err)
		}
		return f, nil
	}
	return nil, fmt.Errorf("create upload %s: %d names taken", name, maxSuffix)
}

// save writes r to a new file named after name in dir (created 0700),
// returning its path and size; a failed write leaves no file.
func save(dir, name string, r io.Reader) (string, int64, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", 0, fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := createUnique(dir, name)
	if err != nil {
		return "", 0, err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", 0, fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return f.Name(), n, nil
}
