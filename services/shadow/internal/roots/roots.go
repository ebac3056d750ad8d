// Package roots decides which paths the file routes may touch. A path is
// allowed when, once cleaned and with every symbolic link resolved, it lies
// inside one of the allowed roots (the user's home directory, the working
// directory of every known session, the configured extra directories) and
// outside /proc, /sys and /dev, which are never allowed.
//
// Inside the roots, what svc-code keeps secret (libs/secretpaths: the
// config directory, the data home but its uploads, files named by *_FILE
// variables) is private: refused like a path outside, however it is
// spelled (a leading ~, .. segments, a symbolic link to it or to one of its
// parents), and a file with another hard link to one of the secret files is
// refused when it is opened (by device and inode).
//
// Resolve is the one door: every file route passes its path through it and
// touches only the path it returns, which holds no symbolic link at the time
// of the check.
package roots

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/svc-code/svc-code/libs/secretpaths"
)

// Errors Resolve reports; the file routes map them to the error envelope.
var (
	// ErrInvalid: the path is empty, relative or holds a NUL byte.
	ErrInvalid = errors.New("invalid path")
	// ErrForbidden: the resolved path is outside every allowed root, or
	// inside /proc, /sys or /dev.
	ErrForbidden = errors.New("path outside the allowed roots")
	// ErrPrivate: the resolved path is one svc-code keeps secret. It
	// matches ErrForbidden too (errors.Is).
	ErrPrivate error = privateError{}
)

type privateError struct{}

func (privateError) Error() string        { return "svc-code keeps its secrets there" }
func (privateError) Is(target error) bool { return target == ErrForbidden }

// denied are never allowed, whatever the roots say.
var denied = []string{"/proc", "/sys", "/dev"}

// maxLinks bounds the symbolic links followed while resolving one path, as
// the kernel's own limit (ELOOP) does.
const maxLinks = 40

// Source lists the allowed roots as they are now (they need not be
// resolved, clean or even exist).
type Source func(ctx context.Context) ([]string, error)

// Resolver checks paths against the roots its sources list.
type Resolver struct {
	sources []Source
	ttl     time.Duration
	now     func() time.Time
	// onError hears about a source that failed; nil: nobody.
	onError func(ctx context.Context, err error)

	// private is what no route may reach inside the roots; home is what a
	// leading ~ stands for ("" : ~ is not expanded).
	private secretpaths.Set
	home    string

	mu       sync.Mutex
	cached   []string
	expires  time.Time
	lastGood [][]string // per source, what it last listed
}

// New returns a Resolver over sources, which it asks again at most once
// every ttl (zero: at every call).
func New(ttl time.Duration, sources ...Source) *Resolver {
	return &Resolver{sources: sources, ttl: ttl, now: time.Now, lastGood: make([][]string, len(sources))}
}

// OnError sets what hears about a failing source (it is logged, and the
// source's last good list, if any, stands in for it).
func (r *Resolver) OnError(f func(ctx context.Context, err error)) *Resolver {
	r.onError = f
	return r
}

// Private sets what is refused inside the roots (secretpaths.For).
func (r *Resolver) Private(set secretpaths.Set) *Resolver {
	r.private = set
	return r
}

// ExpandHome makes a leading "~" or "~/" of a path stand for home (an
// absolute path). "~user" is not expanded.
func (r *Resolver) ExpandHome(home string) *Resolver {
	r.home = home
	return r
}

// Expand replaces a leading "~" or "~/" of p with the home directory set
// by ExpandHome; any other p is returned as is.
func (r *Resolver) Expand(p string) string {
	if r.home == "" {
		return p
	}
	if p == "~" {
		return r.home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return r.home + "/" + rest
	}
	return p
}

// Static is a Source that always lists dirs.
func Static(dirs ...string) Source {
	return func(context.Context) ([]string, error) { return dirs, nil }
}

// Home is a Source that lists the user's home directory.
func Home(home func() (string, error)) Source {
	return func(context.Context) ([]string, error) {
		h, err := home()
		if err != nil {
			return nil, fmt.Errorf("home directory: %w", err)
		}
		return []string{h}, nil
	}
}

// Roots returns the allowed roots, resolved (symbolic links followed),
// deduplicated and sorted; roots that do not exist or lie in a denied tree
// are left out. A source that fails (the database is down) is reported to
// OnError and replaced by what it listed last, so the other roots keep
// working; Roots fails only when every source fails and none ever
// answered.
func (r *Resolver) Roots(ctx context.Context) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cached != nil && r.now().Before(r.expires) {
		return r.cached, nil
	}
	var out []string
	var errs []error
	denied := r.Denied()
	for i, src := range r.sources {
		dirs, err := src(ctx)
		if err != nil {
			if r.onError != nil {
				r.onError(ctx, err)
			}
			errs = append(errs, err)
			dirs = r.lastGood[i]
		} else {
			r.lastGood[i] = dirs
		}
		for _, d := range dirs {
			if !filepath.IsAbs(d) || strings.IndexByte(d, 0) >= 0 {
				continue
			}
			resolved, err := Realpath(filepath.Clean(d))
			if err != nil || isDenied(resolved) || denied.Path(resolved) {
				continue
			}
			if fi, err := os.Stat(resolved); err != nil || !fi.IsDir() {
				continue
			}
			out = append(out, resolved)
		}
	}
	if len(errs) > 0 && len(errs) == len(r.sources) && out == nil {
		return nil, errors.Join(errs...)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	r.cached, r.expires = out, r.now().Add(r.ttl)
	return out, nil
}

// Invalidate drops the cached roots, so that the next check asks the
// sources again: a change of the server config (extra_dirs) applies to the
// next request rather than within the cache's life.
func (r *Resolver) Invalidate() {
	r.mu.Lock()
	r.cached = nil
	r.mu.Unlock()
}

// Resolve checks p and returns its real path: absolute, clean, with every
// symbolic link resolved (those of a part that does not exist yet
// included, for a file about to be written). The result may not exist. A
// leading ~ is expanded (ExpandHome). A private path is ErrPrivate.
func (r *Resolver) Resolve(ctx context.Context, p string) (string, error) {
	clean, err := Clean(r.Expand(p))
	if err != nil {
		return "", err
	}
	if isDenied(clean) {
		return "", ErrForbidden
	}
	resolved, err := Realpath(clean)
	if err != nil {
		return "", err
	}
	roots, err := r.Roots(ctx)
	if err != nil {
		return "", err
	}
	if !Allowed(resolved, roots) {
		return "", ErrForbidden
	}
	if d := r.Denied(); d.Path(clean) || d.Path(resolved) {
		return "", ErrPrivate
	}
	return resolved, nil
}

// Clean validates p (absolute, no NUL byte) and cleans it lexically.
func Clean(p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("%w: empty", ErrInvalid)
	case strings.IndexByte(p, 0) >= 0:
		return "", fmt.Errorf("%w: NUL byte", ErrInvalid)
	case !filepath.IsAbs(p):
		return "", fmt.Errorf("%w: %q is not absolute", ErrInvalid, p)
	}
	return filepath.Clean(p), nil
}

// Allowed reports whether resolved (a real path) lies in one of roots (each
// resolved) and outside the denied trees.
func Allowed(resolved string, roots []string) bool {
	if isDenied(resolved) {
		return false
	}
	for _, root := range roots {
		if Within(resolved, root) {
			return true
		}
	}
	return false
}

// Within reports whether p is dir or below it, by whole path elements: /home/u
// holds /home/u/x but not /home/user2. Both must be clean and absolute.
func Within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir) && p[len(dir)] == '/'
}

func isDenied(p string) bool {
	for _, d := range denied {
		if Within(p, d) {
			return true
		}
	}
	return false
}

// Realpath resolves every symbolic link in p (absolute and clean) as the
// kernel would when opening it, one element at a time. Unlike
// filepath.EvalSymlinks it also resolves paths whose tail does not exist
// (the tail is kept as is) and dangling links (their target is followed
// even though it does not exist), so a file created at the result is the
// file the kernel would create at p.
func Realpath(p string) (string, error) {
	rest := splitPath(p)
	resolved := "/"
	links := 0
	for len(rest) > 0 {
		elem := rest[0]
		rest = rest[1:]
		switch elem {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, elem)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			// Nothing exists here: keep it as is and go on, since a ".."
			// from a link's target may lead back to what exists (and may
			// hold links).
			resolved = next
			continue
		}
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", next, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("resolve %s: %w", p, syscall.ELOOP)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", next, err)
		}
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		rest = append(splitPath(target), rest...)
	}
	return resolved, nil
}

func splitPath(p string) []string { return strings.Split(p, "/") }
