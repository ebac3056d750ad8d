package protocol

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// generatedTS is the generated TypeScript, relative to this package.
const generatedTS = "../../web/src/protocol/types.gen.ts"

// TestGeneratedTypeScript regenerates the TypeScript types into a
// temporary directory, with the pinned tygo and this package's config, and
// fails when the committed file differs: a Go type changed without
// `go generate ./libs/protocol`.
func TestGeneratedTypeScript(t *testing.T) {
	cfg, err := os.ReadFile("tygo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "types.gen.ts")
	const want = "output_path: " + generatedTS
	if !bytes.Contains(cfg, []byte(want)) {
		t.Fatalf("tygo.yaml does not hold %q", want)
	}
	tmpCfg := filepath.Join(t.TempDir(), "tygo.yaml")
	if err := os.WriteFile(tmpCfg, bytes.Replace(cfg, []byte(want), []byte("output_path: "+out), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	modfile, err := filepath.Abs("../../tools/tygo/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "tool", "-modfile="+modfile, "tygo", "generate", "--config", tmpCfg)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tygo: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(generatedTS)
	if err != nil {
		t.Fatalf("read the committed types: %v (run go generate ./libs/protocol)", err)
	}
	if !bytes.Equal(got, committed) {
		t.Errorf("%s is stale: run `go generate ./libs/protocol` and commit it; first difference at line %d",
			generatedTS, firstDiffLine(string(committed), string(got)))
	}
}

func firstDiffLine(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}
