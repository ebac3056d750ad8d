// Package providers is chat's provider catalog: the providers a session can
// be bound to, their capabilities, the permission modes the API accepts,
// and where each one's executable is found (a configured path, else its
// default program on PATH). It describes providers; running them is
// internal/agent's job.
package providers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/agent/claude"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex"
)

// Names of the providers.
const (
	AgentSDK  = claude.Name // "agent-sdk", the default
	AppServer = codex.Name  // "app-server": Codex's app-server, a line protocol
)

// Default is the provider of a session created without one.
const Default = AgentSDK

// Permission modes every provider accepts (decisions.md maps each to
// Codex's approval policy and sandbox).
const (
	ModeDefault           = claude.ModeDefault
	ModeAcceptEdits       = claude.ModeAcceptEdits
	ModeBypassPermissions = claude.ModeBypassPermissions
	ModePlan              = claude.ModePlan
)

// PermissionModes lists the modes a session can be set to.
var PermissionModes = []string{ModeDefault, ModeAcceptEdits, ModeBypassPermissions, ModePlan}

// ValidMode reports whether mode is one of PermissionModes.
func ValidMode(mode string) bool { return slices.Contains(PermissionModes, mode) }

// Provider describes one provider.
type Provider struct {
	// Name is its name in the API ("agent-sdk").
	Name string
	// DisplayName is shown to users ("Claude Code").
	DisplayName string
	// Program is looked up on PATH when no path is configured ("claude");
	// it is also the {name} of /api/app/provider-path/{name}.
	Program string
	Caps    agent.Caps
}

// Catalog lists every provider, the default first.
var Catalog = []Provider{
	{Name: AgentSDK, DisplayName: claude.DisplayName, Program: claude.PathName, Caps: claude.Capabilities},
	// app-server: `codex app-server` over JSON-RPC lines (shared/protocols/codex.md):
	// interrupts and mode changes are not live (SIGINT, respawn), images
	// go as image items, thread/resume continues a conversation.
	{Name: AppServer, DisplayName: codex.DisplayName, Program: codex.PathName, Caps: codex.Capabilities},
}

// Lookup returns the provider named name.
func Lookup(name string) (Provider, bool) {
	i := slices.IndexFunc(Catalog, func(p Provider) bool { return p.Name == name })
	if i < 0 {
		return Provider{}, false
	}
	return Catalog[i], true
}

// ByProgram returns the provider whose Program is program.
func ByProgram(program string) (Provider, bool) {
	i := slices.IndexFunc(Catalog, func(p Provider) bool { return p.Program == program })
	if i < 0 {
		return Provider{}, false
	}
	return Catalog[i], true
}

// Errors of CheckExecutable.
var (
	ErrNotAbsolute   = errors.New("not an absolute path")
	ErrNotExecutable = errors.New("not an executable file")
)

// CheckExecutable reports whether path, an absolute path, names an
// existing regular file (symlinks followed) that someone may execute.
func CheckExecutable(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%s: %w", path, ErrNotAbsolute)
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s: %w", path, ErrNotExecutable)
	}
	return nil
}

// Resolve finds the executable of p: configured when set (it must still be
// executable), else p.Program looked up with lookPath (exec.LookPath).
// resolved is what was found or, on failure, what was looked for.
func (p Provider) Resolve(configured string, lookPath func(string) (string, error)) (resolved string, err error) {
	if configured != "" {
		return configured, CheckExecutable(configured)
	}
	found, err := lookPath(p.Program)
	if err != nil {
		return p.Program, err
	}
	if abs, aerr := filepath.Abs(found); aerr == nil {
		found = abs
	}
	return found, nil
}
