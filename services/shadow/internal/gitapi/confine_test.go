package gitapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/shadow/internal/gitapi"
	"github.com/svc-code/svc-code/services/shadow/internal/roots"
)

// newConfinedApp serves the routes with the allowed roots allowed, vetted
// the way app wires them (roots.Resolver, forbidden outside).
func newConfinedApp(t *testing.T, allowed ...string) *fiber.App {
	t.Helper()
	app := svchttp.New(svchttp.Config{
		Service: "shadow", Secret: internalauth.FromString(testSecret), BodyLimit: 1 << 20,
		Log: slog.New(slog.DiscardHandler),
	})
	res := roots.New(0, roots.Static(allowed...))
	allow := func(ctx context.Context, cwd string) error {
		_, err := res.Resolve(ctx, cwd)
		switch {
		case errors.Is(err, roots.ErrForbidden):
			return protocol.Errorf(protocol.CodeForbidden, "%s is outside the allowed roots", cwd)
		case errors.Is(err, roots.ErrInvalid):
			return protocol.Errorf(protocol.CodeBadRequest, "bad cwd: %s", cwd)
		}
		return err
	}
	gitapi.Register(app, gitapi.Deps{Allow: allow})
	return app
}

// realTemp is a fresh temporary directory, symbolic links resolved.
func realTemp(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// secretRepo makes a repository at dir whose every trace (a tracked
// file, its history, a modified and an untracked file) holds "SECRET".
func secretRepo(t *testing.T, dir string) {
	t.Helper()
	sh(t, dir, `git init -q -b main . && echo SECRET-one > secret.txt && git add secret.txt &&
		git commit -qm SECRET-commit && echo SECRET-two >> secret.txt && echo SECRET > SECRET-untracked.txt`)
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func headOf(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// wantRefused checks that every route answers for cwd as for a directory
// outside any repository (404 not_found) and shows nothing of the
// repository outside the roots.
func wantRefused(t *testing.T, app *fiber.App, cwd string, extra url.Values) {
	t.Helper()
	for _, route := range []string{"status", "diff", "log", "show"} {
		q := url.Values{"cwd": {cwd}}
		for k, v := range extra {
			q[k] = v
		}
		code, body := get(t, app, "/api/git/"+route, q)
		var eb protocol.ErrorBody
		_ = json.Unmarshal(body, &eb)
		if code != 404 || eb.Error != "not_found" || strings.Contains(string(body), "SECRET") {
			t.Errorf("%s: %d %s, want 404 not_found", route, code, body)
		}
	}
}

// TestOuterRepositoryRefused: an allowed directory inside a repository
// whose top level is above every allowed root is not a repository to the
// routes; git's discovery must not walk out of the roots.
func TestOuterRepositoryRefused(t *testing.T) {
	outer := realTemp(t)
	secretRepo(t, outer)
	sub := filepath.Join(outer, "proj", "sub")
	mkdir(t, sub)
	if err := os.WriteFile(filepath.Join(sub, "mine.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	app := newConfinedApp(t, sub)
	wantRefused(t, app, sub, nil)
	// A deeper cwd, and a revision of the outer repository named outright.
	deeper := filepath.Join(sub, "deeper")
	mkdir(t, deeper)
	wantRefused(t, app, deeper, url.Values{"rev": {headOf(t, outer)}})

	// With the outer repository's top level allowed too, it is served.
	app = newConfinedApp(t, sub, outer)
	code, body := get(t, app, "/api/git/status", url.Values{"cwd": {sub}})
	var st gitapi.Status
	_ = json.Unmarshal(body, &st)
	if code != 200 || st.Root != outer {
		t.Errorf("status with the top level allowed: %d %s", code, body)
	}
}

// TestSymlinkedProjectInOuterRepository: the allowed root is a symbolic
// link to a directory inside a repository outside the roots; the check
// follows the link as roots does.
func TestSymlinkedProjectInOuterRepository(t *testing.T) {
	outer := realTemp(t)
	secretRepo(t, outer)
	sub := filepath.Join(outer, "sub")
	mkdir(t, sub)
	link := filepath.Join(realTemp(t), "proj")
	if err := os.Symlink(sub, link); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, newConfinedApp(t, link), link, nil)
}

// TestSymlinkedProjectServed: a project reached through a symbolic link,
// its repository inside the roots, is served, cwd below the top level too.
func TestSymlinkedProjectServed(t *testing.T) {
	dir, _ := repo(t)
	mkdir(t, filepath.Join(dir, "src"))
	link := filepath.Join(realTemp(t), "proj")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	app := newConfinedApp(t, link)
	for _, cwd := range []string{link, filepath.Join(link, "src"), dir} {
		code, body := get(t, app, "/api/git/status", url.Values{"cwd": {cwd}})
		var st gitapi.Status
		_ = json.Unmarshal(body, &st)
		if code != 200 || st.Root != dir || len(st.Files) != 3 {
			t.Errorf("status at %s: %d %s", cwd, code, body)
		}
		for _, route := range []string{"diff", "log", "show"} {
			if code, body := get(t, app, "/api/git/"+route, url.Values{"cwd": {cwd}}); code != 200 {
				t.Errorf("%s at %s: %d %s", route, cwd, code, body)
			}
		}
	}
	code, body := get(t, app, "/api/git/show", url.Values{"cwd": {link}, "rev": {"HEAD~1"}, "path": {filepath.Join(link, "a.txt")}})
	if code != 200 || !strings.Contains(string(body), `"content":"one\n"`) {
		t.Errorf("show a file through the link: %d %s", code, body)
	}
}

// TestGitFilePointingOutside: a .git file (a gitdir pointer, as worktrees
// and submodules have) or a .git symbolic link inside the roots that leads
// to a repository outside them is refused.
func TestGitFilePointingOutside(t *testing.T) {
	outside := realTemp(t)
	secretRepo(t, outside)
	tests := map[string]func(t *testing.T, proj string){
		"gitdir file": func(t *testing.T, proj string) {
			if err := os.WriteFile(filepath.Join(proj, ".git"), []byte("gitdir: "+filepath.Join(outside, ".git")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"worktree": func(t *testing.T, proj string) {
			if err := os.Remove(proj); err != nil {
				t.Fatal(err)
			}
			sh(t, outside, `git worktree add -q `+proj)
			if err := os.WriteFile(filepath.Join(proj, "secret.txt"), []byte("SECRET-changed\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"symlink": func(t *testing.T, proj string) {
			if err := os.Symlink(filepath.Join(outside, ".git"), filepath.Join(proj, ".git")); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, setup := range tests {
		t.Run(name, func(t *testing.T) {
			proj := filepath.Join(realTemp(t), "proj")
			mkdir(t, proj)
			setup(t, proj)
			wantRefused(t, newConfinedApp(t, proj), proj, url.Values{"rev": {headOf(t, outside)}})
		})
	}
}

// TestWorkTreeConfiguredOutside: a repository inside the roots whose
// core.worktree names a directory outside them is refused.
func TestWorkTreeConfiguredOutside(t *testing.T) {
	outer := realTemp(t)
	if err := os.WriteFile(filepath.Join(outer, "SECRET.txt"), []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(outer, "proj")
	mkdir(t, proj)
	sh(t, proj, `git init -q -b main . && git config core.worktree `+outer)
	wantRefused(t, newConfinedApp(t, proj), proj, nil)
}

// TestAlternatesOutside: a repository inside the roots that borrows the
// objects of one outside them (objects/info/alternates) is refused: any
// object of the other repository could be shown by its name.
func TestAlternatesOutside(t *testing.T) {
	outside := realTemp(t)
	secretRepo(t, outside)
	proj := realTemp(t)
	sh(t, proj, `git init -q -b main . && echo one > a.txt && git add a.txt && git commit -qm first &&
		echo `+filepath.Join(outside, ".git", "objects")+` > .git/objects/info/alternates`)
	wantRefused(t, newConfinedApp(t, proj), proj, url.Values{"rev": {headOf(t, outside)}})

	// Alternates inside the roots are fine.
	app := newConfinedApp(t, proj, outside)
	code, body := get(t, app, "/api/git/show", url.Values{"cwd": {proj}, "rev": {headOf(t, outside)}})
	if code != 200 || !strings.Contains(string(body), "SECRET-commit") {
		t.Errorf("show through alternates inside the roots: %d %s", code, body)
	}
}

// TestWorktreeInsideRootsServed: a linked worktree whose main repository
// is inside the roots too is served.
func TestWorktreeInsideRootsServed(t *testing.T) {
	main, _ := repo(t)
	wt := filepath.Join(realTemp(t), "wt")
	sh(t, main, `git worktree add -q `+wt+` HEAD~1`)
	app := newConfinedApp(t, main, wt)
	code, body := get(t, app, "/api/git/log", url.Values{"cwd": {wt}})
	if code != 200 || !strings.Contains(string(body), `"subject":"first"`) || strings.Contains(string(body), `"subject":"second"`) {
		t.Errorf("log in the worktree: %d %s", code, body)
	}
	code, body = get(t, app, "/api/git/status", url.Values{"cwd": {wt}})
	var st gitapi.Status
	_ = json.Unmarshal(body, &st)
	if code != 200 || st.Root != wt {
		t.Errorf("status in the worktree: %d %s", code, body)
	}
}

// TestForeignOuterRepositoryNotRevealed: an outer repository owned by
// another user is not even looked at, so the answer is the 404 of a
// directory outside any repository, not git's ownership refusal (403),
// which would tell that it exists. Needs root, to give it away.
func TestForeignOuterRepositoryNotRevealed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown a repository to another user")
	}
	outer := realTemp(t)
	secretRepo(t, outer)
	sub := filepath.Join(outer, "sub")
	mkdir(t, sub)
	sh(t, outer, `chown -R 65534:65534 `+outer+` && chown 0:0 `+sub)
	t.Cleanup(func() { _ = exec.Command("chown", "-R", "0:0", outer).Run() })
	wantRefused(t, newConfinedApp(t, sub), sub, nil)
}
