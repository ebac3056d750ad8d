package roots_test

import (
	"context"
	"testing"

	"github.com/svc-code/svc-code/services/shadow/internal/roots"
)

// FuzzResolve: whatever the path, Resolve either refuses it or answers a
// path inside a root, never under /proc, /sys or /dev.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"/", "..", "/proc/self", "a/../b", "/x/../../etc", "\x00", "//a//b/", "/home/u/link_out/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		tr := mustTree(t)
		r := roots.New(0, roots.Static(tr.root))
		for _, candidate := range []string{p, tr.root + "/" + p} {
			got, err := r.Resolve(context.Background(), candidate)
			if err != nil {
				continue
			}
			if !roots.Within(got, tr.root) || !roots.Allowed(got, []string{tr.root}) {
				t.Fatalf("ESCAPE: Resolve(%q) = %q", candidate, got)
			}
		}
	})
}
