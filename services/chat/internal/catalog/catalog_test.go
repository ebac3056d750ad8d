package catalog

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
)

const testSecret = "0123456789abcdef-catalog-tests"

// fixture is a home with Claude Code's and Codex's directories and a
// project, laid out as the CLIs leave them.
type fixture struct {
	home, claude, codex, project, plugin string
	app                                  *fiber.App
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	home := t.TempDir()
	f := &fixture{
		home: home, claude: filepath.Join(home, ".claude"), codex: filepath.Join(home, ".codex"),
		project: filepath.Join(home, "work", "proj"),
	}
	f.plugin = filepath.Join(f.claude, "plugins", "cache", "market", "tools", "1.2.0")
	files := map[string]string{
		f.claude + "/commands/review.md":                "---\ndescription: Review the diff\nargument-hint: '[file]'\nallowed-tools: [Bash(git diff:*), Read]\n---\nReview $ARGUMENTS carefully.\n",
		f.claude + "/commands/frontend/component.md":    "# Make a component\n\nBody.\n",
		f.claude + "/commands/shared.md":                "---\ndescription: personal shared\n---\nmine\n",
		f.claude + "/commands/broken.md":                "---\nfoo: [unclosed\n---\nstill listed\n",
		f.claude + "/commands/notes.txt":                "not a command",
		f.claude + "/agents/helper.md":                  "---\nname: helper\ndescription: personal helper\ntools: Read, Grep\n---\nYou help.\n",
		f.claude + "/skills/pdf/SKILL.md":               "---\nname: pdf\ndescription: personal pdf skill\n---\nUse pdftotext.\n",
		f.claude + "/settings.json":                     `{"enabledPlugins": {"tools@market": true, "off@market": false}}`,
		f.project + "/.claude/commands/shared.md":       "---\ndescription: project shared\n---\nours\n",
		f.project + "/.claude/commands/deploy.md":       "Deploy to staging.\n",
		f.project + "/.claude/agents/other.md":          "---\nname: helper\ndescription: project helper\n---\nProject help.\n",
		f.project + "/.claude/skills/pdf/SKILL.md":      "---\ndescription: project pdf skill\n---\nx\n",
		f.codex + "/prompts/draft.md":                   "---\ndescription: Draft a PR\nargument-hint: TITLE=<t>\n---\nDraft $TITLE\n",
		f.plugin + "/.claude-plugin/plugin.json":        `{"name": "tools", "version": "1.2.0", "description": "Team tools", "author": {"name": "Team"}}`,
		f.plugin + "/commands/lint.md":                  "---\ndescription: Lint it\n---\nlint\n",
		f.plugin + "/agents/rev.md":                     "---\nname: rev\ndescription: plugin reviewer\n---\nrev\n",
		f.plugin + "/skills/s1/SKILL.md":                "---\nname: s1\ndescription: plugin skill\n---\ns\n",
		f.claude + "/plugins/cache/market/off/1/x.json": "{}",
		f.claude + "/plugins/installed_plugins.json": `{"version": 2, "plugins": {
			"tools@market": [{"scope": "user", "installPath": "` + f.plugin + `", "version": "1.2.0", "installedAt": "2026-01-01T00:00:00Z"}],
			"off@market": [{"scope": "project", "projectPath": "/elsewhere", "installPath": "` + f.claude + `/plugins/cache/market/off/1", "version": "1"}]
		}}`,
	}
	for p, c := range files {
		write(t, p, c)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	f.app = svchttp.New(svchttp.Config{Service: "chat", Secret: internalauth.FromString(testSecret), BodyLimit: 1 << 20, Log: log})
	Register(f.app, Deps{Catalog: &Catalog{Dirs: Dirs{Claude: f.claude, Codex: f.codex}}, Log: log})
	return f
}

type answer struct {
	status int
	body   map[string]any
	raw    string
}

func (f *fixture) do(t *testing.T, method, path, contentType, body string) answer {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set(protocol.HeaderInternal, testSecret)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := f.app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, raw: string(raw)}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("%s %s: not JSON: %s", method, path, raw)
	}
	return a
}

func (f *fixture) get(t *testing.T, path string) answer {
	t.Helper()
	return f.do(t, http.MethodGet, path, "", "")
}

func (a answer) want(t *testing.T, status int, code string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("got %d %s, want %d", a.status, a.raw, status)
	}
	if got, _ := a.body["error"].(string); code != "" && got != code {
		t.Fatalf("got error %q (%s), want %q", got, a.raw, code)
	}
}

// entries indexes a list answer by "name/scope".
func entries(t *testing.T, a answer, key string) map[string]map[string]any {
	t.Helper()
	a.want(t, http.StatusOK, "")
	list, ok := a.body[key].([]any)
	if !ok {
		t.Fatalf("no %q list: %s", key, a.raw)
	}
	out := map[string]map[string]any{}
	for _, e := range list {
		m := e.(map[string]any)
		out[m["name"].(string)+"/"+m["scope"].(string)] = m
	}
	return out
}

func keys(m map[string]map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestCommands(t *testing.T) {
	f := newFixture(t)
	got := entries(t, f.get(t, "/api/commands?cwd="+f.project), "commands")
	want := []string{
		"broken/personal", "deploy/project", "draft/codex", "frontend:component/personal",
		"review/personal", "shared/personal", "shared/project", "tools:lint/plugin",
	}
	if k := keys(got); strings.Join(k, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v, want %v", k, want)
	}
	review := got["review/personal"]
	fm, _ := review["frontmatter"].(map[string]any)
	if review["description"] != "Review the diff" || review["invocation"] != "/review" || fm["argument-hint"] != "[file]" ||
		review["active"] != true || review["content"] != nil || review["provider"] != "claude" {
		t.Errorf("review: got %v", review)
	}
	if tools, _ := fm["allowed-tools"].([]any); len(tools) != 2 || tools[0] != "Bash(git diff:*)" {
		t.Errorf("allowed-tools: got %v", fm["allowed-tools"])
	}
	if c := got["frontend:component/personal"]; c["description"] != "Make a component" || c["invocation"] != "/frontend:component" {
		t.Errorf("namespaced command: got %v", c)
	}
	// The personal command wins over the project's of the same name.
	if p, q := got["shared/personal"], got["shared/project"]; p["active"] != true || q["active"] != false || q["shadowed_by"] != "personal" {
		t.Errorf("collision: personal %v, project %v", p, q)
	}
	if b := got["broken/personal"]; !strings.Contains(b["error"].(string), "malformed frontmatter") || b["description"] != "still listed" {
		t.Errorf("broken frontmatter: got %v", b)
	}
	if d := got["draft/codex"]; d["invocation"] != "/prompts:draft" || d["provider"] != "codex" || d["active"] != true {
		t.Errorf("codex prompt: got %v", d)
	}
	if l := got["tools:lint/plugin"]; l["plugin"] != "tools@market" || l["invocation"] != "/tools:lint" {
		t.Errorf("plugin command: got %v", l)
	}

	// Without a project only the user's; with provider=codex only Codex's.
	if got := entries(t, f.get(t, "/api/commands"), "commands"); got["deploy/project"] != nil || got["shared/personal"]["active"] != true {
		t.Errorf("no cwd: got %v", keys(got))
	}
	if got := entries(t, f.get(t, "/api/commands?provider=codex"), "commands"); len(got) != 1 || got["draft/codex"] == nil {
		t.Errorf("provider=codex: got %v", keys(got))
	}
}

func TestAgentsSkillsPlugins(t *testing.T) {
	f := newFixture(t)
	agents := entries(t, f.get(t, "/api/agents?cwd="+f.project), "agents")
	if k := keys(agents); strings.Join(k, " ") != "helper/personal helper/project tools:rev/plugin" {
		t.Fatalf("agents: got %v", k)
	}
	// For agents the project's wins.
	if agents["helper/project"]["active"] != true || agents["helper/personal"]["shadowed_by"] != "project" {
		t.Errorf("agent collision: %v / %v", agents["helper/project"], agents["helper/personal"])
	}
	if fm := agents["helper/personal"]["frontmatter"].(map[string]any); fm["tools"] != "Read, Grep" {
		t.Errorf("agent frontmatter: got %v", fm)
	}

	skills := entries(t, f.get(t, "/api/skills?cwd="+f.project), "skills")
	if k := keys(skills); strings.Join(k, " ") != "pdf/personal pdf/project tools:s1/plugin" {
		t.Fatalf("skills: got %v", k)
	}
	if skills["pdf/personal"]["active"] != true || skills["pdf/project"]["shadowed_by"] != "personal" ||
		!strings.HasSuffix(skills["pdf/project"]["path"].(string), "/.claude/skills/pdf/SKILL.md") {
		t.Errorf("skill collision: %v / %v", skills["pdf/personal"], skills["pdf/project"])
	}

	got := f.get(t, "/api/plugins?cwd="+f.project)
	got.want(t, http.StatusOK, "")
	list := got.body["plugins"].([]any)
	if len(list) != 2 {
		t.Fatalf("plugins: got %s", got.raw)
	}
	off, tools := list[0].(map[string]any), list[1].(map[string]any)
	if tools["id"] != "tools@market" || tools["enabled"] != true || tools["applies"] != true || tools["description"] != "Team tools" ||
		tools["author"] != "Team" || tools["commands"] != float64(1) || tools["agents"] != float64(1) || tools["skills"] != float64(1) {
		t.Errorf("tools plugin: got %v", tools)
	}
	if off["id"] != "off@market" || off["enabled"] != false || off["applies"] != false || off["scope"] != "project" {
		t.Errorf("off plugin: got %v", off)
	}

	// A project setting can switch a plugin off: its entries go.
	write(t, f.project+"/.claude/settings.local.json", `{"enabledPlugins": {"tools@market": false}}`)
	if got := entries(t, f.get(t, "/api/agents?cwd="+f.project), "agents"); got["tools:rev/plugin"] != nil {
		t.Errorf("disabled plugin's agent listed: %v", keys(got))
	}
}

// TestSymlinkedDirectories: a commands directory that is a symlink (kept
// in a dotfiles repository) and symlinked skills are read through.
func TestSymlinkedDirectories(t *testing.T) {
	f := newFixture(t)
	dotfiles := t.TempDir()
	write(t, filepath.Join(dotfiles, "commands", "mine.md"), "Mine\n")
	write(t, filepath.Join(dotfiles, "skills", "linked", "SKILL.md"), "---\nname: linked\n---\nx\n")
	if err := os.RemoveAll(filepath.Join(f.claude, "commands")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dotfiles, "commands"), filepath.Join(f.claude, "commands")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dotfiles, "skills", "linked"), filepath.Join(f.claude, "skills", "linked")); err != nil {
		t.Fatal(err)
	}
	cmds := entries(t, f.get(t, "/api/commands"), "commands")
	if c := cmds["mine/personal"]; c == nil || c["path"] != filepath.Join(f.claude, "commands", "mine.md") {
		t.Errorf("symlinked commands directory: got %v", keys(cmds))
	}
	if got := entries(t, f.get(t, "/api/skills"), "skills"); got["linked/personal"] == nil {
		t.Errorf("symlinked skill: got %v", keys(got))
	}
	got := f.get(t, "/api/commands/mine?scope=personal")
	got.want(t, http.StatusOK, "")
	if got.body["content"] != "Mine\n" {
		t.Errorf("get through the symlink: %s", got.raw)
	}
}

// TestPluginsVersion1: the older registry keeps one object per plugin; a
// broken entry is listed with its error, a broken registry answers no
// plugins and says why.
func TestPluginsVersion1(t *testing.T) {
	f := newFixture(t)
	write(t, f.claude+"/plugins/installed_plugins.json", `{"version": 1, "plugins": {
		"tools@market": {"version": "1.0.0", "installPath": "`+f.plugin+`", "installedAt": "2025-01-01T00:00:00Z"},
		"bad@market": 42}}`)
	got := f.get(t, "/api/plugins")
	got.want(t, http.StatusOK, "")
	list := got.body["plugins"].([]any)
	if len(list) != 2 {
		t.Fatalf("got %s", got.raw)
	}
	bad, tools := list[0].(map[string]any), list[1].(map[string]any)
	if tools["scope"] != "user" || tools["version"] != "1.0.0" || tools["enabled"] != true || tools["applies"] != true {
		t.Errorf("v1 entry: %v", tools)
	}
	if bad["id"] != "bad@market" || bad["error"] == nil {
		t.Errorf("broken entry: %v", bad)
	}
	write(t, f.claude+"/plugins/installed_plugins.json", `{not json`)
	got = f.get(t, "/api/plugins")
	got.want(t, http.StatusOK, "")
	if list, _ := got.body["plugins"].([]any); len(list) != 0 || !strings.Contains(fmt.Sprint(got.body["error"]), "malformed plugin registry") {
		t.Errorf("broken registry: %s", got.raw)
	}
	// The other lists still answer, without plugin entries.
	if got := entries(t, f.get(t, "/api/commands"), "commands"); got["tools:lint/plugin"] != nil || got["review/personal"] == nil {
		t.Errorf("commands with a broken registry: %v", keys(got))
	}
}

func TestNoDirectories(t *testing.T) {
	empty := t.TempDir()
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	app := svchttp.New(svchttp.Config{Service: "chat", Secret: internalauth.FromString(testSecret), BodyLimit: 1 << 20, Log: log})
	Register(app, Deps{Catalog: &Catalog{Dirs: Dirs{Claude: filepath.Join(empty, "c"), Codex: filepath.Join(empty, "x")}}, Log: log})
	f := &fixture{app: app}
	write(t, filepath.Join(empty, ".claude"), "a file where a directory is expected")
	for _, path := range []string{"/api/commands", "/api/agents", "/api/skills", "/api/plugins"} {
		got := f.get(t, path+"?cwd="+empty)
		got.want(t, http.StatusOK, "")
		key := strings.TrimPrefix(path, "/api/")
		if list, ok := got.body[key].([]any); !ok || len(list) != 0 {
			t.Errorf("%s: got %s, want an empty list", path, got.raw)
		}
	}
}

func TestCommandEdits(t *testing.T) {
	f := newFixture(t)
	const js = "application/json"
	content := "---\ndescription: Say hello\n---\nHello $ARGUMENTS\n"
	body := `{"scope":"personal","name":"team:hello","content":` + quote(content) + `}`
	got := f.do(t, http.MethodPost, "/api/commands", js, body)
	got.want(t, http.StatusCreated, "")
	path := filepath.Join(f.claude, "commands", "team", "hello.md")
	if got.body["path"] != path || got.body["content"] != content || got.body["description"] != "Say hello" || got.body["active"] != true {
		t.Errorf("create: got %s", got.raw)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != content {
		t.Fatalf("file: %q, %v", b, err)
	}
	f.do(t, http.MethodPost, "/api/commands", js, body).want(t, http.StatusConflict, "conflict")

	got = f.get(t, "/api/commands/team:hello?scope=personal")
	got.want(t, http.StatusOK, "")
	if got.body["content"] != content || got.body["invocation"] != "/team:hello" {
		t.Errorf("get: got %s", got.raw)
	}

	updated := "Hi there\n"
	got = f.do(t, http.MethodPut, "/api/commands/team:hello", js, `{"scope":"personal","content":`+quote(updated)+`}`)
	got.want(t, http.StatusOK, "")
	if b, _ := os.ReadFile(path); string(b) != updated || got.body["description"] != "Hi there" {
		t.Errorf("update: file %q, answer %s", b, got.raw)
	}

	// A project command: created in the project, shadowed by the personal
	// one of the same name.
	got = f.do(t, http.MethodPost, "/api/commands", js, `{"scope":"project","cwd":`+quote(f.project)+`,"name":"review","content":"Project review\n"}`)
	got.want(t, http.StatusCreated, "")
	if got.body["path"] != filepath.Join(f.project, ".claude", "commands", "review.md") || got.body["active"] != false || got.body["shadowed_by"] != "personal" {
		t.Errorf("project create: got %s", got.raw)
	}
	// A Codex prompt.
	f.do(t, http.MethodPost, "/api/commands", js, `{"scope":"codex","name":"fix","content":"Fix it\n"}`).want(t, http.StatusCreated, "")
	if _, err := os.Stat(filepath.Join(f.codex, "prompts", "fix.md")); err != nil {
		t.Error(err)
	}

	got = f.do(t, http.MethodDelete, "/api/commands/team:hello?scope=personal", "", "")
	got.want(t, http.StatusOK, "")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("after delete: %v", err)
	}
	f.do(t, http.MethodDelete, "/api/commands/team:hello?scope=personal", "", "").want(t, http.StatusNotFound, "not_found")
	f.do(t, http.MethodPut, "/api/commands/team:hello", js, `{"scope":"personal","content":"x"}`).want(t, http.StatusNotFound, "not_found")
	f.get(t, "/api/commands/team:hello?scope=personal").want(t, http.StatusNotFound, "not_found")
}

// TestCommandBadInputs: every bad input is refused and changes nothing on
// disk.
func TestCommandBadInputs(t *testing.T) {
	f := newFixture(t)
	before := tree(t, f.home)
	const js = "application/json"
	tests := []struct {
		name                      string
		method, path, ctype, body string
		status                    int
		code                      string
	}{
		{"traversal name", http.MethodPost, "/api/commands", js, `{"scope":"personal","name":"../evil","content":"x"}`, 400, "bad_request"},
		{"slash in name", http.MethodPost, "/api/commands", js, `{"scope":"personal","name":"a/b","content":"x"}`, 400, "bad_request"},
		{"dot part", http.MethodPost, "/api/commands", js, `{"scope":"personal","name":"a:..","content":"x"}`, 400, "bad_request"},
		{"hidden", http.MethodPost, "/api/commands", js, `{"scope":"personal","name":".x","content":"x"}`, 400, "bad_request"},
		{"space", http.MethodPost, "/api/commands", js, `{"scope":"personal","name":"a b","content":"x"}`, 400, "bad_request"},
		{"too deep", http.MethodPost, "/api/commands", js, `{"scope":"personal","name":"a:b:c:d:e","content":"x"}`, 400, "bad_request"},
		{"codex namespace", http.MethodPost, "/api/commands", js, `{"scope":"codex","name":"a:b","content":"x"}`, 400, "bad_request"},
		{"no name", http.MethodPost, "/api/commands", js, `{"scope":"personal","content":"x"}`, 400, "bad_request"},
		{"no scope", http.MethodPost, "/api/commands", js, `{"name":"x","content":"x"}`, 400, "bad_request"},
		{"plugin scope", http.MethodPost, "/api/commands", js, `{"scope":"plugin","name":"x","content":"x"}`, 400, "bad_request"},
		{"project without cwd", http.MethodPost, "/api/commands", js, `{"scope":"project","name":"x","content":"x"}`, 400, "bad_request"},
		{"relative cwd", http.MethodPost, "/api/commands", js, `{"scope":"project","cwd":"work","name":"x","content":"x"}`, 400, "bad_request"},
		{"missing cwd", http.MethodPost, "/api/commands", js, `{"scope":"project","cwd":"/no/such/dir","name":"x","content":"x"}`, 400, "bad_request"},
		{"no content", http.MethodPost, "/api/commands", js, `{"scope":"personal","name":"x"}`, 400, "bad_request"},
		{"blank content", http.MethodPost, "/api/commands", js, `{"scope":"personal","name":"x","content":"  \n"}`, 400, "bad_request"},
		{"bad frontmatter", http.MethodPost, "/api/commands", js, `{"scope":"personal","name":"x","content":"---\na: [\n---\nb"}`, 400, "bad_request"},
		{"unclosed frontmatter", http.MethodPost, "/api/commands", js, `{"scope":"personal","name":"x","content":"---\na: b\n"}`, 400, "bad_request"},
		{"too large", http.MethodPost, "/api/commands", js, `{"scope":"personal","name":"x","content":"` + strings.Repeat("a", MaxFileBytes+1) + `"}`, 400, "bad_request"},
		{"unknown field", http.MethodPost, "/api/commands", js, `{"scope":"personal","name":"x","content":"x","mode":1}`, 400, "bad_request"},
		{"trailing data", http.MethodPost, "/api/commands", js, `{"scope":"personal","name":"x","content":"x"} {}`, 400, "bad_request"},
		{"empty body", http.MethodPost, "/api/commands", js, ``, 400, "bad_request"},
		{"array body", http.MethodPost, "/api/commands", js, `[]`, 400, "bad_request"},
		{"text body", http.MethodPost, "/api/commands", "text/plain", `{"scope":"personal","name":"x","content":"x"}`, 415, "unsupported_media_type"},
		{"exists", http.MethodPost, "/api/commands", js, `{"scope":"personal","name":"review","content":"x"}`, 409, "conflict"},
		{"put rename", http.MethodPut, "/api/commands/review", js, `{"scope":"personal","name":"other","content":"x"}`, 400, "bad_request"},
		{"put bad name", http.MethodPut, "/api/commands/..", js, `{"scope":"personal","content":"x"}`, 400, "bad_request"},
		{"put unknown", http.MethodPut, "/api/commands/nope", js, `{"scope":"personal","content":"x"}`, 404, "not_found"},
		{"put no content", http.MethodPut, "/api/commands/review", js, `{"scope":"personal"}`, 400, "bad_request"},
		{"put bad frontmatter", http.MethodPut, "/api/commands/review", js, `{"scope":"personal","content":"---\n: :\n  - [\n---\n"}`, 400, "bad_request"},
		{"delete no scope", http.MethodDelete, "/api/commands/review", "", ``, 400, "bad_request"},
		{"delete traversal", http.MethodDelete, "/api/commands/..%2F..%2Fsettings?scope=personal", "", ``, 400, "bad_request"},
		{"delete unknown", http.MethodDelete, "/api/commands/nope?scope=personal", "", ``, 404, "not_found"},
		{"get bad scope", http.MethodGet, "/api/commands/review?scope=all", "", ``, 400, "bad_request"},
		{"list relative cwd", http.MethodGet, "/api/commands?cwd=rel", "", ``, 400, "bad_request"},
		{"list bad provider", http.MethodGet, "/api/commands?provider=x", "", ``, 400, "bad_request"},
		{"agents missing cwd", http.MethodGet, "/api/agents?cwd=/no/such", "", ``, 400, "bad_request"},
		{"skills relative cwd", http.MethodGet, "/api/skills?cwd=.", "", ``, 400, "bad_request"},
		{"plugins relative cwd", http.MethodGet, "/api/plugins?cwd=x", "", ``, 400, "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.do(t, tt.method, tt.path, tt.ctype, tt.body).want(t, tt.status, tt.code)
		})
	}
	if after := tree(t, f.home); after != before {
		t.Errorf("bad inputs changed the files:\nbefore %s\nafter  %s", before, after)
	}
}

// tree lists every file below dir with its size.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s:%s:%d ", path, fi.ModTime(), fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func FuzzValidName(f *testing.F) {
	for _, s := range []string{"review", "a:b", "../x", "a/b", "", ":", "a::b", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if ValidName(ScopePersonal, name) != nil {
			return
		}
		c := &Catalog{Dirs: Dirs{Claude: "/base/.claude"}}
		path, err := c.commandPath(ScopePersonal, "", name)
		if err != nil {
			t.Fatalf("valid name %q: %v", name, err)
		}
		if !strings.HasPrefix(path, "/base/.claude/commands/") || strings.Contains(path, "..") || filepath.Clean(path) != path {
			t.Fatalf("name %q escapes: %s", name, path)
		}
	})
}

func FuzzFrontmatter(f *testing.F) {
	for _, s := range []string{"---\na: b\n---\nbody", "no fm", "---\n---\n", "---\na: [\n---\n", "\uFEFF---\r\nx: 1\r\n---\r\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		fm, _, err := splitFrontmatter(content)
		if err == nil && fm != nil {
			if _, err := json.Marshal(fm); err != nil {
				t.Fatalf("frontmatter of %q does not encode: %v", content, err)
			}
		}
	})
}
