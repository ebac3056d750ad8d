package protocol

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
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

// TestGeneratedTypeScriptCompiles type-checks the generated file with
// tsc when one is installed (web/node_modules, or on PATH).
func TestGeneratedTypeScriptCompiles(t *testing.T) {
	tsc := "../../web/node_modules/.bin/tsc"
	if _, err := os.Stat(tsc); err != nil {
		if tsc, err = exec.LookPath("tsc"); err != nil {
			t.Skip("no tsc installed (web/node_modules or PATH): the TypeScript is not type-checked here; TestTSTypeTags guards the known way to break it")
		}
	}
	out, err := exec.Command(tsc, "--noEmit", "--strict", "--target", "es2022", "--module", "esnext", generatedTS).CombinedOutput()
	if err != nil {
		t.Errorf("tsc %s: %v\n%s", generatedTS, err, out)
	}
}

// TestTSTypeTags: a tstype tag is a TypeScript type, then options after
// commas (extends, required, readonly); a type with a comma in it
// ("Record<string, unknown>") would be cut at the comma into TypeScript
// that does not compile, so such types are named with tygo:emit instead.
func TestTSTypeTags(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	options := map[string]bool{"extends": true, "required": true, "readonly": true}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			field, ok := n.(*ast.Field)
			if !ok || field.Tag == nil {
				return true
			}
			raw, err := strconv.Unquote(field.Tag.Value)
			if err != nil {
				t.Errorf("%s: tag %s: %v", fset.Position(field.Pos()), field.Tag.Value, err)
				return true
			}
			ts, ok := reflect.StructTag(raw).Lookup("tstype")
			if !ok {
				return true
			}
			parts := strings.Split(ts, ",")
			for _, opt := range parts[1:] {
				if !options[opt] {
					t.Errorf("%s: tstype %q: %q is no option: a TypeScript type with a comma is cut there; name it with tygo:emit",
						fset.Position(field.Pos()), ts, opt)
				}
			}
			return true
		})
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
