package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"syscall"
)

// frame is one directory on the way from the file system root to the
// directory being walked: its .gitignore and whether it holds a .git.
type frame struct {
	dir     string
	ignore  *Matcher // nil when the directory has no .gitignore
	hasGit  bool
	hasRule bool
}

func loadFrame(dir string) frame {
	f := frame{dir: dir}
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
		f.hasGit = true
	}
	if data, err := os.ReadFile(filepath.Join(dir, ".gitignore")); err == nil {
		f.ignore = ParseGitignore(data)
		f.hasRule = true
	}
	return f
}

// walker finds the files one Go search reads, in path order.
type walker struct {
	override *Matcher
	includes bool
	private  func(abs string, isDir bool) bool // nil: nothing is
}

// job is one file to search; idx is its place in path order.
type job struct {
	idx  int
	path string
}

// fileMatches are the matches of the file of job idx.
type fileMatches struct {
	idx     int
	matches []Match
}

// searchGo walks the tree in one goroutine and reads the files in
// GOMAXPROCS others; the matches are put back in path order, and the
// search stops as soon as the first MaxResults+1 are known.
func searchGo(ctx context.Context, q Query) (Result, error) {
	override, ok := NewMatcher(q.overrideLines())
	if !ok {
		return Result{}, fmt.Errorf("%w: bad glob", ErrInvalid)
	}
	w := &walker{override: override, includes: len(q.Include) > 0, private: q.Private}
	// The root's ancestors, nearest last: their .gitignore files apply up
	// to the repository root.
	var stack []frame
	for d := filepath.Dir(q.Root); ; d = filepath.Dir(d) {
		stack = append([]frame{loadFrame(d)}, stack...)
		if d == "/" || d == "." {
			break
		}
	}
	stack = append(stack, loadFrame(q.Root))

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	// Small buffers: the walk runs only a little ahead of the matches
	// taken, so a search that stops early has read little beyond.
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan job, 2*workers)
	results := make(chan fileMatches, 2*workers)
	var walkErr error
	go func() {
		defer close(jobs)
		n := 0
		walkErr = w.walk(wctx, stack, "", func(path string) error {
			select {
			case jobs <- job{n, path}:
				n++
				return nil
			case <-wctx.Done():
				return fmt.Errorf("search: %w", wctx.Err())
			}
		})
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			searcher := newFileSearcher(q)
			for j := range jobs {
				results <- fileMatches{j.idx, searcher.search(j.path, q.MaxResults+1)}
			}
		})
	}
	go func() {
		wg.Wait()
		close(results)
	}()

	res := Result{Matches: []Match{}, Engine: EngineGo}
	pending := map[int][]Match{}
	next := 0
	for r := range results { // drained to the end, so no worker is left blocked
		if res.Truncated {
			continue
		}
		pending[r.idx] = r.matches
		for ms, ok := pending[next]; ok && !res.Truncated; ms, ok = pending[next] {
			delete(pending, next)
			next++
			for _, m := range ms {
				if len(res.Matches) == q.MaxResults {
					res.Truncated = true
					stop()
					break
				}
				res.Matches = append(res.Matches, m)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("search: %w", err)
	}
	if walkErr != nil && !res.Truncated {
		return Result{}, walkErr
	}
	return res, nil
}

// walk calls file for every file to search under the directory at the top
// of stack, in path order; rel is that directory relative to the root (""
// for the root).
func (w *walker) walk(ctx context.Context, stack []frame, rel string, file func(path string) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("search: %w", err)
	}
	dir := stack[len(stack)-1].dir
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // unreadable: skipped, as ripgrep does
	}
	for _, e := range entries {
		name := e.Name()
		erel := name
		if rel != "" {
			erel = rel + "/" + name
		}
		typ := e.Type()
		if typ&fs.ModeSymlink != 0 || !typ.IsDir() && !typ.IsRegular() {
			continue
		}
		isDir := typ.IsDir()
		if w.private != nil && w.private(filepath.Join(dir, name), isDir) {
			continue
		}
		if w.ignored(stack, erel, filepath.Join(dir, name), isDir) {
			continue
		}
		if isDir {
			if err := w.walk(ctx, append(stack, loadFrame(filepath.Join(dir, name))), erel, file); err != nil {
				return err
			}
			continue
		}
		if err := file(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// ignored applies the globs, then the .gitignore files from the entry's
// directory up to the nearest repository root (none outside a repository).
func (w *walker) ignored(stack []frame, rel, abs string, isDir bool) bool {
	if m, neg := w.override.Match(rel, isDir); m {
		return neg
	} else if w.includes && !isDir {
		return true
	}
	anyGit := false
	for _, f := range stack {
		anyGit = anyGit || f.hasGit
	}
	if !anyGit {
		return false
	}
	for i := len(stack) - 1; i >= 0; i-- {
		f := stack[i]
		if f.hasRule {
			r, err := filepath.Rel(f.dir, abs)
			if err == nil {
				if m, neg := f.ignore.Match(filepath.ToSlash(r), isDir); m {
					return !neg
				}
			}
		}
		if f.hasGit {
			break
		}
	}
	return false
}

// fileSearcher reads and matches files; one per worker goroutine.
type fileSearcher struct {
	re *regexp.Regexp
	// whole is re over a whole file (multi-line mode): a file it does not
	// match has no matching line, so most files are checked in one pass.
	// nil when the pattern has \A, \z or flags, whose meaning could differ.
	whole   *regexp.Regexp
	pre     *prefilter // nil: none
	buf     []byte
	scratch []byte
}

func newFileSearcher(q Query) *fileSearcher {
	return &fileSearcher{re: q.compile(), whole: q.compileWhole(), pre: q.prefilterOf()}
}

// statAfter: a file that reaches this size is checked against MaxFileSize
// before it is read further.
const statAfter = 1 << 20

// readSmall reads a whole file of at most MaxFileSize bytes into buf with
// plain system calls (no poller registration, no fstat: a walk reads
// thousands of files, and those calls are most of its time). Opened with
// O_NOFOLLOW and O_NONBLOCK, in case a link or FIFO took the file's place
// since the walk saw it.
func readSmall(path string, buf []byte) ([]byte, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return buf[:0], false
	}
	defer syscall.Close(fd) // read-only: nothing to lose
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(cap(buf), 16<<10))
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return buf[:0], false
		case n == 0:
			return buf, true
		}
		before := len(buf)
		buf = buf[:len(buf)+n]
		if before < statAfter && len(buf) >= statAfter {
			// A large file: its size says whether it is worth reading on.
			var st syscall.Stat_t
			if err := syscall.Fstat(fd, &st); err != nil || st.Size > MaxFileSize {
				return buf[:0], false
			}
		}
		if len(buf) > MaxFileSize {
			return buf[:0], false
		}
	}
}

// search returns the matching lines of one regular file, at most limit.
func (s *fileSearcher) search(path string, limit int) []Match {
	data, ok := readSmall(path, s.buf)
	s.buf = data[:0]
	if !ok {
		return nil // unreadable or over MaxFileSize: skipped, as ripgrep does
	}
	if bytes.IndexByte(data[:min(len(data), binaryWindow)], 0) >= 0 {
		return nil
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		data = data[:i] // a binary tail: stop there, as ripgrep does
	}
	if s.pre != nil && !s.pre.pass(data, &s.scratch) {
		return nil
	}
	if s.whole != nil && !s.whole.Match(data) {
		return nil
	}
	var out []Match
	line := 0
	for len(data) > 0 && len(out) < limit {
		line++
		end := bytes.IndexByte(data, '\n')
		var l []byte
		if end < 0 {
			l, data = data, nil
		} else {
			l, data = data[:end], data[end+1:]
		}
		if loc := s.re.FindIndex(l); loc != nil {
			out = append(out, Match{Path: path, Line: line, Column: loc[0] + 1, Text: cutLine(string(l))})
		}
	}
	return out
}
