package search_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/services/shadow/internal/search"
)

// mustProject writes n Go files of about 2 KiB, one in a hundred holding
// "needle_rare_token", in a git repository.
func mustProject(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		var sb strings.Builder
		for j := range 12 {
			fmt.Fprintf(&sb, "func compute%d_%d(x int) int {\n\t// step %d\n\ty := x * %d\n\treturn y\n}\n\n", i, j, j, j+1)
		}
		if i%100 == 7 {
			sb.WriteString("// needle_rare_token\n")
		}
		p := filepath.Join(dir, fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("f%05d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkSearch10k: go test -run '^$' -bench Search10k ./internal/search/
func BenchmarkSearch10k(b *testing.B) {
	dir := mustProject(b, 10000)
	queries := map[string]search.Query{
		"literal":     {Root: dir, Pattern: "needle_rare_token", Case: search.Sensitive},
		"insensitive": {Root: dir, Pattern: "NEEDLE_RARE", Case: search.Insensitive},
		"capped":      {Root: dir, Pattern: "return", MaxResults: 500},
	}
	s := search.New()
	for _, engine := range []string{search.EngineGo, search.EngineRipgrep} {
		if engine == search.EngineRipgrep && s.Rg == "" {
			continue
		}
		for name, q := range queries {
			b.Run(engine+"/"+name, func(b *testing.B) {
				for b.Loop() {
					res, err := s.Search(context.Background(), q, engine)
					if err != nil || q.MaxResults == 0 && len(res.Matches) != 100 || q.MaxResults > 0 && !res.Truncated {
						b.Fatalf("%d matches, %v", len(res.Matches), err)
					}
				}
			})
		}
	}
}
