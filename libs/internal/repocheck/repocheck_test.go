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

// The packages of libs allowed to import the web framework and pgx, with
// their subpackages: svchttp, because the internal-credential gate must be
// one implementation for every backend, and pgmigrate, because chat and
// analytics need the identical migration runner.
const (
	fiberHome = "github.com/svc-code/svc-code/libs/svchttp"
	pgxHome   = "github.com/svc-code/svc-code/libs/pgmigrate"
)

// within reports whether package path is pkg or one of its subpackages.
func within(path, pkg string) bool { return path == pkg || strings.HasPrefix(path, pkg+"/") }

func TestLibsStayFrameworkFree(t *testing.T) {
	for _, line := range workspacePackages(t, "{{.ImportPath}}\x1f{{join .Imports \" \"}}") {
		path, imports, _ := strings.Cut(line, "\x1f")
		if !strings.HasPrefix(path, "github.com/svc-code/svc-code/libs/") {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			web := strings.HasPrefix(imp, "github.com/gofiber/") || strings.HasPrefix(imp, "github.com/valyala/fasthttp")
			if web && !within(path, fiberHome) {
				t.Errorf("%s imports %s: only libs/svchttp may use the web framework", path, imp)
			}
			if strings.HasPrefix(imp, "github.com/jackc/pgx") && !within(path, pgxHome) {
				t.Errorf("%s imports %s: only libs/pgmigrate may use pgx", path, imp)
			}
		}
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{fiberHome, true},
		{fiberHome + "/svchttptest", true},
		{fiberHome + "x", false},
		{"github.com/svc-code/svc-code/libs/svcenv", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if got := within(tt.path, fiberHome); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
