package clisessions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
)

// roots makes empty CLI directories in a temporary home.
func roots(t *testing.T) Roots {
	t.Helper()
	home := t.TempDir()
	r := Roots{Claude: filepath.Join(home, ".claude", "projects"), Codex: filepath.Join(home, ".codex", "sessions")}
	for _, d := range []string{r.Claude, r.Codex} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func writeFile(t *testing.T, path, content string, mtime time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

func appendFile(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

func claudePromptLine(cwd, text string) string {
	return fmt.Sprintf(`{"type":"user","message":{"role":"user","content":%s},"cwd":%s,"sessionId":"x","timestamp":"2026-01-01T00:00:00Z"}`+"\n", quote(text), quote(cwd))
}

func codexMetaLine(id, cwd string) string {
	return fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":%s,"cwd":%s,"cli_version":"0.169.0"}}`+"\n", quote(id), quote(cwd))
}

func codexPromptLine(text string) string {
	return fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":%s}]}}`+"\n", quote(text))
}

func TestListSortsTitlesAndProjects(t *testing.T) {
	r := roots(t)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c1 := filepath.Join(r.Claude, "-home-me-a", "11111111-aaaa-4aaa-8aaa-111111111111.jsonl")
	long := strings.Repeat("word ", 60)
	writeFile(t, c1, `{"type":"queue-operation","operation":"enqueue"}`+"\n"+claudePromptLine("/home/me/a", "  fix the\n\tbug  "), base.Add(time.Minute))
	c2 := filepath.Join(r.Claude, "-home-me-b", "22222222-aaaa-4aaa-8aaa-222222222222.jsonl")
	writeFile(t, c2, claudePromptLine("/home/me/b", long), base.Add(3*time.Minute))
	x1id := "01a21b7b-d8f3-7ee2-9179-0854450fbf7b"
	x1 := filepath.Join(r.Codex, "2026", "03", "01", "rollout-2026-03-01T12-00-00-"+x1id+".jsonl")
	writeFile(t, x1, codexMetaLine(x1id, "/home/me/c")+codexPromptLine("<environment_context>x</environment_context>")+codexPromptLine("add tests"), base.Add(2*time.Minute))
	// Not sessions: a symbolic link, a file of another name, a file too deep,
	// a name that is not an id.
	if err := os.Symlink(c1, filepath.Join(r.Claude, "-home-me-a", "33333333-aaaa-4aaa-8aaa-333333333333.jsonl")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(r.Claude, "-home-me-a", "notes.txt"), "x\n", time.Time{})
	writeFile(t, filepath.Join(r.Claude, "-home-me-a", "x.y.jsonl"), "x\n", time.Time{})
	writeFile(t, filepath.Join(r.Codex, "2026", "03", "01", "deep", "rollout-2026-03-01T12-00-00-"+x1id+".jsonl"), "x\n", time.Time{})

	f := &Finder{Roots: r}
	all, err := f.List("")
	if err != nil {
		t.Fatal(err)
	}
	page, total := Select(all, Query{})
	if total != 3 {
		t.Fatalf("%d sessions: %+v", total, page)
	}
	var got []string
	for _, e := range page {
		got = append(got, e.Provider+" "+e.Project+" "+e.Title)
	}
	want := []string{
		"claude /home/me/b " + strings.Repeat("word ", 23) + "word…", // 119 characters and the ellipsis
		"codex /home/me/c add tests",
		"claude /home/me/a fix the bug",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("listing:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len([]rune(page[0].Title)); n > MaxTitle || !strings.HasSuffix(page[0].Title, "…") {
		t.Errorf("long title %q (%d characters)", page[0].Title, n)
	}
	if info, _ := os.Stat(c2); page[0].Size != info.Size() || !page[0].ModTime.Equal(base.Add(3*time.Minute)) {
		t.Errorf("entry %+v", page[0])
	}
	if page[1].ID != x1id || page[1].File != filepath.Join("2026", "03", "01", filepath.Base(x1)) {
		t.Errorf("codex entry %+v", page[1])
	}

	// Filter and pages.
	if p, n := Select(all, Query{Text: "BUG"}); n != 1 || p[0].Project != "/home/me/a" {
		t.Errorf("q=BUG: %d %+v", n, p)
	}
	if p, n := Select(all, Query{Limit: 1, Offset: 1}); n != 3 || len(p) != 1 || p[0].Provider != "codex" {
		t.Errorf("limit 1 offset 1: %d %+v", n, p)
	}
	if p, n := Select(all, Query{Offset: 5}); n != 3 || len(p) != 0 {
		t.Errorf("offset 5: %d %+v", n, p)
	}
	if only, _ := f.List(protocol.CLIProviderCodex); len(only) != 1 {
		t.Errorf("codex only: %+v", only)
	}
}

func TestListHeadCacheFollowsTheFile(t *testing.T) {
	r := roots(t)
	path := filepath.Join(r.Claude, "-p", "44444444-aaaa-4aaa-8aaa-444444444444.jsonl")
	writeFile(t, path, `{"type":"queue-operation","operation":"enqueue"}`+"\n", time.Time{})
	f := &Finder{Roots: r}
	list := func() Entry {
		t.Helper()
		es, err := f.List("")
		if err != nil || len(es) != 1 {
			t.Fatalf("%v %+v", err, es)
		}
		return es[0]
	}
	if e := list(); e.Title != "" || e.Project != "" {
		t.Fatalf("before the prompt: %+v", e)
	}
	// The prompt written later: the head is read again.
	appendFile(t, path, claudePromptLine("/p", "first prompt"))
	e := list()
	if e.Title != "first prompt" || e.Project != "/p" {
		t.Fatalf("after the prompt: %+v", e)
	}
	// Appending more: the size follows, the head is not read again.
	ops := f.FSOps()
	appendFile(t, path, claudePromptLine("/p", "second prompt"))
	e2 := list()
	if e2.Title != "first prompt" || e2.Size <= e.Size {
		t.Errorf("after more lines: %+v", e2)
	}
	if f.FSOps()-ops != 3 { // the two walks, and the file's first bytes
		t.Errorf("%d file system calls for a listing with a known head, want 3", f.FSOps()-ops)
	}
	// Replaced by another file: read again.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, claudePromptLine("/q", "another")+strings.Repeat(" ", 10000)+"\n", time.Time{})
	if e := list(); e.Title != "another" || e.Project != "/q" {
		t.Errorf("after replacing the file: %+v", e)
	}
}

func TestFindRefusesBadIDsWithoutTouchingTheDisk(t *testing.T) {
	r := roots(t)
	f := &Finder{Roots: r}
	for _, tc := range []struct{ provider, id string }{
		{"claude", ".."},
		{"claude", "../../etc/passwd"},
		{"claude", "a/b"},
		{"codex", "a\x00b"},
		{"codex", ""},
		{"claude", "."},
		{"claude", "x.jsonl"},
		{"codex", "-rf"},
		{"claude", strings.Repeat("a", 129)},
		{"claude", "a b"},
	} {
		if _, err := f.Find(tc.provider, tc.id); !errors.Is(err, ErrBadID) {
			t.Errorf("Find(%q, %q) = %v, want ErrBadID", tc.provider, tc.id, err)
		}
	}
	for _, p := range []string{"", "gemini", "../claude", "Claude"} {
		if _, err := f.Find(p, "abc"); !errors.Is(err, ErrBadProvider) {
			t.Errorf("Find(%q) = %v, want ErrBadProvider", p, err)
		}
	}
	if n := f.FSOps(); n != 0 {
		t.Errorf("%d file system calls for refused ids, want 0", n)
	}
	if _, err := f.Find("claude", "55555555-aaaa-4aaa-8aaa-555555555555"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := (&Finder{Roots: Roots{Claude: filepath.Join(r.Claude, "missing")}}).List(""); err != nil {
		t.Errorf("missing roots: %v", err)
	}
}

func TestTitleOfACommand(t *testing.T) {
	for in, want := range map[string]string{
		"<command-message>init is analyzing your codebase…</command-message>\n<command-name>/init</command-name>": "/init",
		"<command-name>/review</command-name>\n<command-args>PR 12</command-args>":                                "/review PR 12",
		"plain <b>text</b>": "plain <b>text</b>",
	} {
		if got := Title(commandTitle(in)); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestFindFixtures(t *testing.T) {
	f := fixtureFinder()
	e, err := f.Find(protocol.CLIProviderClaude, claudeFixtureID)
	if err != nil || e.Title != "Say hello" || e.Project != "/tmp/cliwork/proj" || e.File != "-tmp-cliwork-proj/"+claudeFixtureID+".jsonl" {
		t.Errorf("claude: %v %+v", err, e)
	}
	e, err = f.Find(protocol.CLIProviderCodex, codexFixtureID)
	if err != nil || e.Title != "Say hello" || e.Project != "/tmp/cliwork/xproj" {
		t.Errorf("codex: %v %+v", err, e)
	}
}
