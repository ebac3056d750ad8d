package roots_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/shadow/internal/roots"
)

// tree is the fixture of the traversal suite:
//
//	base/home/u                 the allowed root (home)
//	base/home/user2, base/home/u2  siblings whose names share its prefix
//	base/proj                   a second root (a session's cwd)
//	base/outside                not allowed
//	base/rootlink -> home/u     a root reached through a link
type tree struct {
	base, root, proj, outside string
}

func mustTree(t *testing.T) tree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := tree{
		base:    base,
		root:    filepath.Join(base, "home", "u"),
		proj:    filepath.Join(base, "proj"),
		outside: filepath.Join(base, "outside"),
	}
	for _, d := range []string{
		tr.root + "/sub", tr.proj, tr.outside,
		base + "/home/user2", base + "/home/u2",
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{
		tr.root + "/a.txt", tr.root + "/sub/b.txt", tr.root + "/...", tr.root + "/..a",
		tr.outside + "/secret.txt", base + "/home/user2/secret", tr.proj + "/file",
	} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		tr.root + "/link_in":         "sub",
		tr.root + "/link_out":        "../../outside",
		tr.root + "/abs_out":         tr.outside,
		tr.root + "/dangling_out":    tr.outside + "/new",
		tr.root + "/dangling_rel":    "../../outside/new",
		tr.root + "/dangling_in":     "newfile",
		tr.root + "/loop1":           "loop2",
		tr.root + "/loop2":           "loop1",
		tr.root + "/rel_up":          "..",
		tr.root + "/to_proc":         "/proc/self",
		tr.root + "/to_proj":         tr.proj,
		tr.root + "/chain1":          "chain2",
		tr.root + "/chain2":          "../../outside",
		tr.root + "/sub/inner_rel":   "../../user2",
		tr.root + "/dot_dot_back":    "sub/..",
		tr.root + "/missing_up":      "missing/../../../outside",
		tr.root + "/missing_back":    "missing/../sub/evil",
		tr.root + "/sub/evil":        tr.outside + "/secret.txt",
		tr.root + "/sub/self_parent": "../../u/a.txt",
		base + "/rootlink":           "home/u",
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

type outcome int

const (
	ok outcome = iota
	forbidden
	invalid
	loop
)

// TestResolveTraversal is the traversal and symlink suite: every case
// either resolves inside a root (to the path given) or is refused; none
// escapes.
func TestResolveTraversal(t *testing.T) {
	tr := mustTree(t)
	r := roots.New(0, roots.Static(tr.root), roots.Static(tr.proj, "relative/ignored", "/does/not/exist"))
	all := roots.New(0, roots.Static("/"))
	R, O, B := tr.root, tr.outside, tr.base
	tests := []struct {
		name string
		r    *roots.Resolver
		path string
		want outcome
		real string // for ok: the expected resolution
	}{
		{"root itself", r, R, ok, R},
		{"file in root", r, R + "/a.txt", ok, R + "/a.txt"},
		{"nested file", r, R + "/sub/b.txt", ok, R + "/sub/b.txt"},
		{"dotdot back in", r, R + "/../u/a.txt", ok, R + "/a.txt"},
		{"dotdot out", r, R + "/..", forbidden, ""},
		{"dotdot to sibling", r, R + "/../user2/secret", forbidden, ""},
		{"sibling prefix user2", r, B + "/home/user2", forbidden, ""},
		{"sibling prefix u2", r, B + "/home/u2", forbidden, ""},
		{"sibling prefix file", r, B + "/home/user2/secret", forbidden, ""},
		{"parent of roots", r, B + "/home", forbidden, ""},
		{"link inside", r, R + "/link_in/b.txt", ok, R + "/sub/b.txt"},
		{"relative link out", r, R + "/link_out", forbidden, ""},
		{"through relative link out", r, R + "/link_out/secret.txt", forbidden, ""},
		{"absolute link out", r, R + "/abs_out/secret.txt", forbidden, ""},
		{"dangling absolute link out", r, R + "/dangling_out", forbidden, ""},
		{"dangling relative link out", r, R + "/dangling_rel", forbidden, ""},
		{"dangling link inside", r, R + "/dangling_in", ok, R + "/newfile"},
		{"link loop", r, R + "/loop1", loop, ""},
		{"link loop below", r, R + "/loop1/x", loop, ""},
		{"link to parent", r, R + "/rel_up", forbidden, ""},
		{"link to parent and back", r, R + "/rel_up/u/a.txt", ok, R + "/a.txt"},
		{"link to parent then sibling", r, R + "/rel_up/user2/secret", forbidden, ""},
		{"new file in new dir", r, R + "/newdir/new.txt", ok, R + "/newdir/new.txt"},
		{"new dir then dotdot out", r, R + "/newdir/../../outside", forbidden, ""},
		{"dotdot after sub", r, R + "/sub/../../u/a.txt", ok, R + "/a.txt"},
		{"empty", r, "", invalid, ""},
		{"relative", r, "home/u/a.txt", invalid, ""},
		{"relative dotdot", r, "../etc/passwd", invalid, ""},
		{"NUL byte", r, R + "/a\x00.txt", invalid, ""},
		{"NUL then traversal", r, R + "/\x00/../../outside", invalid, ""},
		{"proc", all, "/proc/self/environ", forbidden, ""},
		{"proc root", all, "/proc", forbidden, ""},
		{"sys", all, "/sys/kernel", forbidden, ""},
		{"dev", all, "/dev/null", forbidden, ""},
		{"dev via dotdot", all, "/etc/../dev/null", forbidden, ""},
		{"proc via link", all, R + "/to_proc/environ", forbidden, ""},
		{"proc via link under own root", r, R + "/to_proc/environ", forbidden, ""},
		{"not proc despite prefix", all, "/procfoo/x", ok, "/procfoo/x"},
		{"leaving dev lexically", all, "/dev/../etc", ok, "/etc"},
		{"trailing slash", r, R + "/sub/", ok, R + "/sub"},
		{"double slashes", r, R + "//sub///b.txt", ok, R + "/sub/b.txt"},
		{"dot elements", r, R + "/./sub/./b.txt", ok, R + "/sub/b.txt"},
		{"root through a link", r, B + "/rootlink/a.txt", ok, R + "/a.txt"},
		{"below a file", r, R + "/a.txt/x", ok, R + "/a.txt/x"},
		{"second root", r, tr.proj + "/file", ok, tr.proj + "/file"},
		{"link to second root", r, R + "/to_proj/file", ok, tr.proj + "/file"},
		{"link chain out", r, R + "/chain1/secret.txt", forbidden, ""},
		{"inner relative link to sibling", r, R + "/sub/inner_rel/secret", forbidden, ""},
		{"three dots is a name", r, R + "/...", ok, R + "/..."},
		{"dotdot-prefixed name", r, R + "/..a", ok, R + "/..a"},
		{"slash dotdot", r, "/..", forbidden, ""},
		{"link to sub/..", r, R + "/dot_dot_back/a.txt", ok, R + "/a.txt"},
		{"missing then up and out", r, R + "/missing_up/secret.txt", forbidden, ""},
		{"missing then back to a link out", r, R + "/missing_back", forbidden, ""},
		{"link to own file via parents", r, R + "/sub/self_parent", ok, R + "/a.txt"},
		{"outside directly", r, O + "/secret.txt", forbidden, ""},
		{"nonexistent root is no root", r, "/does/not/exist/x", forbidden, ""},
		{"etc", r, "/etc/passwd", forbidden, ""},
		{"filesystem root", r, "/", forbidden, ""},
	}
	if len(tests) < 40 {
		t.Fatalf("the suite must hold at least 40 cases, has %d", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.r.Resolve(context.Background(), tt.path)
			var gotOutcome outcome
			switch {
			case err == nil:
				gotOutcome = ok
			case errors.Is(err, roots.ErrForbidden):
				gotOutcome = forbidden
			case errors.Is(err, roots.ErrInvalid):
				gotOutcome = invalid
			case errors.Is(err, syscall.ELOOP):
				gotOutcome = loop
			default:
				t.Fatalf("Resolve(%q): unexpected error %v", tt.path, err)
			}
			if gotOutcome != tt.want {
				t.Fatalf("Resolve(%q) = %q, %v: got outcome %d, want %d", tt.path, got, err, gotOutcome, tt.want)
			}
			if tt.want == ok && got != tt.real {
				t.Errorf("Resolve(%q) = %q, want %q", tt.path, got, tt.real)
			}
			if err == nil && tt.r == r && !roots.Within(got, tr.root) && !roots.Within(got, tr.proj) {
				t.Errorf("ESCAPE: Resolve(%q) = %q is outside the roots", tt.path, got)
			}
		})
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		p, dir string
		want   bool
	}{
		{"/home/u", "/home/u", true},
		{"/home/u/x", "/home/u", true},
		{"/home/user2", "/home/u", false},
		{"/home/u2/x", "/home/u", false},
		{"/home", "/home/u", false},
		{"/anything", "/", true},
		{"/", "/", true},
	}
	for _, tt := range tests {
		if got := roots.Within(tt.p, tt.dir); got != tt.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tt.p, tt.dir, got, tt.want)
		}
	}
}

func TestRootsCachedForTTL(t *testing.T) {
	dir := t.TempDir()
	calls := 0
	src := func(context.Context) ([]string, error) {
		calls++
		return []string{dir}, nil
	}
	r := roots.New(time.Hour, src)
	for range 3 {
		if _, err := r.Roots(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Errorf("source asked %d times within the TTL, want 1", calls)
	}
	uncached := roots.New(0, src)
	calls = 0
	for range 2 {
		if _, err := uncached.Roots(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 2 {
		t.Errorf("source asked %d times with no TTL, want 2", calls)
	}
}

// TestFailingSource: a failing source is reported and its last good list
// stands in; the other sources keep working; only when every source fails
// with nothing to fall back on does Resolve fail.
func TestFailingSource(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	boom := errors.New("database down")
	fail := false
	flaky := func(context.Context) ([]string, error) {
		if fail {
			return nil, boom
		}
		return []string{proj}, nil
	}
	var reported []error
	r := roots.New(0, roots.Static(home), flaky).OnError(func(_ context.Context, err error) { reported = append(reported, err) })
	ctx := context.Background()
	if _, err := r.Resolve(ctx, proj+"/x"); err != nil {
		t.Fatalf("before the failure: %v", err)
	}
	fail = true
	if _, err := r.Resolve(ctx, proj+"/x"); err != nil {
		t.Errorf("the last good list does not stand in: %v", err)
	}
	if _, err := r.Resolve(ctx, home+"/x"); err != nil {
		t.Errorf("the other source stopped working: %v", err)
	}
	if len(reported) != 2 || !errors.Is(reported[0], boom) {
		t.Errorf("reported %v, want the failure twice", reported)
	}

	never := roots.New(0, func(context.Context) ([]string, error) { return nil, boom })
	if _, err := never.Resolve(ctx, "/tmp"); !errors.Is(err, boom) {
		t.Errorf("every source failing: got %v, want the error", err)
	}
	partial := roots.New(0, roots.Static(home), func(context.Context) ([]string, error) { return nil, boom })
	if _, err := partial.Resolve(ctx, home+"/x"); err != nil {
		t.Errorf("one source failing from the start: %v", err)
	}
}

func TestHomeSource(t *testing.T) {
	dir := t.TempDir()
	r := roots.New(0, roots.Home(func() (string, error) { return dir, nil }))
	if _, err := r.Resolve(context.Background(), dir+"/x"); err != nil {
		t.Errorf("home file refused: %v", err)
	}
}

func TestSplitList(t *testing.T) {
	got := roots.SplitList("/a::relative:/b/c:")
	if len(got) != 2 || got[0] != "/a" || got[1] != "/b/c" {
		t.Errorf("SplitList = %q, want [/a /b/c]", got)
	}
}
