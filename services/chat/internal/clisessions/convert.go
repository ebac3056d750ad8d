package clisessions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/agent/claude"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// Record is one line of a transcript converted into what a session's log
// stores: kind (store.KindUserPrompt, KindAgent or KindNotice) and payload,
// with the time the record carries (zero when it carries none).
type Record struct {
	Kind    string
	Payload json.RawMessage
	Time    time.Time
}

// Convert turns one line of the transcript of session id of provider
// (protocol.CLIProvider*), at file (relative to the provider's root), into
// a Record. It never fails: a line that is not JSON is a parse_error
// notice naming file and lineNo, a record it does not know is kept raw
// (raw_record). It is stateless, so that a page read backwards from the end
// of a file converts the same as one read forwards.
func Convert(provider, id, file string, line []byte, lineNo int64) Record {
	line = bytes.TrimRight(line, "\r\n")
	trimmed := bytes.TrimSpace(line)
	var probe any
	if err := json.Unmarshal(trimmed, &probe); err != nil {
		return parseError(line, file, lineNo, err)
	}
	obj, ok := probe.(map[string]any)
	if !ok {
		return rawRecord(trimmed, time.Time{})
	}
	ts := recordTime(obj)
	if provider == protocol.CLIProviderCodex {
		return convertCodex(trimmed, obj, ts, id)
	}
	return convertClaude(trimmed, obj, ts)
}

func parseError(line []byte, file string, lineNo int64, err error) Record {
	msg := err.Error()
	if len(bytes.TrimSpace(line)) == 0 {
		msg = "empty line"
	}
	text := line
	if len(text) > 200 {
		text = text[:200]
		for len(text) > 0 && !utf8.Valid(text) {
			text = text[:len(text)-1]
		}
	}
	p := protocol.CLIParseError{
		Type: protocol.PayloadParseError, Role: "notice", Level: "warning",
		Content: fmt.Sprintf("%s, line %d: not a JSON record (%s)", file, lineNo, msg),
		File:    file, Line: lineNo, Error: msg, Text: strings.ToValidUTF8(string(text), "\uFFFD"),
	}
	b, _ := json.Marshal(p)
	return Record{Kind: store.KindNotice, Payload: b}
}

// rawRecord and metaRecord wrap raw (valid JSON) byte for byte:
// json.Marshal would rewrite it (HTML escapes).
func rawRecord(raw []byte, ts time.Time) Record {
	b := make([]byte, 0, len(raw)+32)
	b = append(b, `{"type":"`+protocol.PayloadRawRecord+`","record":`...)
	b = append(append(b, raw...), '}')
	return Record{Kind: store.KindAgent, Payload: b, Time: ts}
}

func metaRecord(recordType string, raw []byte, ts time.Time) Record {
	rt, _ := json.Marshal(recordType)
	b := make([]byte, 0, len(raw)+len(rt)+48)
	b = append(b, `{"type":"`+protocol.PayloadCLIMeta+`","record_type":`...)
	b = append(append(b, rt...), `,"record":`...)
	b = append(append(b, raw...), '}')
	return Record{Kind: store.KindAgent, Payload: b, Time: ts}
}

func agentRecord(v any, ts time.Time) Record {
	b, _ := json.Marshal(v)
	return Record{Kind: store.KindAgent, Payload: b, Time: ts}
}

func promptRecord(text string, images []protocol.ImageBlock, ts time.Time) Record {
	b, _ := json.Marshal(protocol.StoredPrompt{Role: "user", Content: text, Images: images})
	return Record{Kind: store.KindUserPrompt, Payload: b, Time: ts}
}

func recordTime(obj map[string]any) time.Time {
	s, _ := obj["timestamp"].(string)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Claude Code's record types that carry nothing to show: its bookkeeping
// around the conversation (2.1.x writes many; older versions summary and
// file-history-snapshot).
var claudeMeta = map[string]bool{
	"summary": true, "file-history-snapshot": true, "queue-operation": true, "attachment": true,
	"atis-latch": true, "api-request": true, "api-request-shape": true, "api-request-blob": true,
	"last-prompt": true, "tools-used": true, "mode": true, "custom-title": true, "ai-title": true,
	"progress": true, "pr-link": true, "tag": true, "agent-name": true,
}

// convertClaude converts a record of ~/.claude/projects/*/<id>.jsonl. The
// conversation's records (user, assistant, system) are the messages of
// Claude Code's stream-json output with a few more fields, so they are
// classified by the provider's own parser and passed through as the live
// log stores them; a user's prompt becomes a user_prompt line.
func convertClaude(raw []byte, obj map[string]any, ts time.Time) Record {
	typ, _ := obj["type"].(string)
	switch typ {
	case agent.TypeUser:
		if text, images, ok := claudePrompt(obj); ok {
			return promptRecord(text, images, ts)
		}
		fallthrough
	case agent.TypeAssistant, agent.TypeSystem, agent.TypeResult:
		for _, e := range claude.Parse(raw) {
			if m, ok := e.(agent.Message); ok && m.Type == typ {
				return Record{Kind: store.KindAgent, Payload: json.RawMessage(raw), Time: ts}
			}
		}
		return rawRecord(raw, ts)
	case "cost-state":
		return claudeCost(raw, obj, ts)
	}
	if claudeMeta[typ] {
		return metaRecord(typ, raw, ts)
	}
	return rawRecord(raw, ts)
}

// claudePrompt is the text and images of a user record that is a prompt
// the user typed: text (and image) content, not a tool result, not one of
// the records the CLI writes as the user (isMeta caveats, compaction
// summaries, interrupt markers).
func claudePrompt(obj map[string]any) (string, []protocol.ImageBlock, bool) {
	for _, k := range []string{"isMeta", "isCompactSummary", "isVisibleInTranscriptOnly", "isSidechain"} {
		if b, _ := obj[k].(bool); b {
			return "", nil, false
		}
	}
	msg, _ := obj["message"].(map[string]any)
	if msg == nil {
		return "", nil, false
	}
	var text string
	var images []protocol.ImageBlock
	switch c := msg["content"].(type) {
	case string:
		text = c
	case []any:
		var parts []string
		for _, b := range c {
			block, _ := b.(map[string]any)
			switch block["type"] {
			case "text":
				s, _ := block["text"].(string)
				parts = append(parts, s)
			case "image":
				raw, _ := json.Marshal(block)
				var img protocol.ImageBlock
				if json.Unmarshal(raw, &img) != nil {
					return "", nil, false
				}
				images = append(images, img)
			default:
				return "", nil, false // a tool result, or a block we do not know
			}
		}
		text = strings.Join(parts, "\n")
	default:
		return "", nil, false
	}
	if strings.HasPrefix(text, "[Request interrupted") {
		return "", nil, false
	}
	return text, images, true
}

// claudeCost turns the cost-state record Claude Code writes when a run
// ends into a result, so the view shows what the run cost.
func claudeCost(raw []byte, obj map[string]any, ts time.Time) Record {
	var cs struct {
		TotalCostUSD  float64 `json:"totalCostUSD"`
		TotalDuration int64   `json:"totalDuration"`
		APIDuration   int64   `json:"totalAPIDuration"`
		ModelUsage    map[string]struct {
			InputTokens              int64 `json:"inputTokens"`
			OutputTokens             int64 `json:"outputTokens"`
			CacheReadInputTokens     int64 `json:"cacheReadInputTokens"`
			CacheCreationInputTokens int64 `json:"cacheCreationInputTokens"`
		} `json:"modelUsage"`
	}
	if err := json.Unmarshal(raw, &cs); err != nil {
		return metaRecord("cost-state", raw, ts)
	}
	var u agent.Usage
	for _, m := range cs.ModelUsage {
		u.InputTokens += m.InputTokens
		u.OutputTokens += m.OutputTokens
		u.CacheReadInputTokens += m.CacheReadInputTokens
		u.CacheCreationInputTokens += m.CacheCreationInputTokens
	}
	sid, _ := obj["sessionId"].(string)
	return agentRecord(map[string]any{
		"type": agent.TypeResult, "subtype": "success", "is_error": false, "result": "",
		"total_cost_usd": cs.TotalCostUSD, "usage": u, "duration_ms": cs.TotalDuration,
		"duration_api_ms": cs.APIDuration, "session_id": sid, "cli_record": "cost-state",
	}, ts)
}

// Codex rollout records: {"timestamp", "type", "payload"}.
type codexRecord struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// codexItem holds the fields of the payloads the converter reads.
type codexItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Status    string          `json:"status"`
	Summary   []struct {
		Text string `json:"text"`
	} `json:"summary"`
	Action json.RawMessage `json:"action"`
	// session_meta, turn_context
	Cwd        string `json:"cwd"`
	CliVersion string `json:"cli_version"`
	Model      string `json:"model"`
	Approval   string `json:"approval_policy"`
	// event_msg
	Message          string `json:"message"`
	LastAgentMessage string `json:"last_agent_message"`
	DurationMS       int64  `json:"duration_ms"`
	Reason           string `json:"reason"`
}

// Codex's event_msg types that repeat what a response_item of the file
// shows, or are bookkeeping (token counts, settings, the TUI's item
// events).
var codexMetaEvents = map[string]bool{
	"user_message": true, "agent_message": true, "agent_reasoning": true, "agent_reasoning_raw_content": true,
	"token_count": true, "item_started": true, "item_completed": true, "thread_settings_applied": true,
	"exec_command_begin": true, "exec_command_end": true, "exec_command_output_delta": true,
	"patch_apply_begin": true, "patch_apply_end": true, "mcp_tool_call_begin": true, "mcp_tool_call_end": true,
	"web_search_begin": true, "web_search_end": true, "turn_diff": true, "plan_update": true,
	"task_started": true, "turn_started": true, "agent_message_delta": true, "agent_reasoning_delta": true,
	"background_event": true, "session_configured": true, "thread_name_updated": true,
}

// Codex's top-level record types that are bookkeeping.
var codexMetaTypes = map[string]bool{
	"world_state": true, "token_usage_record": true,
}

// convertCodex converts a rollout record of $CODEX_HOME/sessions into the
// messages the app-server provider gives for the same conversation
// (internal/agent/codex): text, reasoning and tool calls as assistant
// messages, tool outputs as tool results, a turn's end as a result.
func convertCodex(raw []byte, obj map[string]any, ts time.Time, id string) Record {
	var rec codexRecord
	if json.Unmarshal(raw, &rec) != nil || len(rec.Payload) == 0 {
		return rawRecord(raw, ts)
	}
	var it codexItem
	// A field of an unexpected type leaves the others decoded.
	_ = json.Unmarshal(rec.Payload, &it)
	thread := codexThread(obj)
	if thread == "" {
		thread = id
	}
	switch rec.Type {
	case "session_meta":
		return agentRecord(map[string]any{
			"type": agent.TypeSystem, "subtype": "init", "cwd": it.Cwd, "provider": "app-server",
			"codex_version": it.CliVersion, "thread_id": thread, "session_id": thread, "cli_record": "session_meta",
		}, ts)
	case "turn_context":
		return agentRecord(map[string]any{
			"type": agent.TypeSystem, "subtype": "init", "cwd": it.Cwd, "model": it.Model, "provider": "app-server",
			"approval_policy": it.Approval, "session_id": thread, "cli_record": "turn_context",
		}, ts)
	case "compacted":
		return agentRecord(map[string]any{
			"type": agent.TypeSystem, "subtype": "compact_boundary", "session_id": thread,
			"compact_metadata": map[string]any{"trigger": "auto"}, "cli_record": "compacted",
		}, ts)
	case "response_item":
		return codexResponseItem(raw, it, thread, ts)
	case "event_msg":
		return codexEvent(raw, it, thread, ts)
	}
	if codexMetaTypes[rec.Type] {
		return metaRecord(rec.Type, raw, ts)
	}
	return rawRecord(raw, ts)
}

func payloadString(obj map[string]any, key string) (string, bool) {
	p, _ := obj["payload"].(map[string]any)
	s, ok := p[key].(string)
	return s, ok
}

// codexThread is the thread id a record names, if any.
func codexThread(obj map[string]any) string {
	for _, k := range []string{"thread_id", "session_id"} {
		if s, ok := payloadString(obj, k); ok {
			return s
		}
	}
	return ""
}

func codexAssistant(thread, id string, ts time.Time, blocks ...any) Record {
	return agentRecord(map[string]any{
		"type": agent.TypeAssistant, "parent_tool_use_id": nil, "session_id": thread,
		"message": map[string]any{"id": id, "type": "message", "role": "assistant", "content": blocks},
	}, ts)
}

func codexToolResult(thread, callID, content string, isError bool, ts time.Time) Record {
	return agentRecord(map[string]any{
		"type": agent.TypeUser, "parent_tool_use_id": nil, "session_id": thread,
		"message": map[string]any{"role": "user", "content": []any{map[string]any{
			"type": "tool_result", "tool_use_id": callID, "content": content, "is_error": isError,
		}}},
	}, ts)
}

// contentText joins the text parts of a message's content.
func contentText(content json.RawMessage) string {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &parts) != nil {
		var s string
		if json.Unmarshal(content, &s) == nil {
			return s
		}
		return ""
	}
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// codexContext tells the user messages Codex writes itself (the
// environment, AGENTS.md, instructions) from a prompt the user typed.
func codexContext(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, "<environment_context>") || strings.HasPrefix(t, "<user_instructions>") ||
		strings.HasPrefix(t, "# AGENTS.md") || strings.HasPrefix(t, "<permissions instructions>") ||
		strings.HasPrefix(t, "<user_shell_command>") || strings.HasPrefix(t, "<turn_aborted>") ||
		strings.HasPrefix(t, "<skills_instructions>") || strings.HasPrefix(t, "<INSTRUCTIONS>")
}

func codexResponseItem(raw []byte, it codexItem, thread string, ts time.Time) Record {
	kind := "response_item/" + it.Type
	switch it.Type {
	case "message":
		text := contentText(it.Content)
		switch it.Role {
		case "assistant":
			return codexAssistant(thread, it.ID, ts, map[string]any{"type": "text", "text": text})
		case "user":
			if !codexContext(text) {
				return promptRecord(text, nil, ts)
			}
		}
		return metaRecord(kind, raw, ts)
	case "reasoning":
		var parts []string
		for _, s := range it.Summary {
			if s.Text != "" {
				parts = append(parts, s.Text)
			}
		}
		if len(parts) == 0 {
			return metaRecord(kind, raw, ts) // encrypted only
		}
		return codexAssistant(thread, it.ID, ts, map[string]any{"type": "thinking", "thinking": strings.Join(parts, "\n")})
	case "function_call", "custom_tool_call":
		args := it.Arguments
		if it.Type == "custom_tool_call" {
			args = it.Input
		}
		name, input := codexTool(it.Name, args)
		return codexAssistant(thread, it.ID, ts, map[string]any{"type": "tool_use", "id": it.CallID, "name": name, "input": input})
	case "local_shell_call":
		var a struct {
			Command []string `json:"command"`
			Dir     string   `json:"working_directory"`
		}
		_ = json.Unmarshal(it.Action, &a)
		return codexAssistant(thread, it.ID, ts, map[string]any{
			"type": "tool_use", "id": it.CallID, "name": "Bash",
			"input": map[string]any{"command": shellJoin(a.Command), "cwd": a.Dir},
		})
	case "web_search_call":
		var a struct {
			Query string `json:"query"`
		}
		_ = json.Unmarshal(it.Action, &a)
		return codexAssistant(thread, it.ID, ts, map[string]any{
			"type": "tool_use", "id": it.ID, "name": "WebSearch",
			"input": map[string]any{"query": a.Query},
		})
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		content, isErr := codexOutput(it.Output)
		return codexToolResult(thread, it.CallID, content, isErr, ts)
	case "ghost_snapshot":
		return metaRecord(kind, raw, ts)
	}
	return rawRecord(raw, ts)
}

func codexEvent(raw []byte, it codexItem, thread string, ts time.Time) Record {
	switch it.Type {
	case "task_complete", "turn_complete":
		return agentRecord(map[string]any{
			"type": agent.TypeResult, "subtype": "success", "is_error": false, "result": it.LastAgentMessage,
			"duration_ms": it.DurationMS, "session_id": thread, "stop_reason": "end_turn",
			"terminal_reason": "completed", "cli_record": "event_msg/" + it.Type,
		}, ts)
	case "turn_aborted":
		return agentRecord(map[string]any{
			"type": agent.TypeResult, "subtype": "error_during_execution", "is_error": true,
			"result": "the turn was stopped (" + it.Reason + ")", "session_id": thread,
			"terminal_reason": "interrupted", "cli_record": "event_msg/turn_aborted",
		}, ts)
	case "error", "stream_error":
		return agentRecord(map[string]any{
			"type": agent.TypeSystem, "subtype": "api_error", "message": it.Message, "session_id": thread,
			"cli_record": "event_msg/" + it.Type,
		}, ts)
	case "context_compacted":
		return agentRecord(map[string]any{
			"type": agent.TypeSystem, "subtype": "compact_boundary", "session_id": thread,
			"compact_metadata": map[string]any{"trigger": "auto"}, "cli_record": "event_msg/context_compacted",
		}, ts)
	}
	if codexMetaEvents[it.Type] {
		return metaRecord("event_msg/"+it.Type, raw, ts)
	}
	return rawRecord(raw, ts)
}

// codexTool maps a Codex tool call to the neutral tool the app-server
// provider reports for it (internal/agent/codex toolUse): shell commands
// are Bash {command, cwd}, apply_patch is Edit {changes}; others keep
// their name and their arguments.
func codexTool(name, args string) (string, any) {
	var m map[string]any
	_ = json.Unmarshal([]byte(args), &m)
	switch name {
	case "exec_command", "shell", "shell_command", "container.exec", "local_shell":
		cmd := ""
		switch c := firstOf(m, "cmd", "command").(type) {
		case string:
			cmd = c
		case []any:
			parts := make([]string, 0, len(c))
			for _, p := range c {
				s, _ := p.(string)
				parts = append(parts, s)
			}
			cmd = shellJoin(parts)
		}
		cwd, _ := firstOf(m, "workdir", "cwd").(string)
		return "Bash", map[string]any{"command": cmd, "cwd": cwd}
	case "apply_patch":
		patch := args
		if s, ok := m["input"].(string); ok {
			patch = s
		}
		return "Edit", map[string]any{"changes": patchChanges(patch)}
	}
	if m == nil {
		if args == "" {
			return name, map[string]any{}
		}
		return name, map[string]any{"input": args}
	}
	return name, m
}

func firstOf(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

// shellJoin shows an argv as one command line; `bash -lc 'x'` shows x.
func shellJoin(argv []string) string {
	if len(argv) == 3 && (argv[0] == "bash" || argv[0] == "/bin/bash" || argv[0] == "sh") && (argv[1] == "-lc" || argv[1] == "-c") {
		return argv[2]
	}
	out := make([]string, 0, len(argv))
	for _, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?;&|<>()") {
			a = strconv.Quote(a)
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}

var exitRe = regexp.MustCompile(`(?m)^Process exited with code (-?\d+)$`)

// codexOutput is the content of a tool output and whether it failed: a
// string (exec_command's "Process exited with code N" tells), the older
// shell tool's JSON {"output", "metadata": {"exit_code"}}, or content
// items.
func codexOutput(out json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(out, &s) == nil {
		var legacy struct {
			Output   string `json:"output"`
			Metadata *struct {
				ExitCode int `json:"exit_code"`
			} `json:"metadata"`
		}
		if strings.HasPrefix(s, "{") && json.Unmarshal([]byte(s), &legacy) == nil && legacy.Metadata != nil {
			return legacy.Output, legacy.Metadata.ExitCode != 0
		}
		if m := exitRe.FindStringSubmatch(s); m != nil {
			return s, m[1] != "0"
		}
		return s, false
	}
	var obj struct {
		Content json.RawMessage `json:"content"`
		Success *bool           `json:"success"`
	}
	if json.Unmarshal(out, &obj) == nil && len(obj.Content) > 0 {
		text := contentText(obj.Content)
		if text == "" {
			_ = json.Unmarshal(obj.Content, &text)
		}
		return text, obj.Success != nil && !*obj.Success
	}
	text := contentText(out)
	if text == "" {
		text = string(out)
	}
	return text, false
}

// patchChanges splits an apply_patch text into the files it changes, in
// the neutral shape of the provider's Edit input: {path, kind, diff}.
func patchChanges(patch string) []map[string]any {
	changes := []map[string]any{}
	var cur map[string]any
	var body []string
	flush := func() {
		if cur != nil {
			cur["diff"] = strings.Join(body, "\n")
			changes = append(changes, cur)
		}
		cur, body = nil, nil
	}
	for _, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "*** Add File: "):
			flush()
			cur = map[string]any{"path": strings.TrimPrefix(l, "*** Add File: "), "kind": "add"}
		case strings.HasPrefix(l, "*** Update File: "):
			flush()
			cur = map[string]any{"path": strings.TrimPrefix(l, "*** Update File: "), "kind": "update"}
		case strings.HasPrefix(l, "*** Delete File: "):
			flush()
			cur = map[string]any{"path": strings.TrimPrefix(l, "*** Delete File: "), "kind": "delete"}
		case strings.HasPrefix(l, "*** Move to: ") && cur != nil:
			cur["move_path"] = strings.TrimPrefix(l, "*** Move to: ")
		case strings.HasPrefix(l, "*** Begin Patch"), strings.HasPrefix(l, "*** End Patch"):
		case cur != nil:
			if cur["kind"] == "add" {
				l = strings.TrimPrefix(l, "+")
			}
			body = append(body, l)
		}
	}
	flush()
	return changes
}
