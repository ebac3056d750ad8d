package agent

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocs: every package of the provider layer (this one, its
// subpackages and the fake CLI) has a doc comment.
func TestPackageDocs(t *testing.T) {
	for _, root := range []string{".", filepath.Join("..", "..", "cmd", "fakeclaude")} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			entries, err := os.ReadDir(path)
			if err != nil {
				return err
			}
			sources, documented := 0, false
			for _, e := range entries {
				name := e.Name()
				if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
					continue
				}
				f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(path, name), nil, parser.PackageClauseOnly|parser.ParseComments)
				if err != nil {
					return err
				}
				sources++
				documented = documented || f.Doc != nil
			}
			if sources > 0 && !documented {
				t.Errorf("package in %s has no doc comment", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
