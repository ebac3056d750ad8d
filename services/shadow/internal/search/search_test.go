package search_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/services/shadow/internal/search"
)

// mustFixture builds:
//
//	top/.gitignore             "*.log" (above the repository: never applies)
//	top/repo/.git/             a repository
//	top/repo/.gitignore        secret.txt, build/, !keep.log
//	top/repo/...               files for every rule
//	top/plain/.gitignore       outside any repository: never applies
func mustFixture(t *testing.T) (repo, plain string) {
	t.Helper()
	top, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo = filepath.Join(top, "repo")
	plain = filepath.Join(top, "plain")
	files := map[string]string{
		"top/.gitignore":                 "*.log\n",
		"repo/.gitignore":                "secret.txt\nbuild/\n/rooted.txt\n# comment\n*.tmp\n!keep.tmp\n",
		"repo/a.txt":                     "needle one\nno match\nNEEDLE upper\n",
		"repo/app.log":                   "needle in a log\n",
		"repo/secret.txt":                "needle secret\n",
		"repo/rooted.txt":                "needle rooted\n",
		"repo/drop.tmp":                  "needle tmp\n",
		"repo/keep.tmp":                  "needle kept\n",
		"repo/.hidden":                   "needle hidden\n",
		"repo/build/out.txt":             "needle built\n",
		"repo/src/main.go":               "package main // needle\nfunc needle() {}\n",
		"repo/src/rooted.txt":            "needle not rooted here\n",
		"repo/src/crlf.txt":              "needle crlf\r\nsecond needle\r\n",
		"repo/src/unicode.txt":           "ÉCOLE needle\nécole\n",
		"repo/src/.gitignore":            "*.gen.go\n!secret.txt\n",
		"repo/src/x.gen.go":              "needle generated\n",
		"repo/src/secret.txt":            "needle re-included secret\n",
		"repo/src/deep/a/b/c.txt":        "deep needle\n",
		"repo/src/deep/drop.tmp":         "needle ignored by the repository's rule\n",
		"repo/vendor/lib.go":             "needle vendored\n",
		"repo/bin.dat":                   "needle\x00binary\n",
		"repo/regex.txt":                 "a.c\nabc\nfoo(bar)\n",
		"repo/kelvin.txt":                "Rare_To\u212Aen with a Kelvin sign\nrare_token plain\nRARE_TOKE\n",
		"repo/nested/.git/HEAD":          "ref: refs/heads/main\n",
		"repo/nested/.gitignore":         "local.txt\n",
		"repo/nested/local.txt":          "needle nested ignored\n",
		"repo/nested/secret.txt":         "needle nested secret (outer rule stops at nested root)\n",
		"repo/.git/config":               "needle in git dir\n",
		"repo/long.txt":                  strings.Repeat("x", 700) + "needle\n",
		"plain/.gitignore":               "ignored.txt\n",
		"plain/ignored.txt":              "needle plain\n",
		"plain/sub/ok.txt":               "needle plain sub\n",
		"repo/src/deep/a/b/notes.md":     "needle md\n",
		"repo/src/deep/a/b/.gitignore":   "*.md\n",
		"repo/src/deep/a/b/keepme.md.go": "needle odd name\n",
	}
	for rel, content := range files {
		p := filepath.Join(top, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(repo, "a.txt"), filepath.Join(repo, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repo, "src"), filepath.Join(repo, "linkdir")); err != nil {
		t.Fatal(err)
	}
	return repo, plain
}

func engines(t *testing.T) []*search.Searcher {
	t.Helper()
	rg, err := exec.LookPath("rg")
	if err != nil {
		t.Log("ripgrep is not installed: only the Go walk is tested")
		return []*search.Searcher{{}}
	}
	return []*search.Searcher{{Rg: rg}, {}}
}

func rels(root string, ms []search.Match) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		r, _ := filepath.Rel(root, m.Path)
		out = append(out, fmt.Sprintf("%s:%d:%d", r, m.Line, m.Column))
	}
	return out
}

// TestEnginesAgree runs every query with ripgrep and with the Go walk: the
// answers must be identical, and equal to what the rules say.
func TestEnginesAgree(t *testing.T) {
	repo, plain := mustFixture(t)
	tests := []struct {
		name string
		q    search.Query
		want []string
	}{
		{"gitignore rules", search.Query{Root: repo, Pattern: "needle", Case: search.Sensitive}, []string{
			".hidden:1:1", "a.txt:1:1", "app.log:1:1", "keep.tmp:1:1", "long.txt:1:701",
			"nested/secret.txt:1:1", "src/crlf.txt:1:1", "src/crlf.txt:2:8",
			"src/deep/a/b/c.txt:1:6", "src/deep/a/b/keepme.md.go:1:1", "src/main.go:1:17", "src/main.go:2:6",
			"src/rooted.txt:1:1", "src/secret.txt:1:1", "src/unicode.txt:1:8", "vendor/lib.go:1:1",
		}},
		{"smart case goes insensitive", search.Query{Root: repo, Pattern: "needle", Include: []string{"a.txt"}}, []string{
			"a.txt:1:1", "a.txt:3:1",
		}},
		{"smart case with upper stays sensitive", search.Query{Root: repo, Pattern: "NEEDLE", Include: []string{"a.txt"}}, []string{
			"a.txt:3:1",
		}},
		{"insensitive unicode", search.Query{Root: repo, Pattern: "école", Case: search.Insensitive, Include: []string{"*.txt"}}, []string{
			"src/unicode.txt:1:1", "src/unicode.txt:2:1",
		}},
		{"folding beyond ASCII (Kelvin sign)", search.Query{Root: repo, Pattern: "RARE_TOKEN", Case: search.Insensitive, Include: []string{"kelvin.txt"}}, []string{
			"kelvin.txt:1:1", "kelvin.txt:2:1",
		}},
		{"literal is literal", search.Query{Root: repo, Pattern: "a.c", Include: []string{"regex.txt"}}, []string{"regex.txt:1:1"}},
		{"regex", search.Query{Root: repo, Pattern: "a.c", Regex: true, Include: []string{"regex.txt"}}, []string{"regex.txt:1:1", "regex.txt:2:1"}},
		{"regex anchors and groups", search.Query{Root: repo, Pattern: `^foo\(b.r\)$`, Regex: true}, []string{"regex.txt:3:1"}},
		{"dollar before CR does not match", search.Query{Root: repo, Pattern: `crlf$`, Regex: true}, []string{}},
		{"include glob overrides gitignore", search.Query{Root: repo, Pattern: "needle", Include: []string{"*.log", "secret.txt"}}, []string{
			"app.log:1:1", "nested/secret.txt:1:1", "secret.txt:1:1", "src/secret.txt:1:1",
		}},
		{"anchored include", search.Query{Root: repo, Pattern: "needle", Include: []string{"src/*.go"}}, []string{
			"src/main.go:1:17", "src/main.go:2:6", "src/x.gen.go:1:1",
		}},
		{"double star include", search.Query{Root: repo, Pattern: "needle", Include: []string{"src/**/*.txt"}}, []string{
			"src/crlf.txt:1:1", "src/crlf.txt:2:8", "src/deep/a/b/c.txt:1:6", "src/rooted.txt:1:1",
			"src/secret.txt:1:1", "src/unicode.txt:1:8",
		}},
		{"exclude dir", search.Query{Root: repo, Pattern: "needle", Exclude: []string{"src", "vendor/", "nested"}}, []string{
			".hidden:1:1", "a.txt:1:1", "a.txt:3:1", "app.log:1:1", "keep.tmp:1:1", "long.txt:1:701",
		}},
		{"include and exclude", search.Query{Root: repo, Pattern: "needle", Include: []string{"*.go"}, Exclude: []string{"vendor"}}, []string{
			"src/deep/a/b/keepme.md.go:1:1", "src/main.go:1:17", "src/main.go:2:6", "src/x.gen.go:1:1",
		}},
		{"subdirectory", search.Query{Root: filepath.Join(repo, "src"), Pattern: "needle"}, []string{
			"crlf.txt:1:1", "crlf.txt:2:8", "deep/a/b/c.txt:1:6", "deep/a/b/keepme.md.go:1:1",
			"main.go:1:17", "main.go:2:6", "rooted.txt:1:1", "secret.txt:1:1", "unicode.txt:1:8",
		}},
		{"subdirectory inherits the repository rules", search.Query{Root: filepath.Join(repo, "src", "deep"), Pattern: "needle"}, []string{
			"a/b/c.txt:1:6", "a/b/keepme.md.go:1:1",
		}},
		{"no repository: no gitignore", search.Query{Root: plain, Pattern: "needle"}, []string{
			"ignored.txt:1:1", "sub/ok.txt:1:1",
		}},
		{"cap", search.Query{Root: repo, Pattern: "needle", MaxResults: 3}, []string{
			".hidden:1:1", "a.txt:1:1", "a.txt:3:1",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range engines(t) {
				res, err := s.Search(context.Background(), tt.q, "")
				if err != nil {
					t.Fatalf("%s: %v", res.Engine, err)
				}
				got := rels(tt.q.Root, res.Matches)
				if !slices.Equal(got, tt.want) {
					t.Errorf("engine %s:\n got %q\nwant %q", res.Engine, got, tt.want)
				}
				if wantTrunc := tt.q.MaxResults == 3; res.Truncated != wantTrunc {
					t.Errorf("engine %s: truncated = %v, want %v", res.Engine, res.Truncated, wantTrunc)
				}
			}
		})
	}
}

func TestMatchText(t *testing.T) {
	repo, _ := mustFixture(t)
	for _, s := range engines(t) {
		res, err := s.Search(context.Background(), search.Query{Root: repo, Pattern: "needle", Include: []string{"crlf.txt", "long.txt"}}, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Matches) != 3 {
			t.Fatalf("%s: got %d matches, want 3", res.Engine, len(res.Matches))
		}
		if got := res.Matches[0].Text; len(got) != search.MaxLineBytes {
			t.Errorf("%s: long line text is %d bytes, want %d", res.Engine, len(got), search.MaxLineBytes)
		}
		if got := res.Matches[1].Text; got != "needle crlf" {
			t.Errorf("%s: text %q, want %q (no line end)", res.Engine, got, "needle crlf")
		}
		if !filepath.IsAbs(res.Matches[1].Path) {
			t.Errorf("%s: path %q is not absolute", res.Engine, res.Matches[1].Path)
		}
	}
}

func TestInvalidQueries(t *testing.T) {
	repo, _ := mustFixture(t)
	tests := []struct {
		name   string
		q      search.Query
		engine string
	}{
		{"empty pattern", search.Query{Root: repo}, ""},
		{"bad regex", search.Query{Root: repo, Pattern: "(unclosed", Regex: true}, ""},
		{"bad repetition", search.Query{Root: repo, Pattern: "a**", Regex: true}, ""},
		{"newline", search.Query{Root: repo, Pattern: "a\nb"}, ""},
		{"bad case", search.Query{Root: repo, Pattern: "a", Case: "upper"}, ""},
		{"empty glob", search.Query{Root: repo, Pattern: "a", Include: []string{""}}, ""},
		{"negated glob", search.Query{Root: repo, Pattern: "a", Include: []string{"!x"}}, ""},
		{"unknown engine", search.Query{Root: repo, Pattern: "a"}, "grep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range engines(t) {
				_, err := s.Search(context.Background(), tt.q, tt.engine)
				if !errors.Is(err, search.ErrInvalid) {
					t.Errorf("got %v, want ErrInvalid", err)
				}
			}
		})
	}
	if _, err := (&search.Searcher{}).Search(context.Background(), search.Query{Root: repo, Pattern: "a"}, search.EngineRipgrep); !errors.Is(err, search.ErrInvalid) {
		t.Errorf("rg asked without ripgrep: got %v, want ErrInvalid", err)
	}
}

func TestCancelledSearch(t *testing.T) {
	repo, _ := mustFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&search.Searcher{}).Search(ctx, search.Query{Root: repo, Pattern: "needle"}, search.EngineGo); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func TestMatcher(t *testing.T) {
	tests := []struct {
		lines   []string
		path    string
		isDir   bool
		matched bool
		negated bool
	}{
		{[]string{"*.go"}, "a/b/c.go", false, true, false},
		{[]string{"*.go"}, "a/b/c.gox", false, false, false},
		{[]string{"/a.go"}, "x/a.go", false, false, false},
		{[]string{"/a.go"}, "a.go", false, true, false},
		{[]string{"build/"}, "build", false, false, false},
		{[]string{"build/"}, "x/build", true, true, false},
		{[]string{"a/**/b"}, "a/b", false, true, false},
		{[]string{"a/**/b"}, "a/x/y/b", false, true, false},
		{[]string{"a/**"}, "a/x/y", false, true, false},
		{[]string{"a/**"}, "a", true, false, false},
		{[]string{"**/z"}, "q/z", false, true, false},
		{[]string{"*.go", "!main.go"}, "main.go", false, true, true},
		{[]string{"[abc].txt"}, "b.txt", false, true, false},
		{[]string{"[!abc].txt"}, "b.txt", false, false, false},
		{[]string{`\#x`}, "#x", false, true, false},
		{[]string{"# comment"}, "# comment", false, false, false},
		{[]string{"a?c"}, "a/c", false, false, false},
		{[]string{"trail   "}, "trail", false, true, false},
	}
	for _, tt := range tests {
		m, _ := search.NewMatcher(tt.lines)
		matched, negated := m.Match(tt.path, tt.isDir)
		if matched != tt.matched || negated != tt.negated {
			t.Errorf("%q on %q (dir %v): got %v,%v want %v,%v", tt.lines, tt.path, tt.isDir, matched, negated, tt.matched, tt.negated)
		}
	}
}

// TestCapKeepsPathOrder: with many files and workers, a capped search
// answers the first matches in path order, as ripgrep's sorted output.
func TestCapKeepsPathOrder(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 300 {
		rel := fmt.Sprintf("d%02d/f%03d.txt", i%7, i)
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\nhit one\nhit two\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		want = append(want, rel+":2:1", rel+":3:1")
	}
	slices.Sort(want)
	want = want[:151]
	for _, s := range engines(t) {
		res, err := s.Search(context.Background(), search.Query{Root: root, Pattern: "hit", MaxResults: 151}, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := rels(root, res.Matches); !slices.Equal(got, want) || !res.Truncated {
			t.Errorf("%s: truncated %v\n got %q\nwant %q", res.Engine, res.Truncated, got, want)
		}
	}
}

// TestLargeFilesSkipped: files over MaxFileSize are not searched by either
// engine; one just under it is.
func TestLargeFilesSkipped(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	line := []byte("needle\n")
	for name, size := range map[string]int{"big.txt": search.MaxFileSize + 1, "fits.txt": search.MaxFileSize} {
		data := bytes.Repeat([]byte("a"), size)
		copy(data, line)
		if err := os.WriteFile(filepath.Join(root, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range engines(t) {
		res, err := s.Search(context.Background(), search.Query{Root: root, Pattern: "needle"}, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := rels(root, res.Matches); !slices.Equal(got, []string{"fits.txt:1:1"}) {
			t.Errorf("%s: %q, want only the file that fits", res.Engine, got)
		}
	}
}
