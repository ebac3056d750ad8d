package repocheck

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// workspacePackages lists every package of every module in go.work as
// "importpath\x1fname\x1fdoc".
func workspacePackages(t *testing.T, format string) []string {
	t.Helper()
	gowork, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil || strings.TrimSpace(string(gowork)) == "" {
		t.Fatalf("go env GOWORK: %v (these tests run inside the workspace)", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gowork)))
	mods, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	args := []string{"list", "-f", format}
	for _, d := range strings.Fields(string(mods)) {
		args = append(args, d+"/...")
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

func TestEveryPackageHasADocComment(t *testing.T) {
	for _, line := range workspacePackages(t, "{{.ImportPath}}\x1f{{.Doc}}") {
		path, doc, _ := strings.Cut(line, "\x1f")
		if strings.TrimSpace(doc) == "" {
			t.Errorf("package %s has no doc comment", path)
		}
	}
}

func TestLibsStayFrameworkFree(t *testing.T) {
	for _, line := range workspacePackages(t, "{{.ImportPath}}\x1f{{join .Imports \" \"}}") {
		path, imports, _ := strings.Cut(line, "\x1f")
		if !strings.HasPrefix(path, "github.com/svc-code/svc-code/libs/") {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, "github.com/gofiber/") || strings.HasPrefix(imp, "github.com/valyala/fasthttp") {
				t.Errorf("%s imports %s: the web framework stays out of libs", path, imp)
			}
			if strings.HasPrefix(imp, "github.com/jackc/pgx") && path != "github.com/svc-code/svc-code/libs/pgmigrate" {
				t.Errorf("%s imports %s: only libs/pgmigrate may use pgx", path, imp)
			}
		}
	}
}
