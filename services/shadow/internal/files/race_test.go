package files_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/services/shadow/internal/files"
)

// TestWriteRefusesParentSwappedAfterCheck: between the check of the path
// and the write, the parent directory is replaced by a symbolic link to a
// directory outside the allowed roots, or to svc-code's config directory
// (inside them, but private). The write is refused and nothing is written
// through the link.
func TestWriteRefusesParentSwappedAfterCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target func(e *env) string
	}{
		{"outside the roots", func(e *env) string { return e.outside }},
		{"to the config dir", func(e *env) string { return filepath.Join(e.home, ".config", "svc-code") }},
	} {
		for _, file := range []string{"new.txt", "b.go", "deeper/new.txt"} {
			t.Run(tc.name+"/"+file, func(t *testing.T) {
				e := mustEnv(t, nil)
				target := tc.target(e)
				writeFiles(t, map[string]string{
					filepath.Join(target, "b.go"):        "target's own b.go\n",
					filepath.Join(target, "config.yaml"): serverSecret + "\n",
				})
				before := listTree(t, target)
				sub := filepath.Join(e.home, "dir")
				swapped := swapParentAtCheck(t, sub, target)
				a := e.write(t, map[string]any{"path": filepath.Join(sub, file), "content": "written through the swap\n", "create_dirs": true})
				if !swapped() {
					t.Fatal("the hook did not run")
				}
				if a.status == http.StatusOK {
					t.Errorf("write through a swapped parent: 200 %s", a.body)
				}
				if after := listTree(t, target); after != before {
					t.Errorf("the directory the link leads to changed:\nbefore %s\nafter  %s", before, after)
				}
			})
		}
	}
}

// swapParentAtCheck has the next path check replace dir by a symbolic
// link to target, as a process racing the server would; the hook goes when
// the test ends. swapped tells whether the swap happened.
func swapParentAtCheck(t *testing.T, dir, target string) (swapped func() bool) {
	t.Helper()
	done := false
	t.Cleanup(files.SetHookChecked(func(string) {
		if done {
			return
		}
		done = true
		if err := os.Rename(dir, dir+".moved"); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(target, dir); err != nil {
			t.Error(err)
		}
	}))
	return func() bool { return done }
}

// listTree describes every file below dir with its content.
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p)
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString("=" + string(data))
		}
		b.WriteString(";")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReadRefusesParentSwappedAfterCheck: between the check of a path and
// the read, its parent becomes a symbolic link to svc-code's config
// directory: every reading route refuses, and no answer holds the secret.
func TestReadRefusesParentSwappedAfterCheck(t *testing.T) {
	for _, route := range []string{"/api/file?path=", "/api/file-raw?path=", "/view?path=", "/api/browser/render?path="} {
		t.Run(route, func(t *testing.T) {
			e := mustEnv(t, nil)
			cfgDir := filepath.Join(e.home, ".config", "svc-code")
			writeFiles(t, map[string]string{
				filepath.Join(cfgDir, "config.yaml"):        serverSecret + "\n",
				filepath.Join(cfgDir, "page.html"):          "<p>" + serverSecret + "</p>",
				filepath.Join(e.home, "dir", "config.yaml"): "a public file of the same name\n",
				filepath.Join(e.home, "dir", "page.html"):   "<p>a public page</p>",
			})
			sub := filepath.Join(e.home, "dir")
			swapped := swapParentAtCheck(t, sub, cfgDir)
			name := "config.yaml"
			if strings.Contains(route, "render") {
				name = "page.html"
			}
			a := e.get(t, route+q(filepath.Join(sub, name)))
			if !swapped() {
				t.Fatal("the hook did not run")
			}
			if a.status == http.StatusOK || strings.Contains(string(a.body), "SERVER-SECRET") {
				t.Errorf("read through a swapped parent: %d %s", a.status, a.body)
			}
		})
	}
}
