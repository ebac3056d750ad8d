package providers_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/svc-code/svc-code/services/chat/internal/providers"
)

func TestCatalog(t *testing.T) {
	tests := []struct {
		name, program string
		live          bool
	}{
		{providers.AgentSDK, "claude", true},
		{providers.AppServer, "codex", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := providers.Lookup(tt.name)
			if !ok {
				t.Fatalf("Lookup(%q) found nothing", tt.name)
			}
			if p.Program != tt.program || p.Caps.LiveControls != tt.live {
				t.Errorf("got program %q live_controls %v, want %q %v", p.Program, p.Caps.LiveControls, tt.program, tt.live)
			}
			if byProgram, ok := providers.ByProgram(tt.program); !ok || byProgram.Name != tt.name {
				t.Errorf("ByProgram(%q) = %q, %v", tt.program, byProgram.Name, ok)
			}
		})
	}
	if _, ok := providers.Lookup("claude"); ok {
		t.Error(`Lookup("claude") found a provider: programs are not provider names`)
	}
	if providers.Catalog[0].Name != providers.Default {
		t.Errorf("the catalog starts with %q, want the default %q", providers.Catalog[0].Name, providers.Default)
	}
}

func TestValidMode(t *testing.T) {
	for mode, want := range map[string]bool{
		"default": true, "acceptEdits": true, "bypassPermissions": true, "plan": true,
		"": false, "dontAsk": false, "Plan": false,
	} {
		if got := providers.ValidMode(mode); got != want {
			t.Errorf("ValidMode(%q) = %v, want %v", mode, got, want)
		}
	}
}

func TestCheckExecutable(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "exe")
	plain := filepath.Join(dir, "plain")
	link := filepath.Join(dir, "link")
	for path, mode := range map[string]os.FileMode{exe: 0o755, plain: 0o644} {
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		want       error
	}{
		{"executable", exe, nil},
		{"symlink to executable", link, nil},
		{"not executable", plain, providers.ErrNotExecutable},
		{"directory", dir, providers.ErrNotExecutable},
		{"missing", filepath.Join(dir, "missing"), fs.ErrNotExist},
		{"relative", "exe", providers.ErrNotAbsolute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := providers.CheckExecutable(tt.path)
			if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	p, _ := providers.Lookup(providers.AgentSDK)
	if got, err := p.Resolve(exe, nil); got != exe || err != nil {
		t.Errorf("Resolve(configured) = %q, %v", got, err)
	}
	if got, err := p.Resolve("", func(string) (string, error) { return exe, nil }); got != exe || err != nil {
		t.Errorf("Resolve on PATH = %q, %v", got, err)
	}
	if got, err := p.Resolve("", func(string) (string, error) { return "", exec.ErrNotFound }); got != "claude" || !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("Resolve not on PATH = %q, %v", got, err)
	}
}
