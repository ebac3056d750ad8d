package clisessions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// synthetic writes a transcript of n lines of about size bytes each (a
// Claude Code assistant record) and returns its path and content.
func synthetic(t testing.TB, dir string, n, size int) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	pad := strings.Repeat("x", max(size-120, 1))
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&buf, `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"line %d %s"}]}}`+"\n", i, pad)
	}
	path := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, buf.Bytes()
}

// checkLines fails unless p's lines are lines from..from+len-1 of content.
func checkLines(t *testing.T, p Page, content []byte, from int64) {
	t.Helper()
	all := bytes.SplitAfter(content, []byte("\n"))
	off := int64(0)
	for i := int64(0); i < from-1; i++ {
		off += int64(len(all[i]))
	}
	if p.Start != off {
		t.Fatalf("start %d, want %d (line %d)", p.Start, off, from)
	}
	for i, l := range p.Lines {
		want := bytes.TrimSuffix(all[from-1+int64(i)], []byte("\n"))
		if l.Number != from+int64(i) || l.Offset != off || !bytes.Equal(l.Text, want) {
			t.Fatalf("line %d of the page: #%d at %d %.40q, want #%d at %d %.40q", i, l.Number, l.Offset, l.Text, from+int64(i), off, want)
		}
		off += int64(len(want)) + 1
	}
	if p.End != off {
		t.Fatalf("end %d, want %d", p.End, off)
	}
}

func TestBeforePagesBackwardsFromTheEnd(t *testing.T) {
	path, content := synthetic(t, t.TempDir(), 1000, 300)
	var r Reader
	p, err := r.Before(path, -1, 100, DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	checkLines(t, p, content, 901)
	if !p.HasMoreBefore || p.Size != int64(len(content)) || p.End != p.Size {
		t.Errorf("page %+v", p)
	}
	// Back to the start, page by page.
	for from := int64(801); from >= 1; from -= 100 {
		if p, err = r.Before(path, p.Start, 100, DefaultMaxBytes); err != nil {
			t.Fatal(err)
		}
		checkLines(t, p, content, from)
	}
	if p.HasMoreBefore {
		t.Error("the first page says there is more before it")
	}
	// The byte bound: at least one line, then no more than maxBytes.
	p, err = r.Before(path, -1, 100, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Lines) != 3 {
		t.Errorf("%d lines within 1000 bytes of 300-byte lines, want 3", len(p.Lines))
	}
	p, err = r.Before(path, -1, 100, 10)
	if err != nil || len(p.Lines) != 1 {
		t.Errorf("a bound smaller than a line: %v, %d lines, want 1", err, len(p.Lines))
	}
	// A partial last line (the CLI writing it) is left out.
	appendFile(t, path, `{"type":"assistant","mess`)
	if p, err = r.Before(path, -1, 5, DefaultMaxBytes); err != nil {
		t.Fatal(err)
	}
	checkLines(t, p, content, 996)
	if p.Size != int64(len(content))+25 {
		t.Errorf("size %d", p.Size)
	}
	// An offset that is not a line boundary, or past the end: the file
	// is not what the client read.
	for _, before := range []int64{1, p.Start + 7, p.Size + 100} {
		if _, err := r.Before(path, before, 5, DefaultMaxBytes); !errors.Is(err, ErrChanged) {
			t.Errorf("before=%d: %v, want ErrChanged", before, err)
		}
	}
	if p, err := r.Before(path, 0, 5, DefaultMaxBytes); err != nil || len(p.Lines) != 0 || p.HasMoreBefore {
		t.Errorf("before=0: %v %+v", err, p)
	}
}

func TestBeforeReadsBoundedBytes(t *testing.T) {
	// 20 MB of 2 KB lines: opening reads the last page's bytes and a chunk,
	// whatever the file's size. Numbering the lines counts the newlines of
	// the rest once; the next opens and pages count only what they read.
	path, content := synthetic(t, t.TempDir(), 10_000, 2000)
	var r Reader
	p, err := r.Before(path, -1, 100, DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	checkLines(t, p, content, 9901)
	bound := int64(100*2000 + 2*chunk)
	if n := r.BytesRead.Load(); n > bound {
		t.Errorf("first open read %d bytes of records, want at most %d", n, bound)
	}
	if n := r.BytesCounted.Load(); n > int64(len(content)) {
		t.Errorf("first open counted %d bytes, more than the file", n)
	}
	t.Logf("first open: %d bytes read, %d counted (file %d)", r.BytesRead.Load(), r.BytesCounted.Load(), len(content))
	read, counted := r.BytesRead.Load(), r.BytesCounted.Load()
	if p, err = r.Before(path, -1, 100, DefaultMaxBytes); err != nil {
		t.Fatal(err)
	}
	checkLines(t, p, content, 9901)
	if n := r.BytesRead.Load() - read; n > bound {
		t.Errorf("second open read %d bytes, want at most %d", n, bound)
	}
	if n := r.BytesCounted.Load() - counted; n != 0 {
		t.Errorf("second open counted %d bytes, want 0", n)
	}
	read, counted = r.BytesRead.Load(), r.BytesCounted.Load()
	if p, err = r.Before(path, p.Start, 100, DefaultMaxBytes); err != nil {
		t.Fatal(err)
	}
	checkLines(t, p, content, 9801)
	if n := (r.BytesRead.Load() - read) + (r.BytesCounted.Load() - counted); n > bound {
		t.Errorf("the previous page read and counted %d bytes, want at most %d", n, bound)
	}
	read, counted = r.BytesRead.Load(), r.BytesCounted.Load()
	f, err := r.After(context.Background(), path, int64(len(content)), 100, DefaultMaxBytes, 0)
	if err != nil || len(f.Lines) != 0 {
		t.Fatalf("follow at the end: %v %+v", err, f)
	}
	if n := (r.BytesRead.Load() - read) + (r.BytesCounted.Load() - counted); n > chunk {
		t.Errorf("a follow at the end read %d bytes", n)
	}
}

func TestAfterFollowsAppendedLines(t *testing.T) {
	path, content := synthetic(t, t.TempDir(), 10, 100)
	var r Reader
	end := int64(len(content))
	ctx := context.Background()
	p, err := r.After(ctx, path, 0, 4, DefaultMaxBytes, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkLines(t, p, content, 1)
	if p, err = r.After(ctx, path, p.End, 100, DefaultMaxBytes, 0); err != nil {
		t.Fatal(err)
	}
	checkLines(t, p, content, 5)
	if p.End != end {
		t.Fatalf("end %d, want %d", p.End, end)
	}

	// A partial line is not returned, even after waiting.
	appendFile(t, path, `{"type":"assistant","message":{"content":"par`)
	start := time.Now()
	p, err = r.After(ctx, path, end, 100, DefaultMaxBytes, 300*time.Millisecond)
	if err != nil || len(p.Lines) != 0 || p.End != end {
		t.Fatalf("partial line: %v %+v", err, p)
	}
	if time.Since(start) < 300*time.Millisecond {
		t.Errorf("returned after %v, before its wait", time.Since(start))
	}
	// Completed while a follow waits: the wait returns it.
	done := make(chan Page, 1)
	errs := make(chan error, 1)
	go func() {
		p, err := r.After(ctx, path, end, 100, DefaultMaxBytes, 20*time.Second)
		errs <- err
		done <- p
	}()
	appendFile(t, path, `tial"}}`+"\n")
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	p = <-done
	if len(p.Lines) != 1 || p.Lines[0].Number != 11 || string(p.Lines[0].Text) != `{"type":"assistant","message":{"content":"partial"}}` {
		t.Fatalf("after completing the line: %+v", p)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the wait took %v", time.Since(start))
	}

	// Truncated: the offset is past the end.
	if err := os.Truncate(path, 50); err != nil {
		t.Fatal(err)
	}
	if _, err := r.After(ctx, path, p.End, 100, DefaultMaxBytes, 0); !errors.Is(err, ErrChanged) {
		t.Errorf("after a truncation: %v, want ErrChanged", err)
	}
	// An offset that is no boundary.
	if _, err := r.After(ctx, path, 3, 100, DefaultMaxBytes, 0); !errors.Is(err, ErrChanged) {
		t.Errorf("after=3: %v, want ErrChanged", err)
	}
}

func TestAfterNoticesAReplacementWhileWaiting(t *testing.T) {
	dir := t.TempDir()
	path, content := synthetic(t, dir, 3, 100)
	var r Reader
	errs := make(chan error, 1)
	go func() {
		_, err := r.After(context.Background(), path, int64(len(content)), 100, DefaultMaxBytes, 20*time.Second)
		errs <- err
	}()
	// The CLI's file replaced by a shorter one (rename over it).
	tmp := filepath.Join(dir, "new")
	if err := os.WriteFile(tmp, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, ErrChanged) {
			t.Errorf("got %v, want ErrChanged", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not notice the replacement")
	}
}

func TestLineNumbersAcrossAppendsAndReopens(t *testing.T) {
	path, content := synthetic(t, t.TempDir(), 50, 100)
	var r Reader
	p, err := r.Before(path, -1, 10, DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	checkLines(t, p, content, 41)
	line := `{"type":"user","message":{"content":"more"}}` + "\n"
	appendFile(t, path, line+line)
	content = append(content, line+line...)
	f, err := r.After(context.Background(), path, p.End, 100, DefaultMaxBytes, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkLines(t, f, content, 51)
	// A fresh reader numbers the same.
	var r2 Reader
	p2, err := r2.Before(path, f.Start, 5, DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	checkLines(t, p2, content, 46)
}
