package helpers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var scripts = []string{"shadow-git", "shadow-query", "install.sh"}

// dir is this package's directory: the packaged helpers.
func dir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs a packaged script with env (added to a minimal environment) in
// cwd, feeding stdin.
func run(t *testing.T, env []string, cwd, stdin, script string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir(t), script), args...)
	cmd.Dir = cwd
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "LANG=C"}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", script, args, err)
	}
	return result{out.String(), errb.String(), code}
}

func TestShellcheck(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Fatal("shellcheck is needed (apt-get install shellcheck; as root, deploy/scripts/ensure-tools.sh installs it)")
	}
	for _, s := range scripts {
		out, err := exec.CommandContext(context.Background(), sc, "--shell=bash", s).CombinedOutput()
		if err != nil {
			t.Errorf("shellcheck %s: %v\n%s", s, err, out)
		}
	}
}

func TestHelpFlags(t *testing.T) {
	home := t.TempDir()
	for _, s := range scripts {
		for _, flag := range []string{"--help", "-h"} {
			r := run(t, []string{"HOME=" + home}, home, "", s, flag)
			if r.code != 0 || !strings.Contains(r.stdout, "Usage:") {
				t.Errorf("%s %s: code %d, stdout %q", s, flag, r.code, r.stdout)
			}
		}
	}
	if r := run(t, []string{"HOME=" + home}, home, "", "shadow-git", "help"); r.code != 0 || !strings.Contains(r.stdout, "Usage:") {
		t.Errorf("shadow-git help: code %d, stdout %q", r.code, r.stdout)
	}
	for _, s := range scripts {
		if r := run(t, []string{"HOME=" + home}, home, "", s, "--no-such-flag"); r.code == 0 {
			t.Errorf("%s --no-such-flag: exit 0", s)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInstallScript(t *testing.T) {
	home := t.TempDir()
	env := []string{"HOME=" + home}
	targets := DefaultTargets(home, func(string) string { return "" })
	paths := map[string]string{}
	for _, h := range Installed {
		paths[h.Name] = targets.Target(h)
	}

	// --dry-run changes nothing.
	if r := run(t, env, home, "", "install.sh", "--dry-run"); r.code != 0 {
		t.Fatalf("--dry-run: %d %s", r.code, r.stderr)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("--dry-run created %s", p)
		}
	}

	if r := run(t, env, home, "", "install.sh"); r.code != 0 {
		t.Fatalf("install: %d %s", r.code, r.stderr)
	}
	for name, p := range paths {
		if readFile(t, p) != readFile(t, name) {
			t.Errorf("%s is not the packaged %s", p, name)
		}
	}
	if st, _ := os.Stat(paths["shadow-git"]); st.Mode().Perm()&0o100 == 0 {
		t.Errorf("shadow-git installed with mode %v: not executable", st.Mode())
	}
	st, err := CheckStatus(targets)
	if err != nil || !st.AllCurrent {
		t.Fatalf("status after install.sh: %+v %v", st, err)
	}

	// A local edit survives a plain install, not --update (nor --force).
	edited := "#!/bin/sh\necho edited\n"
	if err := os.WriteFile(paths["shadow-query"], []byte(edited), 0o755); err != nil {
		t.Fatal(err)
	}
	if st, _ := CheckStatus(targets); st.AllCurrent || st.Files[1].UpToDate {
		t.Errorf("an edited copy reported up to date: %+v", st)
	}
	if r := run(t, env, home, "", "install.sh"); r.code != 0 || !strings.Contains(r.stdout, "skip") {
		t.Fatalf("second install: %d %q", r.code, r.stdout)
	}
	if readFile(t, paths["shadow-query"]) != edited {
		t.Error("a plain install overwrote an installed file")
	}
	for _, flag := range []string{"--update", "--force"} {
		if err := os.WriteFile(paths["shadow-query"], []byte(edited), 0o755); err != nil {
			t.Fatal(err)
		}
		if r := run(t, env, home, "", "install.sh", flag); r.code != 0 {
			t.Fatalf("%s: %d %s", flag, r.code, r.stderr)
		}
		if readFile(t, paths["shadow-query"]) != readFile(t, "shadow-query") {
			t.Errorf("%s kept the edited copy", flag)
		}
	}

	// --uninstall --dry-run removes nothing; --uninstall removes all.
	if r := run(t, env, home, "", "install.sh", "--uninstall", "--dry-run"); r.code != 0 {
		t.Fatalf("--uninstall --dry-run: %d", r.code)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("--uninstall --dry-run removed %s", p)
		}
	}
	if r := run(t, env, home, "", "install.sh", "--uninstall"); r.code != 0 {
		t.Fatalf("--uninstall: %d", r.code)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("--uninstall left %s", p)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "bin")); err != nil {
		t.Errorf("--uninstall removed ~/.local/bin itself: %v", err)
	}

	// CLAUDE_CONFIG_DIR moves the agent template.
	cfg := filepath.Join(home, "claude-config")
	if r := run(t, append(env, "CLAUDE_CONFIG_DIR="+cfg), home, "", "install.sh"); r.code != 0 {
		t.Fatalf("install with CLAUDE_CONFIG_DIR: %d", r.code)
	}
	if _, err := os.Stat(filepath.Join(cfg, "agents", "shadow-git-helper.md")); err != nil {
		t.Errorf("template not under CLAUDE_CONFIG_DIR: %v", err)
	}
}

func TestInstallAndStatus(t *testing.T) {
	home := t.TempDir()
	targets := DefaultTargets(home, func(string) string { return "" })
	st, err := CheckStatus(targets)
	if err != nil {
		t.Fatal(err)
	}
	if st.AllCurrent || len(st.Files) != 3 {
		t.Fatalf("fresh home: %+v", st)
	}
	for _, f := range st.Files {
		if f.Installed || f.InstalledHash != nil || f.UpToDate || len(f.Hash) != 64 {
			t.Errorf("fresh home: %+v", f)
		}
	}
	// Install replaces local edits.
	p := targets.Target(Installed[0])
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("local edit"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err = Install(targets)
	if err != nil || !st.AllCurrent {
		t.Fatalf("after Install: %+v %v", st, err)
	}
	for _, f := range st.Files {
		if !f.Installed || !f.UpToDate || f.InstalledHash == nil || *f.InstalledHash != f.Hash {
			t.Errorf("after Install: %+v", f)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}

	// Windows with no bash: CLIs skipped, the template installed.
	whome := t.TempDir()
	wt := Targets{BinDir: filepath.Join(whome, "bin"), AgentsDir: filepath.Join(whome, "agents"), Windows: true}
	st, err = Install(wt)
	if err != nil || !st.AllCurrent {
		t.Fatalf("windows without bash: %+v %v", st, err)
	}
	if _, err := os.Stat(wt.BinDir); err == nil {
		t.Error("CLIs installed on Windows with no bash")
	}
	if st.Files[0].Skipped == "" || !st.Files[2].Installed {
		t.Errorf("windows without bash: %+v", st.Files)
	}
	// Windows with bash: wrappers beside the CLIs.
	wt.Bash = `C:\Program Files\Git\bin\bash.exe`
	if _, err := Install(wt); err != nil {
		t.Fatal(err)
	}
	w := readFile(t, filepath.Join(wt.BinDir, "shadow-git.cmd"))
	if !strings.Contains(w, `"C:\Program Files\Git\bin\bash.exe" "%~dpn0" %*`) || !strings.HasPrefix(w, "@echo off\r\n") {
		t.Errorf("wrapper: %q", w)
	}
}

// sqlServer records what shadow-query sends.
type sqlServer struct {
	mu                  sync.Mutex
	auth, ctype, format string
	body                string
	status              int
	answer              string
}

func (s *sqlServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path != "/api/shadow-db/sql" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	s.auth, s.ctype, s.format, s.body = r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.URL.Query().Get("format"), string(b)
	w.WriteHeader(s.status)
	_, _ = io.WriteString(w, s.answer)
}

func TestShadowQuery(t *testing.T) {
	srv := &sqlServer{status: 200, answer: "n\n1\n"}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	home := t.TempDir()

	// A curl in front of the real one that records its command line.
	realCurl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is needed")
	}
	bin := filepath.Join(home, "bin")
	argv := filepath.Join(home, "argv.log")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	wrap := "#!/bin/sh\nprintf '%s\\n' \"$*\" >>" + argv + "\nexec " + realCurl + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "curl"), []byte(wrap), 0o755); err != nil {
		t.Fatal(err)
	}
	const token = "svct_7_secret-token-value"
	env := []string{"HOME=" + home, "SVC_URL=" + ts.URL, "SVC_TOKEN=" + token, "PATH=" + bin + ":" + os.Getenv("PATH")}
	q := func(stdin string, args ...string) result {
		t.Helper()
		return run(t, env, home, stdin, "shadow-query", args...)
	}

	for _, tt := range []struct {
		args   []string
		stdin  string
		format string
		sql    string
	}{
		{[]string{"SELECT 1 AS n"}, "", "tsv", "SELECT 1 AS n"},
		{[]string{"--tsv", "SELECT 2"}, "", "tsv", "SELECT 2"},
		{[]string{"--json", "SELECT 3"}, "", "", "SELECT 3"},
		{[]string{"--format", "json", "SELECT 4"}, "", "", "SELECT 4"},
		{[]string{"--format=json", "SELECT 5"}, "", "", "SELECT 5"},
		{[]string{"--format=tsv", "-"}, "SELECT 'from\tstdin'\n", "tsv", "SELECT 'from\tstdin'\n"},
	} {
		r := q(tt.stdin, tt.args...)
		if r.code != 0 || r.stdout != srv.answer {
			t.Errorf("%v: code %d stdout %q stderr %q", tt.args, r.code, r.stdout, r.stderr)
		}
		srv.mu.Lock()
		if srv.auth != "Bearer "+token || srv.format != tt.format || srv.body != tt.sql || srv.ctype != "text/plain" {
			t.Errorf("%v: server saw auth %q format %q body %q type %q", tt.args, srv.auth, srv.format, srv.body, srv.ctype)
		}
		srv.mu.Unlock()
	}
	if strings.Contains(readFile(t, argv), token) {
		t.Error("the token appeared on curl's command line")
	}

	// The token from the config file when SVC_TOKEN is unset.
	cfg := filepath.Join(home, ".config", "svc-code", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("bearer_epoch: 3\napi_token: svct_3_from-config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	envNoToken := []string{"HOME=" + home, "SVC_URL=" + ts.URL}
	if r := run(t, envNoToken, home, "", "shadow-query", "SELECT 1"); r.code != 0 || srv.auth != "Bearer svct_3_from-config" {
		t.Errorf("token from config: code %d auth %q stderr %q", r.code, srv.auth, r.stderr)
	}

	// A host profile: its own config file, and its server at the SVC_ADDR of its ports.env.
	pdir := filepath.Join(home, ".config", "svc-code", "profiles", "work")
	if err := os.MkdirAll(pdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "config.yaml"), []byte("api_token: svct_1_work\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ports := "SVC_ADDR=" + strings.TrimPrefix(ts.URL, "http://") + "\n"
	if err := os.WriteFile(filepath.Join(pdir, "ports.env"), []byte(ports), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, []string{"HOME=" + home, "SVC_CODE_PROFILE=work"}, home, "", "shadow-query", "SELECT 1"); r.code != 0 || srv.auth != "Bearer svct_1_work" {
		t.Errorf("profile work: code %d auth %q stderr %q", r.code, srv.auth, r.stderr)
	}
	if r := run(t, []string{"HOME=" + home, "SVC_CODE_PROFILE=../x"}, home, "", "shadow-query", "SELECT 1"); r.code == 0 {
		t.Errorf("profile ../x: code 0, want a refusal")
	}

	// Errors: the server's error body on stderr, status 1.
	srv.mu.Lock()
	srv.status, srv.answer = 400, `{"error":"bad_request","message":"only read statements are allowed"}`
	srv.mu.Unlock()
	if r := q("", "DROP TABLE turns"); r.code != 1 || !strings.Contains(r.stderr, "only read statements") || r.stdout != "" {
		t.Errorf("refused statement: %+v", r)
	}
	for _, args := range [][]string{{"--format", "xml", "SELECT 1"}, {"SELECT 1", "SELECT 2"}, {}, {"--format"}} {
		if r := q("", args...); r.code != 2 {
			t.Errorf("%v: code %d, want 2 (usage)", args, r.code)
		}
	}
	if r := q("", "-"); r.code != 2 {
		t.Errorf("empty SQL on stdin: code %d", r.code)
	}
	if r := run(t, []string{"HOME=" + t.TempDir(), "SVC_URL=" + ts.URL}, home, "", "shadow-query", "SELECT 1"); r.code != 1 || !strings.Contains(r.stderr, "SVC_TOKEN") {
		t.Errorf("no token anywhere: %+v", r)
	}
}

// journalOf creates an empty journal for project under home as shadow
// does: <home>/projects/<hash>/shadow-git, with project.json.
func journalOf(t *testing.T, home, project string) string {
	t.Helper()
	resolved, err := filepath.EvalSymlinks(project)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(resolved))
	pdir := filepath.Join(home, "projects", hex.EncodeToString(sum[:])[:16])
	j := filepath.Join(pdir, "shadow-git")
	git(t, "", "init", "-q", "--bare", j)
	meta := `{"path": "` + resolved + `", "name": "demo", "hash": "` + filepath.Base(pdir) + `"}`
	if err := os.WriteFile(filepath.Join(pdir, "project.json"), []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
	return j
}

func git(t *testing.T, gitDir string, args ...string) string {
	t.Helper()
	if gitDir != "" {
		args = append([]string{"--git-dir=" + gitDir}, args...)
	}
	out, err := exec.CommandContext(context.Background(), "git", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestShadowGit(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "work", "demo")
	if err := os.MkdirAll(filepath.Join(proj, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(proj, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", "package main\n\nfunc parseConfig() {}\n")
	write("sub/notes.txt", "hello\n")
	env := []string{"HOME=" + home}
	sg := func(cwd string, extra []string, args ...string) result {
		t.Helper()
		return run(t, append(append([]string{}, env...), extra...), cwd, "", "shadow-git", args...)
	}

	// No journal yet.
	if r := sg(proj, nil, "log"); r.code != 1 || !strings.Contains(r.stderr, "no shadow git found") {
		t.Fatalf("no journal: %+v", r)
	}
	j := journalOf(t, filepath.Join(home, ".svc-code"), proj)

	r := sg(filepath.Join(proj, "sub"), nil, "snapshot", "first look")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "snapshot\t") {
		t.Fatalf("snapshot from a subdirectory: %+v", r)
	}
	if files := git(t, j, "ls-tree", "-r", "--name-only", "snapshot"); files != "main.go\nsub/notes.txt" {
		t.Errorf("snapshot tree: %q", files)
	}
	if r := sg(proj, nil, "snapshot"); r.code != 0 || !strings.Contains(r.stdout, "nothing changed") {
		t.Errorf("unchanged snapshot: %+v", r)
	}

	// The size cap: a 2 MB file is skipped at 1 MB, kept with 0.
	write("big.bin", strings.Repeat("x", 2<<20))
	write("main.go", "package main\n\nfunc parseConfig() { load() }\n")
	r = sg(proj, []string{"SHADOW_MAX_FILE_MB=1"}, "snapshot", "second")
	if r.code != 0 || !strings.Contains(r.stderr, "1 file(s) over 1 MB skipped") {
		t.Fatalf("capped snapshot: %+v", r)
	}
	if files := git(t, j, "ls-tree", "-r", "--name-only", "snapshot"); strings.Contains(files, "big.bin") {
		t.Errorf("big.bin committed over the cap: %q", files)
	}
	if r := sg(proj, []string{"SHADOW_MAX_FILE_MB=0"}, "snapshot", "uncapped"); r.code != 0 {
		t.Fatalf("uncapped snapshot: %+v", r)
	}
	if files := git(t, j, "ls-tree", "-r", "--name-only", "snapshot"); !strings.Contains(files, "big.bin") {
		t.Errorf("cap 0 did not disable the cap: %q", files)
	}
	if r := sg(proj, []string{"SHADOW_MAX_FILE_MB=lots"}, "snapshot"); r.code != 2 {
		t.Errorf("bad SHADOW_MAX_FILE_MB: %+v", r)
	}

	// A session branch, as the journal writes them.
	git(t, j, "update-ref", "refs/heads/session/abc123", "snapshot~1")
	if r := sg(proj, nil, "sessions"); r.code != 0 || !strings.HasPrefix(r.stdout, "abc123\t2\t") {
		t.Errorf("sessions: %+v", r)
	}
	if r := sg(proj, nil, "branches"); r.code != 0 || !strings.Contains(r.stdout, "snapshot\t3\t") || !strings.Contains(r.stdout, "session/abc123\t2\t") {
		t.Errorf("branches: %+v", r)
	}
	if r := sg(proj, nil, "search", `parseConfig\(\) \{ load`); r.code != 0 || !strings.Contains(r.stdout, "second") || strings.Contains(r.stdout, "first look") {
		t.Errorf("search: %+v", r)
	}
	if r := sg(proj, nil, "search"); r.code != 2 {
		t.Errorf("search without a pattern: %+v", r)
	}
	// Plain git passes through.
	if r := sg(proj, nil, "show", "snapshot~2:sub/notes.txt"); r.code != 0 || r.stdout != "hello\n" {
		t.Errorf("show: %+v", r)
	}
	if r := sg(proj, nil, "log", "--format=%s", "snapshot"); r.code != 0 || !strings.HasPrefix(r.stdout, "uncapped\n") {
		t.Errorf("log: %+v", r)
	}
	if r := sg(proj, nil, "projects"); r.code != 0 || !strings.Contains(r.stdout, proj+"\tdemo") {
		t.Errorf("projects: %+v", r)
	}

	// SHADOW_PROJECT names the project from anywhere; a directory without
	// a journal is refused.
	if r := sg(home, []string{"SHADOW_PROJECT=" + proj}, "rev-parse", "snapshot"); r.code != 0 {
		t.Errorf("SHADOW_PROJECT: %+v", r)
	}
	if r := sg(proj, []string{"SHADOW_PROJECT=" + filepath.Join(proj, "sub")}, "log"); r.code != 1 {
		t.Errorf("SHADOW_PROJECT without a journal: %+v", r)
	}
	if r := sg(proj, []string{"SHADOW_PROJECT=" + filepath.Join(home, "missing")}, "log"); r.code != 1 {
		t.Errorf("SHADOW_PROJECT missing: %+v", r)
	}

	// SVC_CODE_HOME and profiles.
	other := t.TempDir()
	if r := sg(proj, []string{"SVC_CODE_HOME=" + other}, "log"); r.code != 1 {
		t.Errorf("SVC_CODE_HOME elsewhere still found the default journal: %+v", r)
	}
	proj2 := filepath.Join(home, "work", "second")
	if err := os.MkdirAll(proj2, 0o755); err != nil {
		t.Fatal(err)
	}
	journalOf(t, filepath.Join(home, ".svc-code", "profiles", "team"), proj2)
	for _, extra := range [][]string{nil, {"SVC_CODE_PROFILE=team"}} {
		if r := sg(proj2, extra, "branches"); r.code != 0 {
			t.Errorf("profile journal with %v: %+v", extra, r)
		}
	}
	if r := sg(proj2, []string{"SVC_CODE_PROFILE=../etc"}, "branches"); r.code != 1 {
		t.Errorf("SVC_CODE_PROFILE with a path: %+v", r)
	}
}
