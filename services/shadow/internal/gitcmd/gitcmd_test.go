package gitcmd

import (
	"context"
	"errors"
	"strings"
	"testing"
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
