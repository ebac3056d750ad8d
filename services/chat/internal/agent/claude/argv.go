package claude

import (
	"slices"
	"strings"
)

// Names of this provider.
const (
	// Name is the provider's name in the API.
	Name = "agent-sdk"
	// DisplayName is shown to users.
	DisplayName = "Claude Code"
	// DefaultProgram is looked up on PATH when no executable is configured.
	DefaultProgram = "claude"
	// PathName is the {name} of PUT /api/app/provider-path/{name}.
	PathName = "claude"
	// SDKVersion is the Claude Agent SDK release whose launch and protocol
	// this package reproduces; it is passed as CLAUDE_AGENT_SDK_VERSION.
	SDKVersion = "0.3.330"
)

// Permission modes the CLI accepts.
const (
	ModeDefault           = "default"
	ModeAcceptEdits       = "acceptEdits"
	ModeBypassPermissions = "bypassPermissions"
	ModePlan              = "plan"
	ModeDontAsk           = "dontAsk"
	ModeAuto              = "auto"
)

// PermissionModes lists the modes SetPermissionMode accepts.
var PermissionModes = []string{ModeDefault, ModeAcceptEdits, ModeBypassPermissions, ModePlan, ModeDontAsk, ModeAuto}

// ValidMode reports whether mode is one of PermissionModes.
func ValidMode(mode string) bool { return slices.Contains(PermissionModes, mode) }

// Launch is what one process is started with.
type Launch struct {
	Model          string
	PermissionMode string
	Resume         string   // the CLI session id to continue, or ""
	ForkSession    bool     // continue Resume as a new session (--fork-session)
	ExtraArgs      []string // appended as given
}

// Args builds the CLI's argv (without the program) the way the TypeScript
// Agent SDK does, with every value in one --flag=value token (claude.md §1):
//
//	--output-format=stream-json --verbose --input-format=stream-json
//	[--model=M] --permission-prompt-tool=stdio --permission-mode=MODE
//	[--allow-dangerously-skip-permissions] [--resume=ID [--fork-session]] [extra...]
//
// --permission-prompt-tool=stdio routes permission asks over the control
// protocol; the bypass allow flag is added only when the mode is
// bypassPermissions (the CLI refuses that mode without it).
func Args(l Launch) []string {
	mode := l.PermissionMode
	if mode == "" {
		mode = ModeDefault
	}
	args := []string{"--output-format=stream-json", "--verbose", "--input-format=stream-json"}
	if l.Model != "" {
		args = append(args, "--model="+l.Model)
	}
	args = append(args, "--permission-prompt-tool=stdio", "--permission-mode="+mode)
	if mode == ModeBypassPermissions {
		args = append(args, "--allow-dangerously-skip-permissions")
	}
	if l.Resume != "" {
		args = append(args, "--resume="+l.Resume)
		if l.ForkSession {
			args = append(args, "--fork-session")
		}
	}
	return append(args, l.ExtraArgs...)
}

// Env builds the CLI's environment from base (the server's), as the
// TypeScript SDK does: NODE_OPTIONS and CLAUDECODE removed, DEBUG removed
// unless DEBUG_CLAUDE_AGENT_SDK is set, CLAUDE_CODE_ENTRYPOINT=sdk-ts,
// CLAUDE_AGENT_SDK_VERSION and CLAUDE_CODE_SDK_READS_SESSION_STATE=1 added;
// then extra. When the process runs as root (euid 0) in bypassPermissions,
// IS_SANDBOX=1 is added, without which the CLI refuses to start (§1).
func Env(base, extra []string, mode string, euid int) []string {
	keepDebug := false
	for _, kv := range base {
		if strings.HasPrefix(kv, "DEBUG_CLAUDE_AGENT_SDK=") {
			keepDebug = true
		}
	}
	env := make([]string, 0, len(base)+len(extra)+4)
	for _, kv := range base {
		key, _, _ := strings.Cut(kv, "=")
		switch {
		case key == "NODE_OPTIONS", key == "CLAUDECODE":
			continue
		case key == "DEBUG" && !keepDebug:
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"CLAUDE_CODE_ENTRYPOINT=sdk-ts",
		"CLAUDE_AGENT_SDK_VERSION="+SDKVersion,
		"CLAUDE_CODE_SDK_READS_SESSION_STATE=1",
	)
	env = append(env, extra...)
	if euid == 0 && mode == ModeBypassPermissions {
		env = append(env, "IS_SANDBOX=1")
	}
	return env
}
