// Package codex is the "app-server" provider: it runs `codex app-server` and
// speaks its JSON-RPC line protocol on stdio (shared/protocols/codex.md,
// recorded against @openai/codex 0.169.0).
//
// One Provider owns one chat session's app-server process. A process is
// started with `codex app-server`, gets initialize / initialized, then
// thread/start (cwd, approvalPolicy, sandbox, model), thread/resume (the
// thread id of an earlier process, kept as the session's provider session
// id) or thread/fork (the first launch of a forked session), and stays warm
// between turns. A turn is turn/start with text and image input items.
//
// A single goroutine reads stdout with no line-length cap and routes each
// line by its shape: an id without a method is the response to one of our
// requests (our ids are strings, "c1", "c2", ..., so they never collide with
// the server's own integer ids); a method with an id is a server request,
// always answered (approvals become agent.PermissionRequest, anything else
// gets a JSON-RPC error); a method alone is a notification. Unknown methods
// and fields are tolerated. Every line is reported (agent.Control for the
// protocol's own lines, agent.RawOutput for what is not a JSON object), and
// what the turn produced is translated into the same provider-neutral
// agent-shaped messages the agent-sdk provider passes through: system/init
// when a turn starts, assistant text and tool_use blocks, user tool_result
// blocks, and one result per turn with usage, model, duration and a cost
// computed from a price table (Codex reports none; see Prices). An item
// the user declined also gives a system/permission_denied message and an
// entry of the result's permission_denials, as a refused permission does
// in Claude Code. A command still running when its turn completes is a
// background command, reported as agent.Command until it ends (commands.go).
//
// Interrupt follows the interface's rule for a line-protocol provider:
// SIGINT to the process group, SIGKILL KillDelay later; the turn it cut
// short still ends with a result (its tokens and cost so far), and the next
// turn respawns the process and resumes the thread. SetPermissionMode always
// answers next_turn: the new mode (mapped to an approval policy and a
// sandbox, see Policy) applies when the idle process is respawned for the
// next turn.
//
// A misbehaving process never hangs the session: a process that closes its
// stdout but lives on is killed (nothing it says can reach us), Close ends
// the process before waiting for a launch in progress (a handshake nobody
// answers), and a resume refused only because Codex is overloaded (-32001)
// fails the launch instead of replacing the thread.
package codex
