package repocheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/libs/childenv"
)

// envTableName matches a variable name in backquotes.
var envTableName = regexp.MustCompile("`([A-Z][A-Z0-9_]*[A-Z0-9])`")

// TestEveryServiceVariableIsClassified: each variable in the environment
// tables of README.md and the services' READMEs is either kept from the
// agents and shells (libs/childenv denies it) or passed on for a reason
// (childenv.Kept), so that a new setting cannot reach them unnoticed.
func TestEveryServiceVariableIsClassified(t *testing.T) {
	gowork, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil || strings.TrimSpace(string(gowork)) == "" {
		t.Fatalf("go env GOWORK: %v (these tests run inside the workspace)", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gowork)))
	files, err := filepath.Glob(filepath.Join(root, "services", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "| `") {
				continue
			}
			first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
			for _, m := range envTableName.FindAllStringSubmatch(first, -1) {
				name := m[1]
				seen++
				if !childenv.Denied(name) && !slices.Contains(childenv.Kept, name) {
					t.Errorf("%s: %s is neither denied to agents and shells nor in childenv.Kept: classify it in libs/childenv",
						filepath.Base(filepath.Dir(f)), name)
				}
			}
		}
	}
	if seen < 20 {
		t.Errorf("found only %d variables in the READMEs' tables: is the table format still | `NAME` | ... ?", seen)
	}
}
