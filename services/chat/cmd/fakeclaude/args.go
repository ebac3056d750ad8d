package main

import (
	"fmt"
	"strings"
)

// options are the CLI flags the fake acts on.
type options struct {
	outputFormat         string
	inputFormat          string
	verbose              bool
	permissionPromptTool string
	permissionMode       string
	model                string
	resume               string
	forkSession          bool // --fork-session: a new session id for the resumed conversation
	sessionID            string
	allowDangerous       bool // --allow-dangerously-skip-permissions
	skipPermissions      bool // --dangerously-skip-permissions
	includePartial       bool
	print                bool
	ignored              []string
}

// valueFlags take a value, as --flag=value or --flag value.
var valueFlags = map[string]bool{
	"--output-format": true, "--input-format": true, "--permission-prompt-tool": true,
	"--permission-mode": true, "--model": true, "--fallback-model": true, "--resume": true,
	"--session-id": true, "--resume-session-at": true, "--max-turns": true,
	"--max-budget-usd": true, "--effort": true, "--thinking": true, "--max-thinking-tokens": true,
	"--allowedTools": true, "--disallowedTools": true, "--tools": true, "--add-dir": true,
	"--mcp-config": true, "--setting-sources": true, "--system-prompt": true,
	"--append-system-prompt": true,
}

// parseArgs reads argv the way the CLI accepts it. A later flag wins over an
// earlier one (the transcripts' bypass runs pass --permission-mode twice).
func parseArgs(args []string) (options, error) {
	o := options{permissionMode: "default"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		if !hasValue && valueFlags[name] {
			// --resume takes an optional value: a following flag is not it.
			if i+1 < len(args) && (name != "--resume" || !strings.HasPrefix(args[i+1], "-")) {
				i++
				value, hasValue = args[i], true
			}
		}
		switch name {
		case "--output-format":
			o.outputFormat = value
		case "--input-format":
			o.inputFormat = value
		case "--verbose":
			o.verbose = true
		case "--permission-prompt-tool":
			o.permissionPromptTool = value
		case "--permission-mode":
			o.permissionMode = value
		case "--model":
			o.model = value
		case "--resume":
			o.resume = value
		case "--fork-session":
			o.forkSession = true
		case "--session-id":
			o.sessionID = value
		case "--allow-dangerously-skip-permissions":
			o.allowDangerous = true
		case "--dangerously-skip-permissions":
			o.skipPermissions = true
		case "--include-partial-messages":
			o.includePartial = true
		case "-p", "--print":
			o.print = true
		default:
			if !strings.HasPrefix(a, "-") {
				return o, fmt.Errorf("unexpected argument %q (this fake takes prompts on stdin only)", a)
			}
			o.ignored = append(o.ignored, a)
		}
		if valueFlags[name] && !hasValue && name != "--resume" {
			return o, fmt.Errorf("option '%s' argument missing", name)
		}
	}
	switch {
	case o.outputFormat != "stream-json":
		return o, fmt.Errorf("this fake supports only --output-format=stream-json, got %q", o.outputFormat)
	case o.inputFormat != "stream-json":
		return o, fmt.Errorf("this fake supports only --input-format=stream-json, got %q", o.inputFormat)
	case !o.verbose:
		return o, fmt.Errorf("--output-format=stream-json requires --verbose")
	case !validMode(o.permissionMode):
		return o, fmt.Errorf("invalid permission mode %q", o.permissionMode)
	}
	return o, nil
}

var permissionModes = []string{"acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"}

func validMode(m string) bool {
	for _, x := range permissionModes {
		if x == m {
			return true
		}
	}
	return false
}
