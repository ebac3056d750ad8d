package agenttest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuildFakeUnknownProgram(t *testing.T) {
	dir := t.TempDir()
	bin, err := BuildFake(context.Background(), dir, "nosuchfake")
	if err == nil {
		t.Fatalf("BuildFake(nosuchfake) = %q, want an error", bin)
	}
	if !strings.HasPrefix(err.Error(), "build nosuchfake: ") {
		t.Errorf("error = %q, want it to name the program", err)
	}
	if _, statErr := os.Stat(filepath.Join(dir, "nosuchfake")); statErr == nil {
		t.Error("a binary was written for a program that does not exist")
	}
}

func TestBuildFake(t *testing.T) {
	dir := t.TempDir()
	bin, err := BuildFake(context.Background(), dir, "fakecodex")
	if err != nil {
		t.Fatal(err)
	}
	if bin != filepath.Join(dir, "fakecodex") {
		t.Errorf("BuildFake = %q, want it in %s", bin, dir)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&0o111 == 0 {
		t.Errorf("%s is not executable (%v)", bin, fi.Mode())
	}
}
