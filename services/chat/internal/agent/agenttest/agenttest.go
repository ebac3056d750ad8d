// Package agenttest holds the test kit the provider test kits share: it
// compiles a fake agent CLI (a main package under the chat module's cmd/)
// for a test binary, and runs a test binary around it.
//
// Only tests import it, through claudetest and codextest.
package agenttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// BuildFake compiles cmd/<name> of the chat module (e.g. "fakeclaude")
// into dir with the go tool on PATH and returns the binary's path. Call it
// once per test binary.
func BuildFake(ctx context.Context, dir, name string) (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("build %s: cannot locate the source tree", name)
	}
	// this file is services/chat/internal/agent/agenttest/agenttest.go
	module := filepath.Join(filepath.Dir(file), "..", "..", "..")
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build %s: %w", name, err)
	}
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", bin, "./cmd/"+name)
	cmd.Dir = module
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", name, err, out)
	}
	return bin, nil
}

// MainWithFake is a TestMain for packages that drive a fake CLI: it builds
// cmd/<name> into a temporary directory, stores its path in *bin, runs the
// tests, removes the directory and, when the tests passed, fails on a
// leaked goroutine. It exits the process with the result.
func MainWithFake(m *testing.M, name string, bin *string) {
	os.Exit(mainWithFake(m, name, bin))
}

func mainWithFake(m *testing.M, name string, bin *string) int {
	dir, err := os.MkdirTemp("", name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	*bin, err = BuildFake(ctx, dir, name)
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
