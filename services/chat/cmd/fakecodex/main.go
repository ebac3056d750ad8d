// Command fakecodex is a stand-in for `codex app-server`, for tests: it
// speaks the same JSON-RPC line protocol on stdin and stdout, line for line
// in the shapes the recorded transcripts of @openai/codex 0.169.0 show
// (shared/protocols/codex.md), and plays scripted turns instead of calling
// a model.
//
// # Protocol
//
// The only argument it accepts is `app-server` (then -c key=value pairs,
// ignored). Requests: initialize (any request before it gets "Not
// initialized", a second one "Already initialized"), thread/start,
// thread/resume (an unknown thread is refused when threads are kept, see
// FAKECODEX_STATE_DIR), thread/fork (a new thread id with forkedFromId),
// turn/start (approvalPolicy and sandboxPolicy overrides are kept),
// turn/interrupt (the turn completes "interrupted"); any other method gets
// -32600 "unknown variant". Notifications carry emittedAtMs, as Codex's do.
// EOF on stdin ends the process with status 0 once the running turn has
// ended (a turn waiting for an approval ends interrupted).
// SIGINT is not handled: it ends the process, as a signal does.
//
// # Scripts
//
// The first word of the turn's text picks the script (an optional number
// after it is a parameter); FAKECODEX_SCRIPT names the script for texts that
// start with no keyword; otherwise the reply is "Hello from the fake model.".
//
//	(none)         userMessage item, agentMessage deltas and item, token
//	               usage, turn/completed
//	RUN_SHELL      a commandExecution item; under approval policy untrusted
//	               (or with RUN_SHELL ESCALATE under on-request, with a
//	               reason) the
//	               item/commandExecution/requestApproval request first:
//	               accept / acceptForSession / acceptWithExecpolicyAmendment
//	               run it (output "hello-from-shell"; acceptForSession stops
//	               later asks in this process), decline ends the item
//	               "declined" and the turn goes on, cancel ends the turn
//	               "interrupted"
//	APPLY_PATCH    the same with a fileChange item and
//	               item/fileChange/requestApproval (writes nothing)
//	RESOLVE        an approval request that the server then resolves itself
//	               (serverRequest/resolved without an answer), then a reply
//	SLOW [n]       n deltas (default 10) FAKECODEX_DELAY apart (default
//	               100ms); honours turn/interrupt
//	BACKGROUND [n] a commandExecution item (with a processId) and its
//	               first output delta, then the reply: the turn completes
//	               while the command runs on; n more output deltas
//	               (default 3) follow FAKECODEX_DELAY apart, then its
//	               item/completed (exit code 0)
//	CRASH [code]   an agentMessage delta, a stderr line, then exit code (3)
//	               mid-turn
//	FAIL500        an error notification and turn/completed "failed"
//	REFUSE         turn/start itself is answered with a JSON-RPC error
//	RAW            a non-JSON line on stdout, then a reply
//	UNKNOWN        a notification of an unknown method with unknown fields,
//	               then a reply
//	REQUEST        an item/tool/requestUserInput server request; the reply
//	               says how the host answered it
//	STDERR         three stderr lines, then a reply
//	ECHO           replies with the types of the input items it received
//	ENV NAME       replies NAME=<its value in the environment>; ENV alone,
//	               the names of every variable, sorted, one per line
//
// # Environment
//
//	FAKECODEX_LOG        append a transcript ({dt, dir, msg} lines, dir
//	                     meta/in/out/stderr, as in shared/protocols) to this file
//	FAKECODEX_DELAY      delta delay of SLOW (Go duration), default 100ms
//	FAKECODEX_SCRIPT     the script of texts without a keyword
//	FAKECODEX_MODEL      the model reported when none is asked for
//	                     (default mock-model)
//	FAKECODEX_STATE_DIR  keep threads as <dir>/<id>.json (default
//	                     $CODEX_HOME/fake-threads when CODEX_HOME is set);
//	                     thread/resume then refuses an unknown id, unless
//	                     Codex itself wrote the thread's rollout
//	                     ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-*-<id>.jsonl,
//	                     a session continued from the CLI). Without either,
//	                     any id resumes.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
