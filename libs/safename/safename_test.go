package safename

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"report.pdf", "report.pdf"},
		{"../../etc/passwd", "passwd"},
		{`C:\Users\me\shot 1.png`, "shot 1.png"},
		{"..", "file"},
		{".hidden. ", "hidden"},
		{"a;b|c$d.txt", "a_b_c_d.txt"},
		{"///", "file"},
		{"***", "file"},
		{"été.md", "été.md"},
	} {
		if got := Clean(c.in, 120); got != c.want {
			t.Errorf("Clean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	long := strings.Repeat("é", 100) + ".tar"
	got := Clean(long, 120)
	if len(got) > 120 || !utf8.ValidString(got) || !strings.HasSuffix(got, ".tar") {
		t.Errorf("Clean(long) = %q (%d bytes)", got, len(got))
	}
}
