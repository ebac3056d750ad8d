// Package codextest holds test helpers for the app-server provider and its
// fake: the recorded Codex transcripts (copied from
// shared/protocols/transcripts/codex, golden data), a loader for them, and
// BuildFake, which compiles cmd/fakecodex for a test binary.
//
// Only tests import it.
package codextest

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/svc-code/svc-code/services/chat/internal/agent/claude/claudetest"
)

//go:embed testdata/transcripts/*.jsonl
var transcripts embed.FS

// Names lists the transcripts, without the .jsonl suffix, sorted.
func Names() []string {
	entries, err := fs.ReadDir(transcripts, "testdata/transcripts")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".jsonl"))
	}
	sort.Strings(names)
	return names
}

// Load reads the transcript name (e.g. "shell_untrusted"); the line format
// is the Claude transcripts' one.
func Load(name string) ([]claudetest.Line, error) {
	b, err := transcripts.ReadFile(path.Join("testdata/transcripts", name+".jsonl"))
	if err != nil {
		return nil, fmt.Errorf("load transcript %s: %w", name, err)
	}
	return claudetest.ParseTranscript(b)
}

// BuildFake compiles cmd/fakecodex into dir and returns the binary's path.
func BuildFake(ctx context.Context, dir string) (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("build fakecodex: cannot locate the source tree")
	}
	// this file is services/chat/internal/agent/codex/codextest/codextest.go
	module := filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build fakecodex: %w", err)
	}
	bin := filepath.Join(dir, "fakecodex")
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", bin, "./cmd/fakecodex")
	cmd.Dir = module
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build fakecodex: %w\n%s", err, out)
	}
	return bin, nil
}

// MainWithFake is a TestMain for packages that drive the fake: it builds
// cmd/fakecodex into a temporary directory, stores its path in *bin, runs
// the tests, removes the directory and, when the tests passed, fails on a
// leaked goroutine.
func MainWithFake(m *testing.M, bin *string) {
	os.Exit(mainWithFake(m, bin))
}

func mainWithFake(m *testing.M, bin *string) int {
	dir, err := os.MkdirTemp("", "fakecodex-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	*bin, err = BuildFake(ctx, dir)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}
