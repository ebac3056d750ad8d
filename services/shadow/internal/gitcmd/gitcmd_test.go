package gitcmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunIsolatesTheEnvironment(t *testing.T) {
	t.Setenv("GIT_DIR", "/nonexistent")
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.pager'='touch /tmp/x'")
	out, err := Runner{}.Run(context.Background(), Cmd{Dir: t.TempDir(), Args: []string{"config", "--list", "--show-scope"}})
	if err != nil {
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != 1 { // no configuration at all: exit 1
			t.Fatal(err)
		}
	}
	if strings.Contains(string(out), "core.pager") || strings.Contains(string(out), "global") || strings.Contains(string(out), "system") {
		t.Errorf("git saw configuration it should not: %s", out)
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Runner{}.Run(context.Background(), Cmd{Dir: dir, Args: []string{"-c", "x.y=z", "rev-parse", "--verify", "nope"}})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 128 || !strings.Contains(err.Error(), "git rev-parse: exit 128") {
		t.Errorf("Run = %v, want an ExitError naming rev-parse", err)
	}
	_, err = Runner{}.Run(context.Background(), Cmd{Dir: dir, Args: []string{"version"}, MaxOutput: 3})
	if !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("Run over the bound = %v, want ErrOutputTooLarge", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (Runner{}).Run(ctx, Cmd{Dir: dir, Args: []string{"version"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context = %v", err)
	}
}

// TestRunStopsTheWholeCommand: when ctx ends, Run answers promptly even
// when git left a child that holds its output open (a hook, a filter, a
// helper): the child is killed with git, as a process group.
func TestRunStopsTheWholeCommand(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-git")
	marker := filepath.Join(dir, "child-alive")
	script := "#!/bin/sh\n(sleep 30; touch " + marker + ") &\nsleep 30\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Runner{Bin: bin}.Run(ctx, Cmd{Dir: dir, Args: []string{"status"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run = %v, want the deadline", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Run took %v after its deadline: a child kept it waiting", took)
	}
}
