package files

import (
	"cmp"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Entry types of a listing.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// entryJSON is one entry of GET /api/files.
type entryJSON struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Target is what a symlink leads to: file, dir, other, or broken (its
	// target does not exist or cannot be reached).
	Target string `json:"target,omitempty"`
	Size   int64  `json:"size"`
	Mtime  string `json:"mtime"`
}

// listJSON is the answer of GET /api/files.
type listJSON struct {
	Path      string      `json:"path"`
	Entries   []entryJSON `json:"entries"`
	Truncated bool        `json:"truncated"`
}

func (s *server) listRoots(c *fiber.Ctx) error {
	list, err := s.Roots.Roots(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"roots": list})
}

func (s *server) listDir(c *fiber.Ctx) error {
	hidden, err := queryBool(c, "hidden", true)
	if err != nil {
		return err
	}
	shown, resolved, err := s.resolve(c.UserContext(), query(c, "path"))
	if err != nil {
		return err
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return pathError(err, shown)
	}
	if !fi.IsDir() {
		return badRequest("%s is not a directory: read it with GET /api/file", shown)
	}
	f, err := os.Open(resolved)
	if err != nil {
		return pathError(err, shown)
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return fmt.Errorf("list %s: %w", resolved, err)
	}
	out := listJSON{Path: shown, Entries: make([]entryJSON, 0, min(len(des), MaxEntries))}
	for _, de := range des {
		if !hidden && strings.HasPrefix(de.Name(), ".") {
			continue
		}
		out.Entries = append(out.Entries, entry(resolved, de))
	}
	// Directories (and links to them) first, then by name.
	slices.SortFunc(out.Entries, func(a, b entryJSON) int {
		if da, db := a.isDir(), b.isDir(); da != db {
			if da {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if len(out.Entries) > MaxEntries {
		out.Entries, out.Truncated = out.Entries[:MaxEntries], true
	}
	return c.JSON(out)
}

func (e entryJSON) isDir() bool { return e.Type == TypeDir || e.Target == TypeDir }

func entry(dir string, de fs.DirEntry) entryJSON {
	e := entryJSON{Name: de.Name(), Type: TypeOther}
	fi, err := de.Info()
	if err != nil { // gone since the listing
		e.Type = typeOf(de.Type())
		return e
	}
	e.Type, e.Size, e.Mtime = typeOf(fi.Mode()), fi.Size(), mtime(fi)
	if e.Type == TypeSymlink {
		e.Target = "broken"
		if ti, err := os.Stat(filepath.Join(dir, de.Name())); err == nil {
			e.Target = typeOf(ti.Mode())
		}
	}
	return e
}

func typeOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return TypeSymlink
	case m.IsDir():
		return TypeDir
	case m.IsRegular():
		return TypeFile
	}
	return TypeOther
}
