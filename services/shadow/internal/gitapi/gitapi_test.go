package gitapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
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
)

const testSecret = "0123456789abcdef-gitapi-tests"

func newApp(t *testing.T) *fiber.App {
	t.Helper()
	app := svchttp.New(svchttp.Config{
		Service: "shadow", Secret: internalauth.FromString(testSecret), BodyLimit: 1 << 20,
		Log: slog.New(slog.DiscardHandler),
	})
	gitapi.Register(app, gitapi.Deps{})
	return app
}

func sh(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Ann", "GIT_AUTHOR_EMAIL=ann@example.com", "GIT_COMMITTER_NAME=Ann", "GIT_COMMITTER_EMAIL=ann@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// repo makes a repository with two commits, a modified file, a staged
// file and an untracked one; its config asks for a pager and an fsmonitor
// that would leave a marker if git ran them.
func repo(t *testing.T) (dir, marker string) {
	t.Helper()
	dir, _ = filepath.EvalSymlinks(t.TempDir())
	marker = filepath.Join(t.TempDir(), "ran")
	sh(t, dir, `git init -q -b main . &&
		echo one > a.txt && git add a.txt && git commit -qm first &&
		echo two >> a.txt && git commit -qam second &&
		echo three >> a.txt && echo new > staged.txt && git add staged.txt && echo u > untracked.txt &&
		git config core.pager "touch `+marker+`" &&
		git config core.fsmonitor "touch `+marker+`; false" &&
		git config diff.external "touch `+marker+`"`)
	return dir, marker
}

func get(t *testing.T, app *fiber.App, path string, q url.Values) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest("GET", path+"?"+q.Encode(), nil)
	req.Header.Set(protocol.HeaderInternal, testSecret)
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestRoutes(t *testing.T) {
	dir, marker := repo(t)
	app := newApp(t)

	code, body := get(t, app, "/api/git/status", url.Values{"cwd": {dir}})
	var st gitapi.Status
	_ = json.Unmarshal(body, &st)
	if code != 200 || st.Branch != "main" || st.Root != dir || len(st.Files) != 3 {
		t.Errorf("status: %d %s", code, body)
	}
	kinds := map[string]string{}
	for _, f := range st.Files {
		kinds[f.Path] = f.Index + f.Worktree + " " + f.Kind
	}
	if kinds["a.txt"] != ".M changed" || kinds["staged.txt"] != "A. changed" || kinds["untracked.txt"] != "?? untracked" {
		t.Errorf("status files: %v", kinds)
	}

	code, body = get(t, app, "/api/git/diff", url.Values{"cwd": {dir}})
	if code != 200 || !strings.Contains(string(body), `+three`) || strings.Contains(string(body), "staged.txt") {
		t.Errorf("diff: %d %s", code, body)
	}
	code, body = get(t, app, "/api/git/diff", url.Values{"cwd": {dir}, "staged": {"true"}})
	if code != 200 || !strings.Contains(string(body), "+new") {
		t.Errorf("staged diff: %d %s", code, body)
	}
	code, body = get(t, app, "/api/git/diff", url.Values{"cwd": {dir}, "from": {"HEAD~1"}, "to": {"HEAD"}, "path": {"a.txt"}})
	if code != 200 || !strings.Contains(string(body), "+two") {
		t.Errorf("diff between revisions: %d %s", code, body)
	}

	code, body = get(t, app, "/api/git/log", url.Values{"cwd": {dir}})
	var lg struct {
		Commits []gitapi.Commit `json:"commits"`
	}
	_ = json.Unmarshal(body, &lg)
	if code != 200 || len(lg.Commits) != 2 || lg.Commits[0].Subject != "second" || lg.Commits[0].AuthorName != "Ann" {
		t.Errorf("log: %d %s", code, body)
	}

	code, body = get(t, app, "/api/git/show", url.Values{"cwd": {dir}, "rev": {"HEAD~1"}})
	if code != 200 || !strings.Contains(string(body), `"subject":"first"`) || !strings.Contains(string(body), "+one") {
		t.Errorf("show: %d %s", code, body)
	}
	code, body = get(t, app, "/api/git/show", url.Values{"cwd": {dir}, "rev": {"HEAD~1"}, "path": {"a.txt"}})
	if code != 200 || !strings.Contains(string(body), `"content":"one\n"`) {
		t.Errorf("show file: %d %s", code, body)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("git ran a program from the repository's config")
	}
	// Read-only: no index.lock left, the index untouched by status.
	if _, err := os.Stat(filepath.Join(dir, ".git", "index.lock")); err == nil {
		t.Error("index.lock left behind")
	}
}

func TestBadInput(t *testing.T) {
	dir, _ := repo(t)
	plain := t.TempDir()
	app := newApp(t)
	tests := []struct {
		name, path string
		q          url.Values
		status     int
		code       string
	}{
		{"no cwd", "/api/git/status", url.Values{}, 400, "bad_request"},
		{"missing dir", "/api/git/status", url.Values{"cwd": {dir + "/nope"}}, 404, "not_found"},
		{"not a repository", "/api/git/status", url.Values{"cwd": {plain}}, 404, "not_found"},
		{"option as revision", "/api/git/log", url.Values{"cwd": {dir}, "rev": {"--output=/tmp/x"}}, 400, "bad_request"},
		{"unknown revision", "/api/git/log", url.Values{"cwd": {dir}, "rev": {"nope"}}, 404, "not_found"},
		{"bad revision chars", "/api/git/show", url.Values{"cwd": {dir}, "rev": {"HEAD;rm"}}, 400, "bad_request"},
		{"path outside", "/api/git/log", url.Values{"cwd": {dir}, "path": {"../../etc/passwd"}}, 403, "forbidden"},
		{"file not at revision", "/api/git/show", url.Values{"cwd": {dir}, "path": {"untracked.txt"}}, 404, "not_found"},
		{"to without from", "/api/git/diff", url.Values{"cwd": {dir}, "to": {"HEAD"}}, 400, "bad_request"},
		{"bad limit", "/api/git/log", url.Values{"cwd": {dir}, "limit": {"x"}}, 400, "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, app, tt.path, tt.q)
			var eb protocol.ErrorBody
			_ = json.Unmarshal(body, &eb)
			if code != tt.status || eb.Error != tt.code {
				t.Errorf("%d %s, want %d %s", code, body, tt.status, tt.code)
			}
		})
	}
}

// TestRepoFiltersNeverRun: a hostile repository whose config names a
// clean/smudge/process filter, applied to every file by .gitattributes,
// must not get it run by status or diff (they hash work-tree files, which
// runs the clean filter), in the repository or in a submodule.
func TestRepoFiltersNeverRun(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	marker := filepath.Join(t.TempDir(), "ran")
	sh(t, dir, `git init -q -b main . &&
		echo '* filter=evil' > .gitattributes &&
		echo one > a.txt && echo y > b.txt && git add . && git commit -qm first &&
		git config filter.evil.clean "touch `+marker+`; cat" &&
		git config filter.evil.smudge "touch `+marker+`; cat" &&
		git config filter.evil.required true &&
		git config filter.odd=name.process "touch `+marker+`" &&
		echo two >> a.txt && echo z > b.txt`)
	app := newApp(t)
	code, body := get(t, app, "/api/git/status", url.Values{"cwd": {dir}})
	if code != 200 || !strings.Contains(string(body), `"path":"b.txt"`) {
		t.Errorf("status: %d %s", code, body)
	}
	code, body = get(t, app, "/api/git/diff", url.Values{"cwd": {dir}})
	if code != 200 || !strings.Contains(string(body), "+two") {
		t.Errorf("diff: %d %s", code, body)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("git ran a filter from the repository's config")
	}
}

// TestSubmoduleFiltersNeverRun: status and diff look into a submodule's
// work tree with the submodule's own configuration; its filters must not
// run either.
func TestSubmoduleFiltersNeverRun(t *testing.T) {
	src, _ := filepath.EvalSymlinks(t.TempDir())
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	marker := filepath.Join(t.TempDir(), "ran")
	sh(t, src, `git init -q -b main . && echo '* filter=evil' > .gitattributes && echo y > f.txt &&
		git add . && git commit -qm sub`)
	sh(t, dir, `git init -q -b main . && echo one > a.txt && git add a.txt && git commit -qm first &&
		git -c protocol.file.allow=always submodule -q add `+src+` sub && git commit -qm sub &&
		git -C sub config filter.evil.clean "touch `+marker+`; cat" && echo z > sub/f.txt`)
	app := newApp(t)
	if code, body := get(t, app, "/api/git/status", url.Values{"cwd": {dir}}); code != 200 {
		t.Errorf("status: %d %s", code, body)
	}
	if code, body := get(t, app, "/api/git/diff", url.Values{"cwd": {dir}}); code != 200 {
		t.Errorf("diff: %d %s", code, body)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("git ran a filter from a submodule's config")
	}
}
