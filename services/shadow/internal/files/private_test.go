package files_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serverSecret is in every file svc-code keeps secret: no answer may ever
// hold it.
const serverSecret = "cookie_secret: SERVER-SECRET-4f1d"

// secrets lays out svc-code's secret files under e.home, as a real
// installation has them, with the usual ways of naming them otherwise:
//
//	~/.config -> dotfiles/config   the config directory behind a symlinked parent
//	~/cfg -> .config/svc-code      a link to the config directory
//	~/key -> .svc-code/internal.key
//	~/hard.key                     a hard link of internal.key
//
// It answers the paths of the secret files.
func (e *env) secrets(t *testing.T) map[string]string {
	t.Helper()
	h := e.home
	files := map[string]string{
		"config":   h + "/dotfiles/config/svc-code/config.yaml",
		"xdg":      h + "/xdg/svc-code/config.yaml",
		"key":      h + "/.svc-code/internal.key",
		"postgres": h + "/.svc-code/postgres.env",
		"log":      h + "/.svc-code/logs/gateway.log",
		"page":     h + "/.svc-code/logs/page.html",
		"journal":  h + "/.svc-code/projects/0123456789abcdef/shadow-git/config",
		"redis":    h + "/run/redis.pass",
	}
	content := map[string]string{}
	for _, p := range files {
		content[p] = serverSecret + "\n"
	}
	content[h+"/.svc-code/uploads/s1/notes.txt"] = "an upload, the user's own\n"
	content[h+"/public.txt"] = "a public note, not " + strings.Fields(serverSecret)[1] + "\n"
	writeFiles(t, content)
	for link, target := range map[string]string{
		h + "/.config": "dotfiles/config",
		h + "/cfg":     ".config/svc-code",
		h + "/key":     ".svc-code/internal.key",
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(files["key"], h+"/hard.key"); err != nil {
		t.Fatal(err)
	}
	return files
}

// spellings are names of secret files, each spelled another way.
func spellings(h string) []string {
	return []string{
		"~/.config/svc-code/config.yaml",
		h + "/.config/svc-code/config.yaml",
		h + "//.config//svc-code/./config.yaml",
		h + "/dir/../.config/svc-code/config.yaml",
		h + "/dotfiles/config/svc-code/config.yaml",
		h + "/cfg/config.yaml",
		h + "/xdg/svc-code/config.yaml",
		"~/.svc-code/internal.key",
		h + "/key",
		h + "/hard.key",
		h + "/.svc-code/postgres.env",
		h + "/.svc-code/logs/gateway.log",
		h + "/.svc-code/projects/0123456789abcdef/shadow-git/config",
		h + "/.svc-code/uploads/../internal.key",
		h + "/run/redis.pass",
	}
}

func wantRefused(t *testing.T, what string, a answer) {
	t.Helper()
	if a.status != http.StatusForbidden {
		t.Errorf("%s: status %d, want 403: %.200s", what, a.status, a.body)
		return
	}
	if got := a.errorBody(t).Error; got != "forbidden" {
		t.Errorf("%s: error %q, want forbidden", what, got)
	}
	if strings.Contains(string(a.body), "SERVER-SECRET") {
		t.Errorf("%s: the answer holds the secret: %s", what, a.body)
	}
}

func TestSecretFilesRefusedHoweverSpelled(t *testing.T) {
	e := mustEnv(t, nil)
	e.secrets(t)
	for _, p := range spellings(e.home) {
		for _, target := range []string{"/api/file?path=", "/api/file-raw?path=", "/view?path="} {
			wantRefused(t, target+p, e.get(t, target+q(p)))
		}
	}
	for _, p := range []string{
		"~/.config/svc-code", e.home + "/cfg", e.home + "/cfg/", e.home + "/.svc-code", "~/.svc-code/logs",
		e.home + "/dotfiles/config/svc-code", e.home + "/xdg/svc-code",
	} {
		wantRefused(t, "list "+p, e.get(t, "/api/files?path="+q(p)))
		wantRefused(t, "view "+p, e.get(t, "/view?path="+q(p)))
		wantRefused(t, "search "+p, e.get(t, "/api/search?q=SECRET&path="+q(p)))
	}
	wantRefused(t, "render", e.get(t, "/api/browser/render?path="+q(e.home+"/.svc-code/logs/page.html")))
}

func TestSecretFilesNeverWritten(t *testing.T) {
	e := mustEnv(t, nil)
	files := e.secrets(t)
	for _, p := range append(spellings(e.home),
		"~/.config/svc-code/new.yaml", e.home+"/cfg/new.yaml", e.home+"/.svc-code/new.key",
		e.home+"/.svc-code/projects/0123456789abcdef/shadow-git/hooks/post-commit",
	) {
		for _, expected := range []any{nil, "", "sha256:0"} {
			req := map[string]any{"path": p, "content": "overwritten\n", "create_dirs": true}
			if expected != nil {
				req["expected_version"] = expected
			}
			wantRefused(t, "write "+p, e.write(t, req))
		}
	}
	for _, p := range files {
		wantContent(t, p, serverSecret+"\n")
	}
	for _, p := range []string{e.home + "/dotfiles/config/svc-code/new.yaml", e.home + "/.svc-code/new.key"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
}

// The data home's uploads are the user's files: open to every route.
func TestUploadsStayOpen(t *testing.T) {
	e := mustEnv(t, nil)
	e.secrets(t)
	p := "~/.svc-code/uploads/s1/notes.txt"
	got := decode[struct{ Content string }](t, e.get(t, "/api/file?path="+q(p)))
	if got.Content != "an upload, the user's own\n" {
		t.Errorf("upload read %q", got.Content)
	}
	if a := e.write(t, map[string]any{"path": p, "content": "edited\n"}); a.status != http.StatusOK {
		t.Errorf("upload write: status %d: %s", a.status, a.body)
	}
}

// A search of the home directory finds the public file and none of the
// secret ones, with both engines.
func TestSearchSkipsSecretFiles(t *testing.T) {
	e := mustEnv(t, nil)
	e.secrets(t)
	engines := []string{"go"}
	if e.searcher.Rg != "" {
		engines = append(engines, "rg")
	} else {
		t.Log("ripgrep is not installed: only the Go walk is tested")
	}
	for _, engine := range engines {
		for _, dir := range []string{e.home, "~", e.home + "/run", e.home + "/.svc-code/uploads/.."} {
			a := e.get(t, "/api/search?q=SERVER-SECRET&engine="+engine+"&path="+q(dir))
			if strings.HasSuffix(dir, "/..") { // the data home itself
				wantRefused(t, engine+" search "+dir, a)
				continue
			}
			res := decode[struct {
				Matches []struct{ Path string }
			}](t, a)
			var paths []string
			for _, m := range res.Matches {
				paths = append(paths, m.Path)
			}
			want := []string(nil)
			if dir != e.home+"/run" {
				want = []string{filepath.Join(e.home, "public.txt")}
			}
			if strings.Join(paths, ",") != strings.Join(want, ",") {
				t.Errorf("%s search of %s: matches %v, want %v", engine, dir, paths, want)
			}
		}
	}
}
