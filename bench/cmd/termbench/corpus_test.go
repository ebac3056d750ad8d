package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteCorpus(t *testing.T) {
	tests := []struct {
		name string
		size int64
	}{
		{"empty", 0},
		{"one byte", 1},
		{"a few lines", 1000},
		{"a megabyte", 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "corpus.txt")
			lines, err := writeCorpus(path, tt.size, 1)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(b)) != tt.size {
				t.Fatalf("wrote %d bytes, want %d", len(b), tt.size)
			}
			if got := int64(bytes.Count(b, []byte("\n"))); got != lines {
				t.Errorf("%d newlines, but writeCorpus reported %d lines", got, lines)
			}
			if tt.size > 0 && b[len(b)-1] != '\n' {
				t.Error("the file does not end with a newline")
			}
			for i, c := range b {
				if c != '\n' && (c < ' ' || c > '~') {
					t.Fatalf("byte %d is %q, want printable ASCII or a newline", i, c)
				}
			}
		})
	}
}

func TestWriteCorpusIsReproducible(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if _, err := writeCorpus(a, 100000, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := writeCorpus(b, 100000, 7); err != nil {
		t.Fatal(err)
	}
	x, _ := os.ReadFile(a)
	y, _ := os.ReadFile(b)
	if !bytes.Equal(x, y) {
		t.Error("the same seed wrote different files")
	}
}
