package gitapi_test

import (
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/secretpaths"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/shadow/internal/gitapi"
	"github.com/svc-code/svc-code/services/shadow/internal/roots"
)

// TestPrivateFilesOfADotfilesRepository: the home directory is a git
// repository that tracks svc-code's config file (dotfiles). Diffs and
// patches leave it out and its content at a revision is refused; the
// other files are served as before.
func TestPrivateFilesOfADotfilesRepository(t *testing.T) {
	home, _ := repo(t)
	sh(t, home, `mkdir -p .config/svc-code && echo 'cookie_secret: SECRET-1' > .config/svc-code/config.yaml &&
		git add .config && git commit -qm dotfiles &&
		echo 'cookie_secret: SECRET-2' > .config/svc-code/config.yaml`)
	set := secretpaths.For(func(k string) string { return map[string]string{"HOME": home}[k] }, nil)
	app := svchttp.New(svchttp.Config{
		Service: "shadow", Secret: internalauth.FromString(testSecret), BodyLimit: 1 << 20,
		Log: slog.New(slog.DiscardHandler),
	})
	gitapi.Register(app, gitapi.Deps{Private: func() *roots.Denied { return roots.NewDenied(set) }})

	for _, q := range []url.Values{
		{"cwd": {home}},
		{"cwd": {home}, "from": {"HEAD~1"}},
		{"cwd": {home}, "from": {"HEAD~1"}, "to": {"HEAD"}},
		{"cwd": {home}, "path": {".config"}},
	} {
		code, body := get(t, app, "/api/git/diff", q)
		if code != 200 || strings.Contains(string(body), "SECRET") || strings.Contains(string(body), "config.yaml") {
			t.Errorf("diff %v: %d %s", q, code, body)
		}
	}
	code, body := get(t, app, "/api/git/diff", url.Values{"cwd": {home}})
	if !strings.Contains(string(body), "three") {
		t.Errorf("diff lost the other files: %d %s", code, body)
	}
	code, body = get(t, app, "/api/git/show", url.Values{"cwd": {home}})
	if code != 200 || strings.Contains(string(body), "SECRET") || !strings.Contains(string(body), `"subject":"dotfiles"`) {
		t.Errorf("show: %d %s", code, body)
	}
	code, body = get(t, app, "/api/git/show", url.Values{"cwd": {home}, "path": {".config/svc-code/config.yaml"}})
	if code != 403 || strings.Contains(string(body), "SECRET") {
		t.Errorf("show of the config file: %d %s", code, body)
	}
	code, body = get(t, app, "/api/git/show", url.Values{"cwd": {home}, "rev": {"HEAD~1"}, "path": {"a.txt"}})
	if code != 200 || !strings.Contains(string(body), "two") {
		t.Errorf("show of a.txt: %d %s", code, body)
	}
}
