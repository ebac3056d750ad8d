package beneath

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func mustRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/b", "outside"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../outside", filepath.Join(root, "a", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(root, "rootlink")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestOpenDirRefusesEveryLink(t *testing.T) {
	root := mustRoot(t)
	for _, tc := range []struct{ root, rel string }{
		{root, "a/link"},
		{root, "a/link/x"},
		{root, "rootlink/b"},
		{filepath.Join(root, "rootlink"), "b"}, // a link in the root's own path
		{filepath.Join(root, "a", "link"), ""},
	} {
		for _, create := range []bool{false, true} {
			d, err := OpenDir(tc.root, tc.rel, create, 0o755)
			if !errors.Is(err, ErrSymlink) {
				t.Errorf("OpenDir(%s, %q, %v) = %v, %v; want ErrSymlink", tc.root, tc.rel, create, d, err)
			}
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "outside")); len(entries) != 0 {
		t.Errorf("something was made outside: %v", entries)
	}
	for _, rel := range []string{"..", "a/../..", "a//b", "./a"} {
		if _, err := OpenDir(root, rel, true, 0o755); err == nil {
			t.Errorf("OpenDir(%q) accepted", rel)
		}
	}
}

func TestDirWritesWhereItWasOpened(t *testing.T) {
	root := mustRoot(t)
	if _, err := OpenDir(root, "a/new/deeper", false, 0o755); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing directory without create: %v", err)
	}
	d, err := OpenDir(root, "a/new/deeper", true, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f, tmp, err := d.CreateTemp(".x-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("content"); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	// The directory moves away after it was opened: the write follows it
	// (it lands in the directory that was opened), never a link put in its place.
	if err := os.Rename(filepath.Join(root, "a", "new"), filepath.Join(root, "a", "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside", filepath.Join(root, "a", "new")); err != nil {
		t.Fatal(err)
	}
	if err := d.Rename(tmp, "file.txt"); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(root, "a", "moved", "deeper", "file.txt")); err != nil || string(data) != "content" {
		t.Errorf("file.txt in the opened directory: %q, %v", data, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "outside")); len(entries) != 0 {
		t.Errorf("written outside: %v", entries)
	}
	fi, err := d.Lstat("file.txt")
	if err != nil || fi.Size() != 7 || !fi.Mode().IsRegular() {
		t.Fatalf("Lstat: %v, %v", fi, err)
	}
	r, err := d.OpenRead("file.txt")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(r)
	_ = r.Close()
	if string(data) != "content" {
		t.Errorf("read %q", data)
	}
	if err := d.Symlink("file.txt", "l"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.OpenRead("l"); err == nil {
		t.Error("OpenRead followed a link")
	}
	if fi, err := d.Lstat("l"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("Lstat of a link: %v, %v", fi, err)
	}
	for _, name := range []string{"l", "file.txt"} {
		if err := d.Remove(name); err != nil {
			t.Error(err)
		}
	}
	if _, err := d.Lstat("../x"); err == nil {
		t.Error("a name with a slash accepted")
	}
}
