package tasks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadAfterSwap: a task file (or its tasks directory) replaced, after
// Find checked it, by a symlink leading out of the root, or by a FIFO, is
// never read through: Read refuses it at once.
func TestReadAfterSwap(t *testing.T) {
	for _, tt := range []struct {
		name string
		swap func(t *testing.T, root, taskPath, secret string)
		want error
	}{
		{"file becomes a symlink", func(t *testing.T, _, taskPath, secret string) {
			mustReplace(t, taskPath, func(p string) error { return os.Symlink(secret, p) })
		}, ErrOutside},
		{"directory becomes a symlink", func(t *testing.T, _, taskPath, secret string) {
			mustReplace(t, filepath.Dir(taskPath), func(p string) error { return os.Symlink(filepath.Dir(secret), p) })
		}, ErrOutside},
		{"file becomes a fifo", func(t *testing.T, _, taskPath, _ string) {
			mustReplace(t, taskPath, func(p string) error { return syscall.Mkfifo(p, 0o600) })
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root, elsewhere := t.TempDir(), t.TempDir()
			secret := filepath.Join(elsewhere, "swap1.output")
			mustWrite(t, secret, "do not read", time.Time{})
			taskPath := filepath.Join(root, "-p", "tasks", "swap1.output")
			mustWrite(t, taskPath, "fine", time.Time{})
			f := &Finder{Roots: []string{root}}
			task, err := f.Find("swap1")
			if err != nil {
				t.Fatal(err)
			}
			tt.swap(t, root, taskPath, secret)
			done := make(chan struct{})
			var chunk Chunk
			go func() {
				defer close(done)
				chunk, err = Read(task, 0, 1024)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Read blocks on the swapped file")
			}
			if err == nil || strings.Contains(chunk.Content, "do not read") {
				t.Fatalf("Read after the swap: %q, %v; want an error", chunk.Content, err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Read after the swap: %v, want %v", err, tt.want)
			}
			if p, _, err := preview(task); err == nil || strings.Contains(p, "do not read") {
				t.Errorf("preview after the swap: %q, %v", p, err)
			}
		})
	}
}

// mustReplace removes path and creates something else there.
func mustReplace(t *testing.T, path string, create func(string) error) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := create(path); err != nil {
		t.Fatal(err)
	}
}
