package protocol

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly keeps protocol free of third-party imports: every
// service and tool may import it without pulling anything in.
func TestStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/svc-code/svc-code/libs/protocol" {
			t.Errorf("protocol imports non-standard package %s", p)
		}
	}
}
