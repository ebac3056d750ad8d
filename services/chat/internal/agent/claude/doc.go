// Package claude is the "agent-sdk" provider: it runs the Claude Code CLI in
// stream-json mode with the control protocol on stdio, the way the Claude
// Agent SDK drives it (shared/protocols/claude.md).
//
// One Provider owns one chat session's CLI process. The process is launched
// with every option in --flag=value form (Args), gets the initialize control
// request first, keeps its stdin open between turns and stays warm; when it
// has died, the next turn respawns it with --resume=<the CLI's session id>.
// A single goroutine reads stdout with no line-length cap and routes each
// line: control responses to the request waiting for them (by request_id,
// with timeouts), can_use_tool requests to the permission flow, cancels to
// the pending request they withdraw, everything else to the event stream as
// agent.Message, unchanged. Lines that are not JSON objects become
// agent.RawOutput; stderr lines become agent.Stderr.
//
// Interrupt is a control request; if it is not acknowledged in time the
// process group gets SIGINT and, KillDelay later, SIGKILL. SetPermissionMode
// is a control request too, reported live when acknowledged in time and
// next_turn otherwise, in which case the idle process is respawned with the
// new mode on the next turn. Close closes stdin, waits CloseGrace and kills
// the process group.
//
// Parse is the stateless half of the line routing, exported for tests and
// tools that read recorded transcripts.
package claude
