package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeNPM is an npm that installs, under --prefix, the layout the real
// packages leave: a native binary that reports its version. Each call is
// logged, so the test sees what was installed when.
const fakeNPM = `#!/usr/bin/env bash
set -euo pipefail
echo "$*" >>"$NPM_LOG"
prefix= spec=
while (($#)); do
	case $1 in
	--prefix) prefix=$2; shift ;;
	install | --*) ;;
	*) spec=$1 ;;
	esac
	shift
done
version=${spec##*@}
case $spec in
@anthropic-ai/claude-code@*)
	d=$prefix/node_modules/@anthropic-ai/claude-code-linux-$ARCH
	mkdir -p "$d"
	printf '#!/bin/sh\necho "%s (Claude Code)"\n' "$version" >"$d/claude"
	chmod +x "$d/claude" ;;
@openai/codex@*)
	d=$prefix/node_modules/@openai/codex-linux-$ARCH/vendor/$RUST_ARCH-unknown-linux-musl/bin
	mkdir -p "$d"
	printf '#!/bin/sh\necho "codex-cli %s"\n' "$version" >"$d/codex"
	chmod +x "$d/codex" ;;
*) echo "fake npm: unknown package $spec" >&2; exit 1 ;;
esac
`

// make agents installs the pinned versions for the user alone, links them
// from ~/.local/bin, installs nothing twice, and leaves the user's own
// programs alone.
func TestInstallAgents(t *testing.T) {
	// npm's names for the machine, and the Rust target's.
	names, ok := map[string][2]string{"amd64": {"x64", "x86_64"}, "arm64": {"arm64", "aarch64"}}[runtime.GOARCH]
	if !ok {
		t.Skipf("the agent CLIs have no build for %s", runtime.GOARCH)
	}
	arch, rustArch := names[0], names[1]
	root := repoRoot(t)
	pins := readEnvFile(t, filepath.Join(root, "deploy", "scripts", "agent-versions.env"))
	home := t.TempDir()
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "npm"), []byte(fakeNPM), 0o755); err != nil {
		t.Fatal(err)
	}
	npmLog := filepath.Join(fake, "npm.log")
	run := func() string {
		t.Helper()
		cmd := exec.Command("bash", filepath.Join(root, "deploy", "scripts", "install-agents.sh"))
		cmd.Env = []string{
			"PATH=" + fake + ":" + os.Getenv("PATH"), "HOME=" + home, "LANG=C",
			"NPM_LOG=" + npmLog, "ARCH=" + arch, "RUST_ARCH=" + rustArch,
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("install-agents.sh: %v\n%s", err, out)
		}
		return string(out)
	}
	npmCalls := func() int {
		b, _ := os.ReadFile(npmLog)
		return strings.Count(string(b), "\n")
	}

	out := run()
	if n := npmCalls(); n != 2 {
		t.Errorf("first run: %d npm installs, want 2", n)
	}
	bin := filepath.Join(home, ".local", "bin")
	agents := filepath.Join(home, ".local", "share", "svc-code", "agents")
	for name, want := range map[string]string{
		"claude": pins["CLAUDE_CODE_VERSION"] + " (Claude Code)",
		"codex":  "codex-cli " + pins["CODEX_VERSION"],
	} {
		target, err := os.Readlink(filepath.Join(bin, name))
		if err != nil || !strings.HasPrefix(target, agents+"/") {
			t.Errorf("%s/%s -> %q, %v; want a link into %s", bin, name, target, err, agents)
		}
		got, err := exec.Command(filepath.Join(bin, name), "--version").Output()
		if err != nil || strings.TrimSpace(string(got)) != want {
			t.Errorf("%s --version = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, s := range []string{"claude", "/login", "codex login", "--with-api-key"} {
		if !strings.Contains(out, s) {
			t.Errorf("the sign-in advice does not mention %q:\n%s", s, out)
		}
	}

	// Again: nothing to install. The user's own codex stays as it is.
	codex := filepath.Join(bin, "codex")
	if err := os.Remove(codex); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(codex, []byte("#!/bin/sh\necho mine\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run()
	if n := npmCalls(); n != 2 {
		t.Errorf("second run: %d npm installs in all, want still 2", n)
	}
	if b, _ := os.ReadFile(codex); string(b) != "#!/bin/sh\necho mine\n" {
		t.Errorf("the user's %s was replaced: %q", codex, b)
	}
}
