package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The OpenAI Responses dialect, for the real `codex app-server`
// (shared/protocols/real-cli.md §2, "OpenAI Responses side"): POST
// /v1/responses answered with SSE events response.created, then either
// response.output_text.delta events and a message output item, or a
// function_call output item, then response.completed with usage.
//
// The reply is chosen from the last input item: a function_call_output
// gives "Tool finished: <its output's last line>"; otherwise the latest user
// text picks it as for Claude: RUN_SHELL (exec_command running ShellCommand;
// with ESCALATE, sandbox_permissions require_escalated and a
// justification), SLOW, FAIL_500, else "Hello from the fake model.".

// ShellCommand is the command the RUN_SHELL script asks exec_command to run.
const ShellCommand = "echo hello-from-shell > shell_out.txt && cat shell_out.txt"

type responsesRequest struct {
	Model string            `json:"model"`
	Input []json.RawMessage `json:"input"`
}

type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or content parts
	Output  json.RawMessage `json:"output"`  // function_call_output
}

// responsesReply picks the reply of a Responses request.
func (s *server) responsesReply(n int64, req *responsesRequest) (text string, words []string, call map[string]any, fail bool) {
	for i := len(req.Input) - 1; i >= 0; i-- {
		var it inputItem
		if json.Unmarshal(req.Input[i], &it) != nil {
			continue
		}
		if it.Type == "function_call_output" {
			var out string
			if json.Unmarshal(it.Output, &out) != nil {
				out = string(it.Output)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			return "Tool finished: " + lines[len(lines)-1], nil, nil, false
		}
		if it.Type != "message" && it.Type != "" || it.Role != "user" {
			continue
		}
		t := partsText(it.Content)
		if strings.Contains(t, "<environment_context>") {
			continue
		}
		switch {
		case strings.Contains(t, "FAIL_500"):
			return "", nil, nil, true
		case strings.Contains(t, "RUN_SHELL"):
			args := map[string]any{"cmd": ShellCommand}
			if strings.Contains(t, "ESCALATE") {
				args["sandbox_permissions"] = "require_escalated"
				args["justification"] = "Allow writing shell_out.txt?"
			}
			b, _ := json.Marshal(args)
			return "", nil, map[string]any{
				"type": "function_call", "id": fmt.Sprintf("fc_fake%04d", n), "call_id": fmt.Sprintf("call_fake%04d", n),
				"name": "exec_command", "arguments": string(b), "status": "completed",
			}, false
		case strings.Contains(t, "SLOW"):
			words = make([]string, s.slowWords)
			for i := range words {
				words[i] = fmt.Sprintf("word%d ", i)
			}
			return "", words, nil, false
		}
		return "Hello from the fake model.", nil, nil, false
	}
	return "Hello from the fake model.", nil, nil, false
}

func partsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

func (s *server) responses(w http.ResponseWriter, r *http.Request, n int64, body []byte) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": "bad JSON: " + err.Error()}})
		return
	}
	text, words, call, fail := s.responsesReply(n, &req)
	if fail {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]any{"type": "server_error", "message": "fake failure"}})
		return
	}
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(event string, data map[string]any) bool {
		data["type"] = event
		b, _ := json.Marshal(data)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return r.Context().Err() == nil
	}
	respID := fmt.Sprintf("resp_fake%04d", n)
	if !send("response.created", map[string]any{"response": map[string]any{"id": respID}}) {
		return
	}
	out := 10
	if call != nil {
		if !send("response.output_item.done", map[string]any{"output_index": 0, "item": call}) {
			return
		}
	} else {
		msgID := fmt.Sprintf("msg_fake%04d", n)
		if !send("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{"type": "message", "role": "assistant", "id": msgID, "status": "in_progress", "content": []any{}}}) {
			return
		}
		if words == nil {
			words = []string{text}
		}
		var full strings.Builder
		for i, word := range words {
			if i > 0 && len(words) > 1 {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(s.slowDelay):
				}
			}
			full.WriteString(word)
			if !send("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0, "delta": word}) {
				return
			}
		}
		out += len(words)
		if !send("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "message", "role": "assistant", "id": msgID, "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": full.String(), "annotations": []any{}}},
		}}) {
			return
		}
	}
	in := 40 + len(req.Input)
	send("response.completed", map[string]any{"response": map[string]any{"id": respID, "usage": map[string]any{
		"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": in + out,
	}}})
}
