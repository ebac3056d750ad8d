// Package helpers packages svc-code's companion helpers: the shadow-git and
// shadow-query command-line scripts, the shadow-git-helper agent template
// and the install script that puts them in the user's home. The files live
// beside this source so that the install script can be run from a checkout
// as it is; shadow embeds them from here to install them over HTTP
// (POST /api/app/helpers/install) and to report their freshness by content
// hash (GET /api/app/helpers/status).
package helpers

import "embed"

// Files holds the packaged helpers, by their names in this directory.
//
//go:embed shadow-git shadow-query shadow-git-helper.md install.sh
var Files embed.FS

// Kind tells where a helper is installed.
type Kind int

// The kinds of helpers.
const (
	// CLI is a bash script installed, executable, to ~/.local/bin (with a
	// .cmd wrapper beside it on Windows when a bash is found).
	CLI Kind = iota + 1
	// AgentTemplate is a Markdown agent definition installed to the agents
	// directory of the agent's config directory ($CLAUDE_CONFIG_DIR, else
	// ~/.claude).
	AgentTemplate
)

// Helper is one installable helper.
type Helper struct {
	// Name is the file's name in Files and its installed name.
	Name string
	Kind Kind
}

// Installed lists what install.sh and the install route put in place, in
// the order they report it.
var Installed = []Helper{
	{Name: "shadow-git", Kind: CLI},
	{Name: "shadow-query", Kind: CLI},
	{Name: "shadow-git-helper.md", Kind: AgentTemplate},
}
