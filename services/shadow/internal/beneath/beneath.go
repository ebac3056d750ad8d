// Package beneath writes files at a path that was checked, and nowhere
// else: every directory on the way is opened with openat2(2) and
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS from the one before, starting at a
// root opened with no symbolic link on its own path, and the file
// operations happen relative to the directory's descriptor. A parent
// directory swapped for a symbolic link after the check (to a directory
// outside the allowed roots, or to svc-code's config directory) makes the
// open fail with ErrSymlink instead of being followed; a directory renamed
// away after it was opened keeps receiving the write, so the file lands in
// the directory that was checked or nowhere.
//
// The paths given are those a check resolved: absolute, clean, with no
// symbolic link. A link where one is expected (a file to replace) is
// handled by the caller; a link on the way is always refused.
package beneath

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrSymlink is a symbolic link found on the way to a directory: the path
// changed since it was checked.
var ErrSymlink = errors.New("a symbolic link is on the path (it changed since it was checked)")

// resolveFlags keep every lookup under the directory it starts from and
// refuse any symbolic link.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS

// Dir is a directory opened beneath a root.
type Dir struct {
	f    *os.File
	path string
}

// Path is the directory's path as it was opened.
func (d *Dir) Path() string { return d.path }

// Close releases the directory.
func (d *Dir) Close() error { return d.f.Close() }

// OpenDir opens the directory rel (slash-separated, relative, "" for root
// itself) beneath root, an absolute path with no symbolic link. With
// create, missing directories on the way are made with perm. A symbolic
// link anywhere on the way, root's own path included, is ErrSymlink.
func OpenDir(root, rel string, create bool, perm fs.FileMode) (*Dir, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("open %s: not an absolute path", root)
	}
	root = filepath.Clean(root)
	// The root itself: from /, no symbolic link on the way either.
	fd, err := openat2(root, unix.AT_FDCWD, root, 0, unix.RESOLVE_NO_SYMLINKS)
	if err != nil {
		return nil, pathErr("open", root, err)
	}
	if rel != "" {
		for _, part := range strings.Split(rel, "/") {
			if part == "" || part == "." || part == ".." {
				_ = unix.Close(fd)
				return nil, fmt.Errorf("open %s: bad element %q in %q", root, part, rel)
			}
		}
	}
	cur := root
	for _, part := range strings.Split(rel, "/") {
		if part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		next, err := openat2(cur, fd, part, 0, resolveFlags)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, part, uint32(perm.Perm())); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = openat2(cur, fd, part, 0, resolveFlags)
			}
		}
		_ = unix.Close(fd)
		if err != nil {
			return nil, pathErr("open", cur, err)
		}
		fd = next
	}
	return &Dir{f: os.NewFile(uintptr(fd), cur), path: cur}, nil
}

// openat2 opens name (a directory, or with flags a file) from dirfd with
// the resolve flags.
func openat2(shown string, dirfd int, name string, flags, resolve uint64) (int, error) {
	if flags == 0 {
		flags = unix.O_RDONLY | unix.O_DIRECTORY
	}
	for {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{
			Flags: flags | unix.O_CLOEXEC, Resolve: resolve,
		})
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue // EAGAIN: a rename raced the lookup; try again
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return -1, fmt.Errorf("%s: %w", shown, ErrSymlink)
		}
		return fd, err
	}
}

func pathErr(op, p string, err error) error {
	if errors.Is(err, ErrSymlink) {
		return err
	}
	return &fs.PathError{Op: op, Path: p, Err: err}
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("bad file name %q", name)
	}
	return nil
}

// Lstat describes the entry name of the directory, not following a link.
// Its Sys is a *syscall.Stat_t, as os.Lstat's.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	p := filepath.Join(d.path, name)
	fd, err := unix.Openat(int(d.f.Fd()), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("lstat %s: %w", p, err)
	}
	return fi, nil
}

// OpenRead opens the regular file name for reading: never through a link,
// never blocking on a FIFO.
func (d *Dir) OpenRead(name string) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	p := filepath.Join(d.path, name)
	fd, err := openat2(p, int(d.f.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, resolveFlags)
	if err != nil {
		return nil, pathErr("open", p, err)
	}
	return os.NewFile(uintptr(fd), p), nil
}

// CreateTemp makes a new file named prefix and a random suffix, opened
// for writing with mode 0600; it answers the file and its name.
func (d *Dir) CreateTemp(prefix string) (*os.File, string, error) {
	for range 100 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		name := prefix + hex.EncodeToString(b[:])
		p := filepath.Join(d.path, name)
		fd, err := unix.Openat(int(d.f.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, "", &fs.PathError{Op: "create", Path: p, Err: err}
		}
		return os.NewFile(uintptr(fd), p), name, nil
	}
	return nil, "", fmt.Errorf("create a temporary file in %s: too many tries", d.path)
}

// Rename renames the entry oldName of the directory to newName, replacing
// what is there (a file or an empty directory, as rename(2) does).
func (d *Dir) Rename(oldName, newName string) error {
	if err := errors.Join(checkName(oldName), checkName(newName)); err != nil {
		return err
	}
	if err := unix.Renameat(int(d.f.Fd()), oldName, int(d.f.Fd()), newName); err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(d.path, oldName), New: filepath.Join(d.path, newName), Err: err}
	}
	return nil
}

// Symlink makes name a symbolic link to target.
func (d *Dir) Symlink(target, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Symlinkat(target, int(d.f.Fd()), name); err != nil {
		return &os.LinkError{Op: "symlink", Old: target, New: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// Remove deletes the file or link name.
func (d *Dir) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(int(d.f.Fd()), name, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// RemoveDir deletes the empty directory name.
func (d *Dir) RemoveDir(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(int(d.f.Fd()), name, unix.AT_REMOVEDIR); err != nil {
		return &fs.PathError{Op: "remove", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// Sync makes the directory's entries durable (after a rename).
func (d *Dir) Sync() error { return d.f.Sync() }
