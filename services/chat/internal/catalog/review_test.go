package catalog

import (
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSpecialFilesDoNotHang: a FIFO where a project keeps its settings or
// a command (a repository or a process may put one there) is skipped, not
// waited on: the lists answer at once.
func TestSpecialFilesDoNotHang(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{
		filepath.Join(f.project, ".claude", "settings.json"),
		filepath.Join(f.project, ".claude", "commands", "fifo.md"),
		filepath.Join(f.project, ".claude", "agents", "fifo.md"),
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{"/api/commands?cwd=", "/api/agents?cwd=", "/api/plugins?cwd="} {
		done := make(chan answer, 1)
		go func() { done <- f.get(t, path+f.project) }()
		select {
		case got := <-done:
			got.want(t, http.StatusOK, "")
		case <-time.After(5 * time.Second):
			t.Fatalf("GET %s blocks on a FIFO", path)
		}
	}
	// The user's settings still enable the plugin.
	if got := entries(t, f.get(t, "/api/commands?cwd="+f.project), "commands"); got["tools:lint/plugin"] == nil {
		t.Errorf("plugin command missing: %v", keys(got))
	}
}

// TestEditsDoNotFollowSymlinksOut: a subdirectory of a commands directory
// (or a project's .claude) that is a symlink to elsewhere does not let a
// create, an update or a delete reach a file there: 403, and nothing
// outside changes.
func TestEditsDoNotFollowSymlinksOut(t *testing.T) {
	f := newFixture(t)
	elsewhere := t.TempDir()
	victim := filepath.Join(elsewhere, "notes.md")
	write(t, victim, "keep me\n")
	mustSymlink(t, elsewhere, filepath.Join(f.project, ".claude", "commands", "docs"))
	mustSymlink(t, elsewhere, filepath.Join(f.claude, "commands", "team"))
	other := filepath.Join(f.home, "work", "other")
	write(t, filepath.Join(elsewhere, "claude", "commands", "notes.md"), "keep me too\n")
	mustSymlink(t, filepath.Join(elsewhere, "claude"), filepath.Join(other, ".claude"))
	before := tree(t, elsewhere)

	const js = "application/json"
	for _, tt := range []struct {
		name, method, path, body string
	}{
		{"create via project subdir", http.MethodPost, "/api/commands", `{"scope":"project","cwd":` + quote(f.project) + `,"name":"docs:new","content":"x"}`},
		{"update via project subdir", http.MethodPut, "/api/commands/docs:notes", `{"scope":"project","cwd":` + quote(f.project) + `,"content":"pwned"}`},
		{"delete via project subdir", http.MethodDelete, "/api/commands/docs:notes?scope=project&cwd=" + f.project, ``},
		{"create via personal subdir", http.MethodPost, "/api/commands", `{"scope":"personal","name":"team:new","content":"x"}`},
		{"update via personal subdir", http.MethodPut, "/api/commands/team:notes", `{"scope":"personal","content":"pwned"}`},
		{"delete via personal subdir", http.MethodDelete, "/api/commands/team:notes?scope=personal", ``},
		{"create via project .claude", http.MethodPost, "/api/commands", `{"scope":"project","cwd":` + quote(other) + `,"name":"new","content":"x"}`},
		{"update via project .claude", http.MethodPut, "/api/commands/notes", `{"scope":"project","cwd":` + quote(other) + `,"content":"pwned"}`},
		{"delete via project .claude", http.MethodDelete, "/api/commands/notes?scope=project&cwd=" + other, ``},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctype := ""
			if tt.body != "" {
				ctype = js
			}
			f.do(t, tt.method, tt.path, ctype, tt.body).want(t, http.StatusForbidden, "forbidden")
		})
	}
	if after := tree(t, elsewhere); after != before {
		t.Errorf("edits reached outside:\nbefore %s\nafter  %s", before, after)
	}
	// Commands in a symlinked personal commands directory (dotfiles) can
	// still be edited: the directory itself may be a link.
	dotfiles := t.TempDir()
	if err := os.RemoveAll(filepath.Join(f.claude, "commands")); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, dotfiles, filepath.Join(f.claude, "commands"))
	f.do(t, http.MethodPost, "/api/commands", js, `{"scope":"personal","name":"dot:new","content":"x\n"}`).want(t, http.StatusCreated, "")
	if b, err := os.ReadFile(filepath.Join(dotfiles, "dot", "new.md")); err != nil || string(b) != "x\n" {
		t.Errorf("create in the linked directory: %q %v", b, err)
	}
	f.do(t, http.MethodPut, "/api/commands/dot:new", js, `{"scope":"personal","content":"y\n"}`).want(t, http.StatusOK, "")
	f.do(t, http.MethodDelete, "/api/commands/dot:new?scope=personal", "", "").want(t, http.StatusOK, "")
	if _, err := os.Stat(filepath.Join(dotfiles, "dot", "new.md")); !os.IsNotExist(err) {
		t.Errorf("after delete: %v", err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
