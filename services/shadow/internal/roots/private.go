package roots

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/svc-code/svc-code/libs/secretpaths"
)

// Denied is the private set (secretpaths.Set) as the file system shows it
// now: each path both as spelled and with its symbolic links resolved, and
// the device and inode of every secret file that has other hard links.
type Denied struct {
	set secretpaths.Set // each path as spelled and as resolved
	// linked holds the secret files with more than one link: another name
	// for one of them is refused by identity, wherever it is.
	linked map[fileID]bool
}

type fileID struct{ dev, ino uint64 }

// Denied resolves the private set. It is read again at every call (a few
// system calls per path), so a link made a moment ago counts.
func (r *Resolver) Denied() *Denied {
	return NewDenied(r.private)
}

// NewDenied resolves set.
func NewDenied(set secretpaths.Set) *Denied {
	d := &Denied{set: secretpaths.Set{Trees: both(set.Trees), Open: both(set.Open), Files: both(set.Files)}}
	for _, f := range d.set.Files {
		var st syscall.Stat_t
		if err := syscall.Stat(f, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink < 2 {
			continue
		}
		if d.linked == nil {
			d.linked = map[fileID]bool{}
		}
		d.linked[fileID{uint64(st.Dev), st.Ino}] = true //nolint:unconvert // Dev is not uint64 on every platform
	}
	return d
}

// both answers each path as spelled (cleaned) and resolved.
func both(paths []string) []string {
	out := make([]string, 0, 2*len(paths))
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		out = append(out, p)
		if r, err := Realpath(p); err == nil && r != p {
			out = append(out, r)
		}
	}
	return out
}

// Path reports whether p (absolute and clean) is private: a secret file,
// or inside a private tree and not inside an open one.
func (d *Denied) Path(p string) bool {
	return d != nil && d.set.Private(p)
}

// Linked reports whether fi (of a file opened or listed) is another name
// of a secret file: a hard link to it.
func (d *Denied) Linked(fi fs.FileInfo) bool {
	if d == nil || len(d.linked) == 0 || fi == nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink < 2 {
		return false
	}
	return d.linked[fileID{uint64(st.Dev), st.Ino}] //nolint:unconvert // Dev is not uint64 on every platform
}

// HasLinks reports whether any secret file has another hard link; when
// not, Linked is false for every file and a walk need not stat them.
func (d *Denied) HasLinks() bool { return d != nil && len(d.linked) > 0 }

// LinkedPath is Linked for a path, not following a final symbolic link.
func (d *Denied) LinkedPath(p string) bool {
	if !d.HasLinks() {
		return false
	}
	fi, err := os.Lstat(p)
	return err == nil && d.Linked(fi)
}

// Under answers the private trees and files strictly below dir (absolute,
// clean), relative to it with slashes, sorted: what a walk of dir must
// leave out. Open trees are ignored: what is below dir and private in part
// is left out whole.
func (d *Denied) Under(dir string) []string {
	if d == nil {
		return nil
	}
	var out []string
	for _, list := range [][]string{d.set.Trees, d.set.Files} {
		for _, p := range list {
			if p != dir && Within(p, dir) {
				rel, err := filepath.Rel(dir, p)
				if err == nil {
					out = append(out, filepath.ToSlash(rel))
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
