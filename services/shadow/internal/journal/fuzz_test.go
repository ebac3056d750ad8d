package journal

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzRelPath: whatever a client sends, an accepted path stays inside the
// project, is clean, and never reaches into .git.
func FuzzRelPath(f *testing.F) {
	for _, s := range []string{"a.txt", "../x", "/etc/passwd", "a/../../b", ".git/config", "a/.GIT/x", "./a//b/", "a\x00b", "/root/proj/a", ""} {
		f.Add(s)
	}
	const root = "/root/proj"
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := RelPath(root, p)
		if err != nil {
			return
		}
		if rel == "" || strings.HasPrefix(rel, "/") || rel != filepath.ToSlash(filepath.Clean(rel)) {
			t.Fatalf("RelPath(%q) = %q: not a clean relative path", p, rel)
		}
		for _, part := range strings.Split(rel, "/") {
			if part == ".." || strings.EqualFold(part, ".git") {
				t.Fatalf("RelPath(%q) = %q: escapes or enters .git", p, rel)
			}
		}
		if !strings.HasPrefix(filepath.Join(root, rel), root+"/") {
			t.Fatalf("RelPath(%q) = %q: outside the root", p, rel)
		}
	})
}

// FuzzCheckRevision: an accepted revision can never be read as an option
// or a range, and holds no whitespace or control characters.
func FuzzCheckRevision(f *testing.F) {
	for _, s := range []string{"HEAD", "session/s1~2", "-p", "--output=/x", "a..b", "a b", "v1^{tree}", "HEAD@{1}", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rev string) {
		if CheckRevision(rev) != nil {
			return
		}
		if strings.HasPrefix(rev, "-") || strings.Contains(rev, "..") || strings.ContainsAny(rev, " \t\n\r\x00") {
			t.Fatalf("CheckRevision accepted %q", rev)
		}
	})
}

func TestTrailersRoundTrip(t *testing.T) {
	m := message{
		Kind: KindUndo, Session: "s1", Turn: 4, TurnID: "s1:9", Undoes: "abc",
		Prompt: "Shadow-Kind: fake\nsecond line", Changes: []Change{{"M", "a.txt"}},
	}
	msg := m.String()
	if !strings.HasPrefix(msg, "undo turn 4: Shadow-Kind: fake\n\n") {
		t.Errorf("subject: %q", msg)
	}
	last := msg[strings.LastIndex(strings.TrimRight(msg, "\n"), "\n\n")+2:]
	got := parseTrailers(last)
	want := Trailers{Kind: KindUndo, Session: "s1", Turn: 4, TurnID: "s1:9", Undoes: "abc"}
	if got != want {
		t.Errorf("trailers = %+v, want %+v", got, want)
	}
	long := message{Kind: KindTurn, Turn: 1, Prompt: strings.Repeat("é", 200)}
	if s := long.subject(); len([]rune(s)) != maxSubjectRunes || !strings.HasSuffix(s, "…") {
		t.Errorf("long subject = %q", s)
	}
}

// TestTurnIDCannotForgeTrailers: a turn id from the stream is one trailer
// value; a line break in it must not add a trailer (a forged Shadow-Undoes
// would hide a turn from undo).
func TestTurnIDCannotForgeTrailers(t *testing.T) {
	m := message{Kind: KindTurn, Session: "s1", Turn: 2, TurnID: "s1:2\nShadow-Undoes: abc\r\nShadow-Kind: undo"}
	msg := m.String()
	last := msg[strings.LastIndex(strings.TrimRight(msg, "\n"), "\n\n")+2:]
	got := parseTrailers(last)
	if got.Kind != KindTurn || got.Undoes != "" || got.Session != "s1" || got.Turn != 2 {
		t.Errorf("trailers = %+v from %q", got, msg)
	}
}
