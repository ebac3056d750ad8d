package main

import (
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"
)

const helloText = "Hello from the fake model."

// turn is the state of one running turn.
type turn struct {
	f              *fake
	in             userInput
	start          time.Time
	usage          turnUsage
	numTurns       int
	denials        []any
	begun          []any
	stopReason     any
	terminalReason string
}

// keyword splits the script keyword and its numeric parameter off a prompt.
func keyword(text string) (string, int) {
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return "", 0
	}
	n := 0
	if len(fields) > 1 {
		n, _ = strconv.Atoi(fields[1])
	}
	return fields[0], n
}

var scripts = map[string]func(t *turn, arg int){
	"SLOW":             (*turn).slow,
	"CODE":             func(t *turn, _ int) { t.stream(codeChunks, t.f.delay) },
	"FLOOD":            (*turn).flood,
	"RUN_BASH":         func(t *turn, _ int) { t.tool(bashTool(t.f)) },
	"WRITE_FILE":       func(t *turn, _ int) { t.tool(writeTool()) },
	"IGNORE_INTERRUPT": func(t *turn, _ int) { t.hang(false) },
	"IGNORE_SIGINT":    func(t *turn, _ int) { t.hang(true) },
	"/compact":         func(t *turn, _ int) { t.compact() },
	"COMPACT":          func(t *turn, _ int) { t.compact() },
	"AUTO_COMPACT":     func(t *turn, _ int) { t.autoCompact() },
	"CRASH":            (*turn).crash,
	"FAIL500":          func(t *turn, _ int) { t.fail500() },
	"RAW":              func(t *turn, _ int) { t.raw() },
	"BIG":              (*turn).big,
	"STDERR":           func(t *turn, _ int) { t.stderr() },
	"ECHO":             func(t *turn, _ int) { t.echo() },
	"HOOK":             func(t *turn, _ int) { t.hostRequest() },
	"ENV":              func(t *turn, _ int) { t.text(envNames()) },
}

// envNames is the names of the process' environment variables, sorted, one
// per line: what the host let through to the agent (values stay out of
// the log).
func envNames() string {
	names := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, "\n")
}

func (f *fake) runTurn(in userInput) {
	f.mu.Lock()
	f.turnActive = true
	f.ignoreInterrupt = false
	f.mu.Unlock()
	defer f.endTurn()

	t := &turn{f: f, in: in, start: time.Now(), denials: []any{}}
	word, arg := keyword(in.text)
	script, ok := scripts[word]
	if !ok {
		script, ok = scripts[f.getenv("FAKECLAUDE_SCRIPT")]
	}
	if !ok {
		t.text(helloText)
		return
	}
	script(t, arg)
}

// endTurn acknowledges interrupts that came too late to abort anything.
func (f *fake) endTurn() {
	f.mu.Lock()
	f.turnActive = false
	f.ignoreInterrupt = false
	f.mu.Unlock()
	for {
		select {
		case id := <-f.interrupts:
			f.controlSuccess(id, map[string]any{"still_queued": []any{}})
		default:
			return
		}
	}
}

// pause waits d, or less if an interrupt arrives; it returns its id.
func (t *turn) pause(d time.Duration) (string, bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case id := <-t.f.interrupts:
		return id, true
	case <-timer.C:
		return "", false
	}
}

func (t *turn) ackInterrupt(id string) {
	t.f.controlSuccess(id, map[string]any{"still_queued": []any{}})
}

// text is the plain reply: init, one assistant text message, result.
func (t *turn) text(reply string) {
	f := t.f
	f.out.json(f.systemInit())
	f.out.json(f.assistant(f.newCall(), textBlock(reply)))
	t.usage = turnUsage{calls: 1, reportCalls: 1}
	t.numTurns = 1
	f.out.json(f.result(t, resultSuccess, reply))
}

func chunkText(i int) string {
	if i == 0 {
		return "This"
	}
	return fmt.Sprintf(" chunk %d", i+1)
}

// slow streams n chunks, FAKECLAUDE_DELAY apart, and honours interrupts.
func (t *turn) slow(n int) {
	if n <= 0 {
		n = t.f.chunks
	}
	chunks := make([]string, n)
	for i := range chunks {
		chunks[i] = chunkText(i)
	}
	t.stream(chunks, t.f.delay)
}

// codeChunks is CODE's reply: a Markdown text with a fenced Go block, in three
// assistant messages as the CLI sends them without --include-partial-messages
// (each a whole text block; with it, the deltas split them further).
var codeChunks = []string{
	"Here is the function:\n\n",
	"```go\nfunc add(a, b int) int {\n\treturn a + b\n}\n```\n",
	"It adds two numbers.",
}

// floodDelay is FLOOD's pace: 50 messages a second.
const floodDelay = 20 * time.Millisecond

// flood streams n chunks (default 500), 20 ms apart, whatever
// FAKECLAUDE_DELAY says: the UI benchmark's steady stream.
func (t *turn) flood(n int) {
	if n <= 0 {
		n = 500
	}
	chunks := make([]string, n)
	for i := range chunks {
		chunks[i] = fmt.Sprintf("Line %d of %d: the agent keeps **talking**, with `code` now and then.\n", i+1, n)
	}
	t.stream(chunks, floodDelay)
}

// stream sends chunks delay apart as one streamed reply (assistant
// messages, or stream_event deltas with --include-partial-messages), and
// honours interrupts.
func (t *turn) stream(chunks []string, delay time.Duration) {
	f := t.f
	f.out.json(f.systemInit())
	c := f.newCall()
	var text string
	if f.opts.includePartial {
		f.out.json(f.status("requesting", nil))
		f.out.json(f.streamEvent(c, map[string]any{"type": "message_start", "message": map[string]any{
			"id": c.msgID, "type": "message", "role": "assistant", "model": f.currentModel(), "content": []any{},
			"stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": callInputTokens, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
		}}, map[string]any{"ttft_ms": 15, "thinking_display": "updates"}))
		f.out.json(f.streamEvent(c, map[string]any{"type": "content_block_start", "index": 0, "content_block": textBlock("")}, nil))
	}
	for i, chunk := range chunks {
		if i > 0 {
			if id, ok := t.pause(delay); ok {
				t.abortStream(id, c, text)
				return
			}
		}
		text += chunk
		if f.opts.includePartial {
			f.out.json(f.streamEvent(c, map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": chunk}}, nil))
		} else {
			f.out.json(f.assistant(c, textBlock(chunk)))
		}
	}
	if f.opts.includePartial {
		f.out.json(f.streamEvent(c, map[string]any{"type": "content_block_stop", "index": 0}, nil))
		f.out.json(f.assistant(c, textBlock(text)))
		f.out.json(f.streamEvent(c, messageDelta("end_turn", callOutputTokens), nil))
		f.out.json(f.streamEvent(c, map[string]any{"type": "message_stop"}, nil))
	}
	t.usage = turnUsage{calls: 1, reportCalls: 1}
	t.numTurns = 1
	f.out.json(f.result(t, resultSuccess, text))
}

func messageDelta(stopReason any, outputTokens int) map[string]any {
	return map[string]any{
		"type":               "message_delta",
		"context_management": nil,
		"delta":              map[string]any{"container": nil, "stop_details": nil, "stop_reason": stopReason, "stop_sequence": nil},
		"usage": map[string]any{
			"output_tokens_details": map[string]any{"thinking_tokens": 0}, "cache_creation_input_tokens": 0,
			"cache_read_input_tokens": 0, "input_tokens": callInputTokens, "iterations": []any{},
			"output_tokens": outputTokens, "server_tool_use": map[string]any{"web_search_requests": 0, "web_fetch_requests": 0},
			"fallback_credit": nil,
		},
	}
}

// abortStream ends a streaming turn on interrupt as the CLI does (§7).
func (t *turn) abortStream(interruptID string, c call, text string) {
	f := t.f
	t.ackInterrupt(interruptID)
	a := f.assistant(c, textBlock(text))
	a["aborted"] = true
	f.out.json(a)
	f.out.json(f.interruptedUser(false))
	if f.opts.includePartial {
		f.out.json(f.streamEvent(c, map[string]any{"type": "content_block_stop", "index": 0}, nil))
		f.out.json(f.streamEvent(c, messageDelta(nil, partialOutputTokens), nil))
		f.out.json(f.streamEvent(c, map[string]any{"type": "message_stop"}, map[string]any{
			"abandoned_blocks": map[string]any{"api_message_id": c.msgID, "from_block_index": 1},
		}))
	}
	t.usage = turnUsage{partialCalls: 1}
	t.numTurns = 2
	t.terminalReason = "aborted_streaming"
	t.begun = []any{c.msgID}
	f.out.json(f.result(t, resultAborted, ""))
}

// hang streams for up to a minute and never answers interrupt; with
// ignoreSigint it survives SIGINT as well.
func (t *turn) hang(ignoreSigint bool) {
	f := t.f
	f.mu.Lock()
	f.ignoreInterrupt = true
	f.mu.Unlock()
	if ignoreSigint {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt)
		go func() {
			for range sigs {
				f.errw.line("fakeclaude: ignoring SIGINT")
			}
		}()
	}
	f.out.json(f.systemInit())
	c := f.newCall()
	deadline := time.Now().Add(time.Minute)
	var text string
	for i := 0; time.Now().Before(deadline); i++ {
		chunk := chunkText(i)
		text += chunk
		f.out.json(f.assistant(c, textBlock(chunk)))
		time.Sleep(f.delay)
	}
	t.usage = turnUsage{calls: 1, reportCalls: 1}
	t.numTurns = 1
	f.out.json(f.result(t, resultSuccess, text))
}

// toolSpec describes a tool call of a script.
type toolSpec struct {
	name        string
	preText     string // an assistant text before the tool_use, or ""
	input       map[string]any
	description string
	suggestions []any
	extra       map[string]any // more fields of the can_use_tool request
	withIsError bool           // the tool_result carries is_error:false
	run         func(input map[string]any) (content string, toolUseResult any)
}

const defaultBashCommand = "echo hello-from-bash > bash_out.txt && cat bash_out.txt"

func bashTool(f *fake) toolSpec {
	return toolSpec{
		name:        "Bash",
		preText:     "I will run a command.",
		input:       map[string]any{"command": defaultBashCommand, "description": "Write a file with echo"},
		description: "Write a file with echo",
		suggestions: []any{
			map[string]any{"type": "addRules", "rules": []any{map[string]any{"toolName": "Bash", "ruleContent": "echo hello-from-bash *"}}, "behavior": "allow", "destination": "localSettings"},
			map[string]any{"type": "addDirectories", "directories": []any{f.cwd}, "destination": "session"},
		},
		extra:       map[string]any{"blocked_path": f.cwd + "/bash_out.txt"},
		withIsError: true,
		run: func(input map[string]any) (string, any) {
			out := "hello-from-bash"
			if cmd, _ := input["command"].(string); cmd != defaultBashCommand {
				out = "ran: " + cmd
			}
			return out, map[string]any{"stdout": out, "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": false}
		},
	}
}

func writeTool() toolSpec {
	const path = "/tmp/hello.txt"
	return toolSpec{
		name:        "Write",
		input:       map[string]any{"file_path": path, "content": "hello from fake model\n"},
		description: path,
		suggestions: []any{
			map[string]any{"type": "setMode", "mode": "acceptEdits", "destination": "session"},
			map[string]any{"type": "addDirectories", "directories": []any{"/tmp"}, "destination": "session"},
		},
		extra: map[string]any{"decision_reason": "Path is outside allowed working directories", "decision_reason_type": "workingDir"},
		run: func(input map[string]any) (string, any) {
			p, _ := input["file_path"].(string)
			content, _ := input["content"].(string)
			return "File created successfully at: " + p + " (file state is current in your context — no need to Read it back)",
				map[string]any{"type": "create", "filePath": p, "content": content, "structuredPatch": []any{}, "originalFile": nil, "userModified": false}
		},
	}
}

// decide is the fake's permission check: "mode" or "rule" (allowed without
// asking), "deny" (denied without asking) or "ask".
func (f *fake) decide(tool string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.mode == "bypassPermissions":
		return "mode"
	case f.allowed[tool]:
		return "rule"
	case tool == "Write" && f.mode == "acceptEdits":
		return "mode"
	case f.mode == "dontAsk", f.opts.permissionPromptTool != "stdio":
		return "deny"
	}
	return "ask"
}

// tool plays a tool call: the assistant's tool_use, the permission check
// (a can_use_tool ask unless the mode or a rule decides), the tool result
// and the model's closing reply.
func (t *turn) tool(spec toolSpec) {
	f := t.f
	f.out.json(f.systemInit())
	c := f.newCall()
	if spec.preText != "" {
		f.out.json(f.assistant(c, textBlock(spec.preText)))
	}
	toolID := "toolu_" + randomHex(20)
	f.out.json(f.assistant(c, map[string]any{"type": "tool_use", "id": toolID, "name": spec.name, "input": spec.input}))
	denial := map[string]any{"tool_name": spec.name, "tool_use_id": toolID, "tool_input": spec.input}

	switch decision := f.decide(spec.name); decision {
	case "mode", "rule":
		t.runTool(spec, toolID, spec.input, map[string]any{"decision": "accept", "source": "config", "reason_type": decision})
		return
	case "deny":
		msg := spec.name + " needs approval, and no permission prompt is available in this session."
		if f.currentMode() == "dontAsk" {
			msg = "Permission to use " + spec.name + " has been denied because Claude Code is running in don't ask mode."
		}
		f.out.json(map[string]any{"type": "system", "subtype": "permission_denied", "tool_name": spec.name, "tool_use_id": toolID, "message": msg, "uuid": newUUID(), "session_id": f.session})
		t.denials = append(t.denials, denial)
		t.toolError(toolID, msg, map[string]any{"id": toolID, "non_execution_kind": "user-rejected", "permission_decision": map[string]any{"decision": "reject", "source": "config"}})
		t.finish("Tool finished: " + msg)
		return
	}

	askID := newUUID()
	answers := make(chan permAnswer, 1)
	f.mu.Lock()
	if f.stdinClosed {
		answers <- permAnswer{closed: true}
	} else {
		f.perms[askID] = answers
	}
	f.mu.Unlock()
	req := map[string]any{
		"subtype": "can_use_tool", "tool_name": spec.name, "display_name": spec.name, "input": spec.input,
		"description": spec.description, "permission_suggestions": spec.suggestions, "tool_use_id": toolID,
	}
	for k, v := range spec.extra {
		req[k] = v
	}
	f.out.json(map[string]any{"type": "control_request", "request_id": askID, "request": req})

	var a permAnswer
	select {
	case a = <-answers:
	case id := <-f.interrupts:
		f.mu.Lock()
		delete(f.perms, askID)
		f.mu.Unlock()
		t.abortAsk(id, askID, toolID, denial)
		return
	}
	switch {
	case a.closed:
		t.failedAsk(toolID, "Tool permission request failed: AbortError: Stream closed")
	case a.subtype != "success":
		t.failedAsk(toolID, "Tool permission request failed: "+a.errText)
	case a.response["behavior"] == "allow":
		input := spec.input
		if updated, ok := a.response["updatedInput"].(map[string]any); ok {
			input = updated
		}
		f.applyPermissionUpdates(a.response["updatedPermissions"])
		t.runTool(spec, toolID, input, map[string]any{"decision": "accept", "source": "user_temporary"})
	default:
		msg, _ := a.response["message"].(string)
		t.denials = append(t.denials, denial)
		t.toolError(toolID, msg, map[string]any{"id": toolID, "non_execution_kind": "permission-rule", "permission_decision": map[string]any{"decision": "reject", "source": "user_reject"}})
		if a.response["interrupt"] == true {
			f.out.json(f.interruptedUser(true))
			t.usage = turnUsage{calls: 1, reportCalls: 1}
			t.numTurns = 2
			t.stopReason = "tool_use"
			t.terminalReason = "aborted_tools"
			f.out.json(f.result(t, resultAborted, ""))
			return
		}
		t.finish("Tool finished: " + msg)
	}
}

// applyPermissionUpdates acts on the updatedPermissions of an allow.
func (f *fake) applyPermissionUpdates(v any) {
	updates, _ := v.([]any)
	for _, u := range updates {
		m, _ := u.(map[string]any)
		switch m["type"] {
		case "setMode":
			mode, _ := m["mode"].(string)
			if !validMode(mode) {
				continue
			}
			f.mu.Lock()
			f.mode = mode
			f.mu.Unlock()
			f.out.json(f.modeStatus(mode))
		case "addRules":
			if m["behavior"] != "allow" {
				continue
			}
			rules, _ := m["rules"].([]any)
			for _, r := range rules {
				rule, _ := r.(map[string]any)
				if name, ok := rule["toolName"].(string); ok {
					f.mu.Lock()
					f.allowed[name] = true
					f.mu.Unlock()
				}
			}
		}
	}
}

func (t *turn) runTool(spec toolSpec, toolID string, input map[string]any, decision map[string]any) {
	f := t.f
	content, result := spec.run(input)
	block := map[string]any{"tool_use_id": toolID, "type": "tool_result", "content": content}
	if spec.withIsError {
		block["is_error"] = false
	}
	f.out.json(f.user([]any{block}, map[string]any{
		"tool_use_result":  result,
		"tool_result_meta": []any{map[string]any{"id": toolID, "permission_decision": decision}},
	}))
	t.finish("Tool finished: " + content)
}

func (t *turn) toolError(toolID, msg string, meta map[string]any) {
	f := t.f
	f.out.json(f.user([]any{map[string]any{"type": "tool_result", "content": msg, "is_error": true, "tool_use_id": toolID}}, map[string]any{
		"tool_use_result":  "Error: " + msg,
		"tool_result_meta": []any{meta},
	}))
}

func (t *turn) failedAsk(toolID, msg string) {
	t.toolError(toolID, msg, map[string]any{"id": toolID, "non_execution_kind": "permission-error"})
	t.finish("Tool finished: " + msg)
}

// finish is the model's second call after a tool: a text, then the result.
func (t *turn) finish(reply string) {
	f := t.f
	f.out.json(f.assistant(f.newCall(), textBlock(reply)))
	t.usage = turnUsage{calls: 2, reportCalls: 2}
	t.numTurns = 2
	f.out.json(f.result(t, resultSuccess, reply))
}

// abortAsk ends a turn interrupted during a permission ask (§7.4).
func (t *turn) abortAsk(interruptID, askID, toolID string, denial map[string]any) {
	f := t.f
	f.out.json(map[string]any{"type": "control_cancel_request", "request_id": askID})
	t.ackInterrupt(interruptID)
	f.out.json(f.user([]any{map[string]any{
		"type": "tool_result", "is_error": true, "tool_use_id": toolID,
		"content": "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.",
	}}, map[string]any{
		"tool_use_result":  "User rejected tool use",
		"tool_result_meta": []any{map[string]any{"id": toolID, "non_execution_kind": "user-rejected"}},
	}))
	f.out.json(f.interruptedUser(true))
	t.denials = append(t.denials, denial)
	t.usage = turnUsage{calls: 1, reportCalls: 1}
	t.numTurns = 3
	t.stopReason = "tool_use"
	t.terminalReason = "aborted_tools"
	f.out.json(f.result(t, resultAborted, ""))
}

func (t *turn) compactionMessages(trigger string) {
	f := t.f
	f.out.json(f.status("compacting", nil))
	f.out.json(f.status(nil, map[string]any{"compact_result": "success"}))
	if trigger == "manual" {
		f.out.json(f.systemInit())
	}
	f.out.json(map[string]any{
		"type": "system", "subtype": "compact_boundary", "session_id": f.session, "uuid": newUUID(),
		"compact_metadata":    map[string]any{"trigger": trigger, "pre_tokens": 59, "post_tokens": 2611, "cumulative_dropped_tokens": 0, "duration_ms": 38},
		"logical_parent_uuid": newUUID(),
	})
	f.out.json(f.user("This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\n"+helloText,
		map[string]any{"isReplay": false, "isSynthetic": true}))
}

// compact is the "/compact" local command.
func (t *turn) compact() {
	t.compactionMessages("manual")
	f := t.f
	f.out.json(f.userReplay("<local-command-stdout>Compacted </local-command-stdout>"))
	t.usage = turnUsage{calls: 2}
	t.numTurns = 0
	f.out.json(f.result(t, resultCompact, ""))
}

// autoCompact compacts before answering, as the CLI does near the context
// limit.
func (t *turn) autoCompact() {
	f := t.f
	f.out.json(f.systemInit())
	t.compactionMessages("auto")
	f.out.json(f.assistant(f.newCall(), textBlock(helloText)))
	t.usage = turnUsage{calls: 3, reportCalls: 1}
	t.numTurns = 1
	f.out.json(f.result(t, resultSuccess, helloText))
}

func (t *turn) crash(code int) {
	f := t.f
	if code <= 0 {
		code = 3
	}
	f.out.json(f.systemInit())
	f.out.json(f.assistant(f.newCall(), textBlock("About to crash.")))
	f.errw.line(fmt.Sprintf("fakeclaude: simulated crash (exit %d)", code))
	f.rec.meta(map[string]any{"exit": code})
	f.rec.close()
	os.Exit(code)
}

func (t *turn) fail500() {
	f := t.f
	f.out.json(f.systemInit())
	retry := template("api_retry")
	retry["session_id"], retry["uuid"] = f.session, newUUID()
	f.out.json(retry)
	a := template("assistant_api_error")
	a["message"].(map[string]any)["id"] = newUUID()
	a["session_id"], a["uuid"], a["timestamp"] = f.session, newUUID(), timestamp()
	f.out.json(a)
	t.numTurns = 1
	text := a["message"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
	f.out.json(f.result(t, resultAPIError, text))
}

func (t *turn) raw() {
	t.f.out.raw([]byte("[SandboxDebug] fakeclaude: a line that is not JSON\n"))
	t.text(helloText)
}

func (t *turn) big(n int) {
	if n <= 0 {
		n = 100 << 10
	}
	const pattern = "0123456789abcdefghijklmnopqrstuvwxyz"
	text := strings.Repeat(pattern, n/len(pattern)+1)[:n]
	t.text(text)
}

func (t *turn) stderr() {
	for i := 1; i <= 3; i++ {
		t.f.errw.line(fmt.Sprintf("fakeclaude: warning: stderr chatter %d", i))
	}
	t.text(helloText)
}

func (t *turn) echo() {
	t.text(fmt.Sprintf("text=%q blocks=%s", t.in.text, strings.Join(t.in.blocks, ",")))
}

// hostRequest sends the host a control request it did not register for (a
// hook_callback) and replies with how the host answered.
func (t *turn) hostRequest() {
	f := t.f
	id := newUUID()
	answers := make(chan permAnswer, 1)
	f.mu.Lock()
	if f.stdinClosed {
		answers <- permAnswer{closed: true}
	} else {
		f.perms[id] = answers
	}
	f.mu.Unlock()
	f.out.json(map[string]any{"type": "control_request", "request_id": id, "request": map[string]any{
		"subtype": "hook_callback", "callback_id": "hook_0", "input": map[string]any{"hook_event_name": "PreToolUse"}, "tool_use_id": nil,
	}})
	a := <-answers
	t.text(fmt.Sprintf("host answered %s: %s", a.subtype, a.errText))
}
