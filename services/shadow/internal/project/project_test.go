package project

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/svc-code/svc-code/libs/protocol"
)

func TestHash(t *testing.T) {
	// echo -n /home/u/proj | sha256sum → first 16 hex characters
	if got, want := Hash("/home/u/proj"), "9c09f8055a26c277"; got != want {
		t.Fatalf("Hash() = %q, want %q", got, want)
	}
	if Hash("/a") == Hash("/b") {
		t.Error("different paths share a hash")
	}
	for _, s := range []string{"", "0123456789abcdeF", "0123456789abcde", "../../../etc/xx", "0123456789abcdeg"} {
		if ValidHash(s) {
			t.Errorf("ValidHash(%q) = true", s)
		}
	}
}

func TestResolveFollowsSymlinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(target)
	for _, in := range []string{target, link, link + "/", target + "/./x/.."} {
		if got, err := Resolve(in); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestResolveRefuses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, cwd, code string }{
		{"empty", "", protocol.CodeBadRequest},
		{"relative", "some/dir", protocol.CodeBadRequest},
		{"nul", dir + "\x00x", protocol.CodeBadRequest},
		{"missing", filepath.Join(dir, "nope"), protocol.CodeNotFound},
		{"file", file, protocol.CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve(tt.cwd)
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != tt.code {
				t.Errorf("Resolve(%q) error = %v, want code %s", tt.cwd, err, tt.code)
			}
		})
	}
}

type fakeSessions []string

func (f fakeSessions) SessionCwds(context.Context) ([]string, error) { return f, nil }

func TestStoreEnsureUpdateList(t *testing.T) {
	home := t.TempDir()
	work := t.TempDir()
	other := t.TempDir()
	s := NewStore(home, fakeSessions{work, other, "/gone/away"})

	if _, _, err := s.Known(work); !errors.Is(err, ErrUnknown) {
		t.Fatalf("Known before Ensure: %v, want ErrUnknown", err)
	}
	var pe *protocol.Error
	if _, _, err := s.Known(work); !errors.As(err, &pe) || pe.Code != protocol.CodeNotFound {
		t.Fatalf("Known before Ensure: %v, want not_found", err)
	}
	p, m, err := s.Ensure(work)
	if err != nil {
		t.Fatal(err)
	}
	resolved, _ := filepath.EvalSymlinks(work)
	if p.Path != resolved || m.Path != resolved || p.Hash != Hash(resolved) || m.Name != filepath.Base(resolved) {
		t.Fatalf("Ensure = %+v %+v", p, m)
	}
	if p.Journal != filepath.Join(home, "projects", p.Hash, "shadow-git") {
		t.Errorf("Journal = %q", p.Journal)
	}
	if _, err := os.Stat(filepath.Join(p.Dir, MetaFile)); err != nil {
		t.Fatalf("project.json: %v", err)
	}

	size := 3
	m, err = s.Update(p.Hash, func(m *Meta) error {
		m.Name = "My project"
		m.Ignore = []string{"*.log"}
		m.MaxFileSizeMB = &size
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Meta(p.Hash); got.Name != "My project" || *got.MaxFileSizeMB != 3 || got.Ignore[0] != "*.log" {
		t.Errorf("Meta after Update = %+v", got)
	}
	if _, err := s.Update(p.Hash, func(m *Meta) error { m.Name = " "; return nil }); !errors.As(err, &pe) {
		t.Errorf("Update with a blank name: %v, want bad_request", err)
	}
	if got, _ := s.Meta(p.Hash); got.Name != "My project" {
		t.Errorf("a refused Update changed the name to %q", got.Name)
	}

	list, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("List = %+v, want 3 projects", list)
	}
	found := map[string]Listed{}
	for _, l := range list {
		found[l.Path] = l
	}
	if l := found[resolved]; !l.HasJournal || l.Name != "My project" || !l.Exists {
		t.Errorf("journaled project listed as %+v", l)
	}
	if l := found["/gone/away"]; l.HasJournal || l.Exists {
		t.Errorf("vanished session cwd listed as %+v", l)
	}
}

func TestMetaValidate(t *testing.T) {
	neg, big := -1, MaxFileSizeMBLimit+1
	tests := []struct {
		name string
		m    Meta
	}{
		{"empty name", Meta{Name: ""}},
		{"two lines", Meta{Name: "a\nb"}},
		{"negative size", Meta{Name: "a", MaxFileSizeMB: &neg}},
		{"huge size", Meta{Name: "a", MaxFileSizeMB: &big}},
		{"blank pattern", Meta{Name: "a", Ignore: []string{" "}}},
		{"negation", Meta{Name: "a", Ignore: []string{"!keep"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.m.Validate(); err == nil {
				t.Error("Validate() = nil, want an error")
			}
		})
	}
	zero := 0
	if err := (Meta{Name: "ok", Ignore: []string{"dist/"}, MaxFileSizeMB: &zero}).Validate(); err != nil {
		t.Errorf("valid meta refused: %v", err)
	}
}
