package search_test

import (
	"testing"

	"github.com/svc-code/svc-code/services/shadow/internal/search"
)

// FuzzMatcher: any .gitignore line parses (or is skipped) and matching it
// never panics.
func FuzzMatcher(f *testing.F) {
	for _, s := range []string{"*.go", "!a/**/b", "[!x", `\`, "/**/", "a[", "**", "[]]", "\\ "} {
		f.Add(s, "a/b/c.go")
	}
	f.Fuzz(func(_ *testing.T, line, path string) {
		m, _ := search.NewMatcher([]string{line})
		m.Match(path, false)
		m.Match(path, true)
		search.ParseGitignore([]byte(line + "\n" + path))
	})
}
