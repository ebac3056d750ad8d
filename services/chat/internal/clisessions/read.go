package clisessions

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Bounds of a page.
const (
	// chunk is the unit of the backward read.
	chunk = 64 << 10
	// countChunk is the unit of the newline count.
	countChunk = 1 << 20
	// DefaultMaxBytes bounds the records of one page (at least one record
	// is given, however long).
	DefaultMaxBytes = 4 << 20
	// PollEvery is how often a waiting follow looks at the file.
	PollEvery = 100 * time.Millisecond
)

// Line is one complete line of a file.
type Line struct {
	Offset int64  // of its first byte
	Number int64  // 1-based
	Text   []byte // without the newline
}

// Page is a run of complete lines: the byte range [Start, End) of a file
// of Size bytes.
type Page struct {
	Lines         []Line
	Start, End    int64
	Size          int64
	HasMoreBefore bool
}

// Reader reads transcript files: backwards from a line boundary, and what
// is appended after one. Line numbers come from a per-file index of known
// (offset, line) points: the newlines between the nearest known point and
// the offset asked for are counted once and remembered, so that paging
// backwards or following costs only the bytes of the pages. It is safe for
// concurrent use.
type Reader struct {
	mu    sync.Mutex
	files map[string]*lineIndex

	// BytesRead counts the bytes read for records, BytesCounted those read
	// only to count newlines (tests and benchmarks look at both).
	BytesRead    atomic.Int64
	BytesCounted atomic.Int64
}

// lineIndex is the known points of one file.
type lineIndex struct {
	mu       sync.Mutex
	ino, dev uint64
	// points, sorted by offset: newlines before each offset.
	offs []int64
	nls  []int64
}

// maxPoints bounds a file's index; past it, it starts again.
const maxPoints = 1 << 16

type opened struct {
	f        *os.File
	size     int64
	ino, dev uint64
}

func open(path string) (*opened, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	o := &opened{f: f, size: info.Size()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		o.ino, o.dev = st.Ino, uint64(st.Dev) //nolint:unconvert // Dev's type differs by platform
	}
	return o, nil
}

// atBoundary: off is 0, or the byte before it is a newline.
func (o *opened) atBoundary(off int64) (bool, error) {
	if off == 0 {
		return true, nil
	}
	var b [1]byte
	if _, err := o.f.ReadAt(b[:], off-1); err != nil {
		return false, err
	}
	return b[0] == '\n', nil
}

// Before returns the last complete lines ending at before (-1: the end of
// the last complete line of the file): at most limit of them and, past the
// first, at most maxBytes of them. before must be a line boundary within
// the file, else ErrChanged (the file shrank or was replaced).
func (r *Reader) Before(path string, before int64, limit, maxBytes int) (Page, error) {
	o, err := open(path)
	if err != nil {
		return Page{}, err
	}
	defer o.f.Close()
	end := before
	if end < 0 {
		if end, err = r.lastBoundary(o); err != nil {
			return Page{}, err
		}
	} else {
		if end > o.size {
			return Page{}, ErrChanged
		}
		if ok, err := o.atBoundary(end); err != nil || !ok {
			return Page{}, ErrChanged
		}
	}
	// Read backwards until limit complete lines (or maxBytes) are in.
	var bufs [][]byte
	pos, newlines, total := end, 0, 0
	for pos > 0 {
		n := min(int64(chunk), pos)
		b := make([]byte, n)
		if _, err := o.f.ReadAt(b, pos-n); err != nil {
			return Page{}, err
		}
		r.BytesRead.Add(n)
		pos -= n
		total += int(n)
		bufs = append(bufs, b)
		newlines += bytes.Count(b, []byte{'\n'})
		// The first newline of the range ends a line that began before it.
		if newlines-1 >= limit || (total >= maxBytes && newlines >= 2) {
			break
		}
	}
	data := make([]byte, 0, total)
	for i := len(bufs) - 1; i >= 0; i-- {
		data = append(data, bufs[i]...)
	}
	if pos > 0 { // the first line began before pos: not in the page
		data = data[bytes.IndexByte(data, '\n')+1:]
	}
	texts := bytes.SplitAfter(data, []byte{'\n'})
	if len(texts) > 0 && len(texts[len(texts)-1]) == 0 {
		texts = texts[:len(texts)-1]
	}
	// Keep the last ones within the bounds.
	keep, size := 0, 0
	for i := len(texts) - 1; i >= 0 && keep < limit; i-- {
		if keep > 0 && size+len(texts[i]) > maxBytes {
			break
		}
		size += len(texts[i])
		keep++
	}
	texts = texts[len(texts)-keep:]
	start := end - int64(size)
	// Numbered from end: when paging backwards it is the previous page's
	// start, a known point.
	endLine, err := r.lineAt(path, o, end)
	if err != nil {
		return Page{}, err
	}
	first := endLine - int64(len(texts))
	p := Page{Start: start, End: end, Size: o.size, HasMoreBefore: start > 0, Lines: make([]Line, 0, len(texts))}
	off := start
	for i, t := range texts {
		p.Lines = append(p.Lines, Line{Offset: off, Number: first + int64(i), Text: bytes.TrimSuffix(t, []byte{'\n'})})
		off += int64(len(t))
	}
	r.remember(path, o, start, first-1)
	return p, nil
}

// lastBoundary is the offset after the file's last newline (0 if none).
func (r *Reader) lastBoundary(o *opened) (int64, error) {
	pos := o.size
	for pos > 0 {
		n := min(int64(chunk), pos)
		b := make([]byte, n)
		if _, err := o.f.ReadAt(b, pos-n); err != nil {
			return 0, err
		}
		r.BytesRead.Add(n)
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return pos - n + int64(i) + 1, nil
		}
		pos -= n
	}
	return 0, nil
}

// After returns the complete lines after the boundary after: at most limit
// of them and, past the first, at most maxBytes. When there are none it
// waits up to wait for some, looking at the file every PollEvery. after
// past the end, or not after a newline, or the file replaced while waiting:
// ErrChanged.
func (r *Reader) After(ctx context.Context, path string, after int64, limit, maxBytes int, wait time.Duration) (Page, error) {
	o, err := open(path)
	if err != nil {
		return Page{}, err
	}
	defer o.f.Close()
	if after > o.size {
		return Page{}, ErrChanged
	}
	if ok, err := o.atBoundary(after); err != nil || !ok {
		return Page{}, ErrChanged
	}
	deadline := time.Now().Add(wait)
	for {
		p, err := r.forward(path, o, after, limit, maxBytes)
		if err != nil || len(p.Lines) > 0 || !time.Now().Before(deadline) {
			return p, err
		}
		timer := time.NewTimer(min(PollEvery, time.Until(deadline)))
		select {
		case <-ctx.Done():
			timer.Stop()
			return p, nil
		case <-timer.C:
		}
		// The same file, not shorter than where the reader is.
		info, err := os.Stat(path)
		if err != nil {
			return Page{}, ErrChanged
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if info.Size() < after || (ok && (st.Ino != o.ino || uint64(st.Dev) != o.dev)) { //nolint:unconvert // Dev's type differs by platform
			return Page{}, ErrChanged
		}
		o.size = info.Size()
	}
}

// forward reads the complete lines after the boundary after.
func (r *Reader) forward(path string, o *opened, after int64, limit, maxBytes int) (Page, error) {
	p := Page{Start: after, End: after, Size: o.size, HasMoreBefore: after > 0}
	var data []byte
	pos := after
	for pos < o.size {
		n := min(int64(max(chunk, maxBytes/4)), o.size-pos)
		b := make([]byte, n)
		k, err := o.f.ReadAt(b, pos)
		r.BytesRead.Add(int64(k))
		data = append(data, b[:k]...)
		pos += int64(k)
		if err != nil && !errors.Is(err, io.EOF) {
			return Page{}, err
		}
		if k == 0 {
			break
		}
		if c := bytes.Count(data, []byte{'\n'}); c >= limit || (len(data) >= maxBytes && c >= 1) {
			break
		}
	}
	if last := bytes.LastIndexByte(data, '\n'); last >= 0 {
		data = data[:last+1]
	} else {
		return p, nil // nothing complete yet: a line being written
	}
	first, err := r.lineAt(path, o, after)
	if err != nil {
		return Page{}, err
	}
	off := after
	for len(data) > 0 && len(p.Lines) < limit {
		i := bytes.IndexByte(data, '\n')
		if len(p.Lines) > 0 && off-after+int64(i+1) > int64(maxBytes) {
			break
		}
		p.Lines = append(p.Lines, Line{Offset: off, Number: first + int64(len(p.Lines)), Text: data[:i]})
		off += int64(i + 1)
		data = data[i+1:]
	}
	p.End = off
	r.remember(path, o, off, first-1+int64(len(p.Lines)))
	return p, nil
}

// index returns path's line index, started anew when the file is another
// one than the index knew.
func (r *Reader) index(path string, o *opened) *lineIndex {
	r.mu.Lock()
	if r.files == nil {
		r.files = map[string]*lineIndex{}
	}
	idx := r.files[path]
	if idx == nil {
		if len(r.files) > 1024 {
			clear(r.files)
		}
		idx = &lineIndex{}
		r.files[path] = idx
	}
	r.mu.Unlock()
	idx.mu.Lock()
	if idx.ino != o.ino || idx.dev != o.dev || len(idx.offs) > maxPoints ||
		(len(idx.offs) > 0 && idx.offs[len(idx.offs)-1] > o.size) {
		idx.ino, idx.dev = o.ino, o.dev
		idx.offs, idx.nls = []int64{0}, []int64{0}
	}
	return idx // locked
}

// lineAt is the 1-based number of the line starting at off, a boundary.
func (r *Reader) lineAt(path string, o *opened, off int64) (int64, error) {
	idx := r.index(path, o)
	defer idx.mu.Unlock()
	i := sort.Search(len(idx.offs), func(i int) bool { return idx.offs[i] >= off })
	if i < len(idx.offs) && idx.offs[i] == off {
		return idx.nls[i] + 1, nil
	}
	// The nearest known point: below (i-1, always there: offset 0) or above.
	var nl int64
	if i < len(idx.offs) && idx.offs[i]-off < off-idx.offs[i-1] {
		n, err := r.count(o, off, idx.offs[i])
		if err != nil {
			return 0, err
		}
		nl = idx.nls[i] - n
	} else {
		n, err := r.count(o, idx.offs[i-1], off)
		if err != nil {
			return 0, err
		}
		nl = idx.nls[i-1] + n
	}
	idx.insert(i, off, nl)
	return nl + 1, nil
}

// remember records that the boundary off has lines newlines before it.
func (r *Reader) remember(path string, o *opened, off, lines int64) {
	idx := r.index(path, o)
	defer idx.mu.Unlock()
	i := sort.Search(len(idx.offs), func(i int) bool { return idx.offs[i] >= off })
	if i < len(idx.offs) && idx.offs[i] == off {
		return
	}
	idx.insert(i, off, lines)
}

func (idx *lineIndex) insert(i int, off, nl int64) {
	idx.offs = append(idx.offs[:i], append([]int64{off}, idx.offs[i:]...)...)
	idx.nls = append(idx.nls[:i], append([]int64{nl}, idx.nls[i:]...)...)
}

// count counts the newlines in [from, to).
func (r *Reader) count(o *opened, from, to int64) (int64, error) {
	buf := make([]byte, min(int64(countChunk), to-from))
	var n int64
	for from < to {
		b := buf[:min(int64(len(buf)), to-from)]
		k, err := o.f.ReadAt(b, from)
		r.BytesCounted.Add(int64(k))
		n += int64(bytes.Count(b[:k], []byte{'\n'}))
		from += int64(k)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return 0, err
		}
	}
	return n, nil
}
