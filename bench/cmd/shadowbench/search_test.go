package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMakeProject(t *testing.T) {
	dir := t.TempDir()
	n, err := makeProject(dir, 200, 20)
	if err != nil {
		t.Fatal(err)
	}
	var goFiles, rare int
	err = filepath.WalkDir(filepath.Join(dir, "src"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		goFiles++
		data, err := os.ReadFile(p)
		if strings.Contains(string(data), rareToken) {
			rare++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if goFiles != 200 || rare != 2 || n < 200*1400 {
		t.Errorf("%d files, %d with the token, %d bytes; want 200, 2, about 1.5 KiB each", goFiles, rare, n)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "HEAD")); err != nil {
		t.Errorf("not a git repository: %v", err)
	}
}

func TestSearchMarkdown(t *testing.T) {
	s := searchSection{
		Date:  time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC),
		Files: 10000,
		Runs:  3,
		Rows:  []searchRow{{Engine: "go", Query: "q", Matches: 500, Truncated: true, P50: 2 * time.Millisecond}},
		RgCLI: []searchRow{{Engine: "rg CLI", Query: "q", P50: time.Millisecond}},
	}
	md := s.Markdown()
	for _, want := range []string{searchStartMarker + "\n", "| go | q | 500 (truncated) | 2.0 ms |", "| rg CLI | q | – | 1.0 ms |", "not installed", searchEndMarker + "\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Count(md, searchStartMarker) != 1 || !strings.HasSuffix(md, searchEndMarker+"\n") {
		t.Errorf("markers: %s", md)
	}
}
