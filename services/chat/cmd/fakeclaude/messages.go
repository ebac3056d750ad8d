package main

import (
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// templates are messages of Claude Code 2.1.330 taken from the recorded
// transcripts (long lists cut to one item of each shape). Each use decodes a
// fresh copy and fills in this session's values.
//
//go:embed templates/*.json
var templates embed.FS

func template(name string) map[string]any {
	b, err := templates.ReadFile("templates/" + name + ".json")
	if err != nil {
		panic(fmt.Sprintf("template %s: %v", name, err))
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(fmt.Sprintf("template %s: %v", name, err))
	}
	return m
}

// Costs of one fake API call, as the transcripts show.
const (
	callInputTokens  = 42
	callOutputTokens = 17
	callCost         = 0.000381
	// An API call cut off by an interrupt.
	partialOutputTokens = 1
	partialCost         = 0.000141
)

func timestamp() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }

func (f *fake) next() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	return f.seq
}

func (f *fake) currentModel() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.model
}

func (f *fake) currentMode() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mode
}

func (f *fake) initializePayload(mode string) map[string]any {
	m := template("initialize")
	m["pid"] = os.Getpid()
	m["claude_code_version"] = f.version
	m["current_permission_mode"] = mode
	return m
}

func (f *fake) systemInit() map[string]any {
	m := template("system_init")
	m["session_id"] = f.session
	m["uuid"] = newUUID()
	m["cwd"] = f.cwd
	m["original_cwd"] = f.cwd
	m["model"] = f.currentModel()
	m["permissionMode"] = f.currentMode()
	m["claude_code_version"] = f.version
	home, _ := os.UserHomeDir()
	m["memory_paths"] = map[string]any{"auto": filepath.Join(home, ".claude", "projects", strings.ReplaceAll(f.cwd, "/", "-"), "memory") + "/"}
	m["messaging_socket_path"] = fmt.Sprintf("/tmp/cc-socks/%d.sock", os.Getpid())
	return m
}

func (f *fake) modeStatus(mode string) map[string]any {
	return map[string]any{"type": "system", "subtype": "status", "status": nil, "permissionMode": mode, "uuid": newUUID(), "session_id": f.session}
}

func (f *fake) status(status any, extra map[string]any) map[string]any {
	m := map[string]any{"type": "system", "subtype": "status", "status": status, "session_id": f.session, "uuid": newUUID()}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// call is one fake API request: the ids its assistant messages share.
type call struct {
	msgID, reqID string
}

func (f *fake) newCall() call {
	r := f.next()
	m := f.next()
	return call{msgID: fmt.Sprintf("msg_%04d", m), reqID: fmt.Sprintf("req_%04d", r)}
}

// assistant is one content block of a model reply, as its own message.
func (f *fake) assistant(c call, block map[string]any) map[string]any {
	m := template("assistant")
	msg := m["message"].(map[string]any)
	msg["id"] = c.msgID
	msg["model"] = f.currentModel()
	msg["content"] = []any{block}
	m["session_id"] = f.session
	m["uuid"] = newUUID()
	m["timestamp"] = timestamp()
	m["request_id"] = c.reqID
	return m
}

func textBlock(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func (f *fake) user(content any, extra map[string]any) map[string]any {
	m := map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": content},
		"parent_tool_use_id": nil,
		"session_id":         f.session,
		"uuid":               newUUID(),
		"timestamp":          timestamp(),
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func (f *fake) userReplay(text string) map[string]any {
	return f.user(text, map[string]any{"isReplay": true})
}

func (f *fake) interruptedUser(forTool bool) map[string]any {
	text := "[Request interrupted by user]"
	if forTool {
		text = "[Request interrupted by user for tool use]"
	}
	return f.user([]any{textBlock(text)}, nil)
}

func (f *fake) streamEvent(c call, event map[string]any, extra map[string]any) map[string]any {
	m := map[string]any{
		"type":               "stream_event",
		"event":              event,
		"session_id":         f.session,
		"parent_tool_use_id": nil,
		"uuid":               newUUID(),
		"api_message_id":     c.msgID,
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// resultKind selects the variant of a result message; each has the key set
// the CLI's has for that case.
type resultKind int

const (
	resultSuccess  resultKind = iota // a completed turn
	resultAborted                    // error_during_execution after an interrupt
	resultAPIError                   // success subtype, is_error, api_error_status
	resultCompact                    // the /compact local command
)

// turnUsage is what one turn spent.
type turnUsage struct {
	calls, partialCalls int // completed and interrupted API calls
	// reported: usage counts in the result (an interrupted stream reports
	// none, compaction neither).
	reportCalls int
}

func (f *fake) result(t *turn, kind resultKind, text string) map[string]any {
	m := template("result")
	model := f.currentModel()

	in := t.usage.calls*callInputTokens + t.usage.partialCalls*callInputTokens
	out := t.usage.calls*callOutputTokens + t.usage.partialCalls*partialOutputTokens
	cost := float64(t.usage.calls)*callCost + float64(t.usage.partialCalls)*partialCost

	f.mu.Lock()
	f.totalCost += cost
	since := map[string]any{}
	if in > 0 || cost > 0 {
		u := f.modelUsage[model]
		if u == nil {
			u = &usageTotals{}
			f.modelUsage[model] = u
		}
		u.In += in
		u.Out += out
		u.Cost += cost
		u.restored = false
		since[model] = modelUsageEntry(model, in, out, cost)
	}
	all := map[string]any{}
	for name, u := range f.modelUsage {
		e := modelUsageEntry(name, u.In, u.Out, u.Cost)
		if u.restored {
			deleteKeys(e, "canonicalModel", "provider", "costBasis")
		}
		all[name] = e
	}
	f.save()
	total := f.totalCost
	resultIndex := f.results
	f.results++
	f.lastIsError = kind == resultAborted || kind == resultAPIError
	f.mu.Unlock()

	usage := m["usage"].(map[string]any)
	usage["input_tokens"] = t.usage.reportCalls * callInputTokens
	usage["output_tokens"] = t.usage.reportCalls * callOutputTokens

	m["session_id"] = f.session
	m["uuid"] = newUUID()
	m["total_cost_usd"] = total
	m["modelUsage"] = all
	m["model_usage_since_last_result"] = since
	m["duration_ms"] = time.Since(t.start).Milliseconds()
	m["duration_api_ms"] = int64(t.usage.calls+t.usage.partialCalls) * 12
	m["num_turns"] = t.numTurns
	m["result_index"] = resultIndex
	m["permission_denials"] = t.denials
	m["result"] = text

	timing := []string{"ttft_ms", "ttft_stream_ms", "time_to_request_ms", "first_content_frame_ms"}
	switch kind {
	case resultAborted:
		deleteKeys(m, append(timing, "api_error_status", "result")...)
		m["subtype"] = "error_during_execution"
		m["is_error"] = true
		m["stop_reason"] = t.stopReason
		m["terminal_reason"] = t.terminalReason
		m["errors"] = []any{fmt.Sprintf("[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=%v", orNull(t.stopReason))}
		if len(t.begun) > 0 {
			m["begun_message_ids"] = t.begun
		}
	case resultAPIError:
		deleteKeys(m, timing...)
		m["is_error"] = true
		m["api_error_status"] = 500
		m["api_error_type"] = "api_error"
		m["terminal_reason"] = "api_error"
		m["stop_reason"] = "stop_sequence"
	case resultCompact:
		deleteKeys(m, append(timing, "api_error_status", "terminal_reason")...)
		m["stop_reason"] = nil
		m["local_command"] = "compact"
	}
	return m
}

func orNull(v any) any {
	if v == nil {
		return "null"
	}
	return v
}

func deleteKeys(m map[string]any, keys ...string) {
	for _, k := range keys {
		delete(m, k)
	}
}

func modelUsageEntry(model string, in, out int, cost float64) map[string]any {
	return map[string]any{
		"inputTokens": in, "outputTokens": out, "cacheReadInputTokens": 0, "cacheCreationInputTokens": 0,
		"webSearchRequests": 0, "costUSD": cost, "contextWindow": 200000, "maxOutputTokens": 32000,
		"thinkingTokens": 0, "cacheCreationEphemeral5mInputTokens": 0, "cacheCreationEphemeral1hInputTokens": 0,
		"canonicalModel": model, "provider": "firstParty", "costBasis": "list",
	}
}
