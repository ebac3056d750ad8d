// Command fakeclaude is a stand-in for the Claude Code CLI in stream-json
// mode, for tests: it takes the argv the agent-sdk provider builds, speaks
// the same NDJSON protocol on stdin and stdout, line for line as the recorded
// transcripts of Claude Code 2.1.330 show (shared/protocols/claude.md), and
// plays scripted turns instead of calling a model.
//
// # Protocol
//
// Flags are read in --flag=value and --flag value form: --output-format and
// --input-format (must be stream-json), --verbose (required),
// --permission-prompt-tool (stdio routes asks over the control protocol;
// without it asks are denied as the CLI does), --permission-mode, --model,
// --resume=<id> (the session keeps that id), --session-id,
// --allow-dangerously-skip-permissions, --dangerously-skip-permissions,
// --include-partial-messages (stream_event output for SLOW), -p; others are
// accepted and ignored. As the CLI does, bypassPermissions as root without
// IS_SANDBOX=1 prints "--dangerously-skip-permissions cannot be used with
// root/sudo privileges for security reasons" on stderr and exits 1.
//
// Control requests from the host: initialize (answered with the CLI's
// payload shape), interrupt (acknowledged with {"still_queued":[]}, the turn
// then aborts as the CLI's does), set_permission_mode (acknowledged, then a
// system/status carrying permissionMode; invalid_mode and bypass_not_launched
// errors as the CLI), set_model; any other subtype gets an
// unsupported_request error. Every turn starts with system/init and ends with
// exactly one result carrying total_cost_usd (cumulative), usage (per turn),
// modelUsage and model_usage_since_last_result. A user message sent during a
// turn is queued. EOF on stdin ends the session after the running turn (an
// ask still pending then fails with "Tool permission request failed:
// AbortError: Stream closed", as the CLI's does): exit 0 if the last result
// succeeded, else 1.
//
// # Scripts
//
// The first word of a prompt picks the script (an optional number after it
// is a parameter); FAKECLAUDE_SCRIPT names the script for prompts that start
// with no keyword; otherwise the reply is "Hello from the fake model.".
//
//	(none)            one assistant text message, result success
//	SLOW [n]          n chunks (default FAKECLAUDE_CHUNKS, 10), FAKECLAUDE_DELAY
//	                  apart (default 100ms): assistant messages, or with
//	                  --include-partial-messages stream_event deltas; honours
//	                  interrupt: ack, aborted assistant, "[Request interrupted
//	                  by user]", result error_during_execution/aborted_streaming
//	CODE              the same stream (FAKECLAUDE_DELAY apart) of three
//	                  messages: text, a fenced go code block, text
//	FLOOD [n]         the same stream of n chunks (default 500), 20 ms apart
//	                  (50 a second) whatever FAKECLAUDE_DELAY says
//	RUN_BASH          assistant text and Bash tool_use, then can_use_tool with
//	                  addRules and addDirectories suggestions; allow runs it
//	                  (tool result "hello-from-bash", or "ran: <command>" for
//	                  an updatedInput command), applies updatedPermissions
//	                  (addRules allow: no more asks for that tool; setMode:
//	                  switches mode with a system/status); deny gives an error
//	                  tool result and permission_denials (interrupt:true aborts
//	                  the turn); interrupt during the ask sends
//	                  control_cancel_request, then aborted_tools
//	WRITE_FILE        the same with Write to /tmp/hello.txt and setMode
//	                  acceptEdits + addDirectories suggestions (nothing is
//	                  written; acceptEdits mode allows it without asking)
//	EDIT_THREE [n] [after=<path>]
//	                  writes edit-a.txt and edit-b.txt (Write) and edit-c.txt
//	                  (a Bash command run by sh) in its working directory,
//	                  each "<name> version <n>", without asking; with after=,
//	                  once that file exists (edits.go)
//	IGNORE_INTERRUPT  streams a chunk every FAKECLAUDE_DELAY for up to a
//	                  minute and never answers interrupt; SIGINT kills it
//	IGNORE_SIGINT     the same, and SIGINT is ignored too (only SIGKILL works)
//	/compact, COMPACT manual compaction: system/status compacting, status with
//	                  compact_result, init, compact_boundary, the summary and
//	                  the replayed "Compacted" user messages, result num_turns 0
//	AUTO_COMPACT      an automatic compaction (trigger auto), then a text reply
//	CRASH [code]      an assistant message, a stderr line, exit code (3) mid-turn
//	FAIL500           system/api_retry, the synthetic API-error assistant
//	                  message, result is_error true with api_error_status 500
//	RAW               a non-JSON line on stdout, then a text reply
//	BIG [bytes]       an assistant message (and result) with a text of bytes
//	                  (default 102400) characters
//	STDERR            three lines on stderr, then a text reply
//	ECHO              replies with what it received: text and image blocks
//	ENV               replies with the names of its environment variables,
//	                  sorted, one per line
//	HOOK              sends the host a hook_callback control request and
//	                  replies "host answered <subtype>: <error>"
//
// In bypassPermissions mode tools run without asking; in dontAsk mode, or
// without --permission-prompt-tool=stdio, asks are denied with
// system/permission_denied.
//
// # Environment
//
//	FAKECLAUDE_LOG       append a transcript ({dt, dir, msg} lines, dir
//	                     meta/in/out/stderr, as in shared/protocols) to this file
//	FAKECLAUDE_DELAY     chunk delay (Go duration), default 100ms
//	FAKECLAUDE_CHUNKS    default chunk count of SLOW, default 10
//	FAKECLAUDE_SET_MODE  ack (default), nack (error reply) or ignore (no reply)
//	                     for set_permission_mode
//	FAKECLAUDE_SCRIPT    the script of prompts without a keyword
//	FAKECLAUDE_VERSION   claude_code_version reported, default 2.1.330
//	FAKECLAUDE_STATE_DIR keep each session's cost totals in <dir>/<id>.json;
//	                     --resume then continues them (total_cost_usd and
//	                     modelUsage stay cumulative, as the CLI's) and refuses
//	                     an unknown id ("No conversation found with session
//	                     ID: <id>", exit 1)
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
