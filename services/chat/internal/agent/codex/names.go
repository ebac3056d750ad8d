package codex

import (
	"slices"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// Names of this provider.
const (
	// Name is the provider's name in the API.
	Name = "app-server"
	// DisplayName is shown to users.
	DisplayName = "Codex"
	// DefaultProgram is looked up on PATH when no executable is configured.
	DefaultProgram = "codex"
	// PathName is the {name} of PUT /api/app/provider-path/{name}.
	PathName = "codex"
	// ProtocolVersion is the @openai/codex release whose app-server
	// protocol this package speaks.
	ProtocolVersion = "0.169.0"
	// ClientName is our clientInfo.name in initialize (Codex sends it as
	// the originator header of its model requests).
	ClientName = "svc_code"
)

// Capabilities of the app-server provider: no live controls (interrupt is
// a signal, a mode change needs a respawn), image input, thread resume.
var Capabilities = agent.Caps{LiveControls: false, Images: true, Resume: true}

// Permission modes, the same names as the agent-sdk provider's.
const (
	ModeDefault           = "default"
	ModeAcceptEdits       = "acceptEdits"
	ModeBypassPermissions = "bypassPermissions"
	ModePlan              = "plan"
)

// PermissionModes lists the modes SetPermissionMode accepts.
var PermissionModes = []string{ModeDefault, ModeAcceptEdits, ModeBypassPermissions, ModePlan}

// ValidMode reports whether mode is one of PermissionModes.
func ValidMode(mode string) bool { return slices.Contains(PermissionModes, mode) }

// Codex approval policies (thread/start approvalPolicy).
const (
	PolicyUntrusted = "untrusted"
	PolicyOnRequest = "on-request"
	PolicyNever     = "never"
)

// ApprovalPolicies lists the approval policies a setting may name.
var ApprovalPolicies = []string{PolicyUntrusted, PolicyOnRequest, PolicyNever}

// Codex sandbox modes (thread/start sandbox).
const (
	SandboxReadOnly       = "read-only"
	SandboxWorkspaceWrite = "workspace-write"
	SandboxFullAccess     = "danger-full-access"
)

// SandboxModes lists the sandbox modes a setting may name.
var SandboxModes = []string{SandboxReadOnly, SandboxWorkspaceWrite, SandboxFullAccess}

// Policy is what a permission mode means to Codex.
type Policy struct {
	ApprovalPolicy string `json:"approval_policy"`
	Sandbox        string `json:"sandbox"`
}

// PolicyFor maps a permission mode to Codex's approval policy and sandbox
// (decisions.md, "Chat details"):
//
//	default           untrusted   workspace-write   (asks before commands and edits)
//	acceptEdits       on-request  workspace-write   (runs sandboxed, asks to escalate)
//	bypassPermissions never       danger-full-access
//	plan              untrusted   read-only
//
// override, when its fields are set, replaces the mapping of the default
// mode (the provider-defaults setting of app-server); the other modes are
// explicit choices and keep their mapping. An unknown mode maps like
// default.
func PolicyFor(mode string, override Policy) Policy {
	switch mode {
	case ModeAcceptEdits:
		return Policy{PolicyOnRequest, SandboxWorkspaceWrite}
	case ModeBypassPermissions:
		return Policy{PolicyNever, SandboxFullAccess}
	case ModePlan:
		return Policy{PolicyUntrusted, SandboxReadOnly}
	}
	p := Policy{PolicyUntrusted, SandboxWorkspaceWrite}
	if override.ApprovalPolicy != "" {
		p.ApprovalPolicy = override.ApprovalPolicy
	}
	if override.Sandbox != "" {
		p.Sandbox = override.Sandbox
	}
	return p
}
