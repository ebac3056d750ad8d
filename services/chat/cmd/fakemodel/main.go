// Command fakemodel is a scripted fake of the Anthropic Messages API for
// driving the real Claude Code CLI offline (shared/protocols/real-cli.md §2),
// and of the OpenAI Responses API for the real `codex app-server` (POST
// /v1/responses, see responses.go).
//
// It listens on loopback (127.0.0.1:0 unless -addr says otherwise) and prints
// its base URL, e.g. "http://127.0.0.1:40123", as the first line of stdout;
// point the CLI at it with ANTHROPIC_BASE_URL. It answers:
//
//   - POST /v1/messages (any query string, e.g. ?beta=true): a streamed SSE
//     reply (message_start, content_block_start/delta/stop, message_delta with
//     usage, message_stop), or a JSON message when "stream" is false;
//   - POST /v1/messages/count_tokens: {"input_tokens": N};
//   - anything else: 404 with an Anthropic-shaped error, logged.
//
// The reply is chosen from the latest user message:
//
//   - a tool_result block: "Tool finished: <result text>";
//   - text containing RUN_BASH: a short text, then a tool_use of Bash
//     running `echo hello-from-bash > bash_out.txt && cat bash_out.txt`
//     (stop_reason tool_use);
//   - text containing SLOW: a long text streamed one word every -slow-delay
//     (for interrupt tests);
//   - text containing FAIL_500: HTTP 500 with an api_error;
//   - anything else: "Hello from the fake model."
//
// Every request is logged to stderr (and to -log as JSON lines when set).
// It stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// BashCommand is the command the RUN_BASH script asks Bash to run.
const BashCommand = "echo hello-from-bash > bash_out.txt && cat bash_out.txt"

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	logPath := flag.String("log", "", "append every request as a JSON line to this file")
	slowDelay := flag.Duration("slow-delay", 100*time.Millisecond, "delay between words of a SLOW reply")
	slowWords := flag.Int("slow-words", 300, "number of words in a SLOW reply")
	flag.Parse()

	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		log.Fatalf("fakemodel: -addr: %v", err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		log.Fatalf("fakemodel: -addr %q is not a loopback address", *addr)
	}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", *addr)
	if err != nil {
		log.Fatalf("fakemodel: %v", err)
	}
	s := &server{slowDelay: *slowDelay, slowWords: *slowWords}
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			log.Fatalf("fakemodel: %v", err)
		}
		defer f.Close()
		s.reqLog = f
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("http://%s\n", ln.Addr())
	_ = os.Stdout.Sync()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("fakemodel: %v", err)
	}
}

type server struct {
	slowDelay time.Duration
	slowWords int
	seq       atomic.Int64

	logMu  sync.Mutex
	reqLog io.Writer
}

// request is the part of a Messages API request body the fake reads.
type request struct {
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	Messages []message `json:"messages"`
	Tools    []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or a list of blocks
}

type block struct {
	Type    string          `json:"type"`
	Text    string          `json:"text,omitempty"`
	Content json.RawMessage `json:"content,omitempty"` // tool_result: string or blocks
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n := s.seq.Add(1)
	s.logRequest(n, r, body)

	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 42 + len(body)/100})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses": // Codex (responses.go)
		s.responses(w, r, n, body)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		var req request
		if err := json.Unmarshal(body, &req); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "bad JSON: "+err.Error())
			return
		}
		s.messages(w, r, n, &req)
	default:
		log.Printf("fakemodel: #%d unhandled %q %q", n, r.Method, r.URL.String()) //nolint:gosec // quoted; a loopback test fake
		writeError(w, http.StatusNotFound, "not_found_error", "fakemodel does not serve "+r.URL.Path)
	}
}

func (s *server) logRequest(n int64, r *http.Request, body []byte) {
	log.Printf("fakemodel: #%d %q %q (%d bytes, session %q)", n, r.Method, r.URL.String(), len(body), //nolint:gosec // quoted; a loopback test fake
		r.Header.Get("x-claude-code-session-id"))
	if s.reqLog == nil {
		return
	}
	line, _ := json.Marshal(map[string]any{
		"n": n, "method": r.Method, "url": r.URL.String(),
		"user_agent": r.Header.Get("user-agent"), "session": r.Header.Get("x-claude-code-session-id"),
		"body": json.RawMessage(validJSON(body)),
	})
	s.logMu.Lock()
	defer s.logMu.Unlock()
	_, _ = s.reqLog.Write(append(line, '\n'))
}

func validJSON(b []byte) []byte {
	if json.Valid(b) && len(b) > 0 {
		return b
	}
	q, _ := json.Marshal(string(b))
	return q
}

// reply is the scripted answer: text, then optionally one tool_use.
type reply struct {
	text    string
	words   []string // SLOW: streamed word by word
	tool    *toolUse
	fail500 bool
}

type toolUse struct {
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
}

// choose picks the reply from the latest user message.
func (s *server) choose(n int64, req *request) reply {
	var last *message
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			last = &req.Messages[i]
			break
		}
	}
	if last == nil {
		return reply{text: "Hello from the fake model."}
	}
	var blocks []block
	var str string
	if err := json.Unmarshal(last.Content, &str); err == nil {
		blocks = []block{{Type: "text", Text: str}}
	} else {
		_ = json.Unmarshal(last.Content, &blocks)
	}
	var text strings.Builder
	for _, b := range blocks {
		if b.Type == "tool_result" {
			return reply{text: "Tool finished: " + resultText(b.Content)}
		}
		if b.Type == "text" {
			text.WriteString(b.Text)
			text.WriteByte('\n')
		}
	}
	t := text.String()
	switch {
	case strings.Contains(t, "FAIL_500"):
		return reply{fail500: true}
	case strings.Contains(t, "RUN_BASH"):
		return reply{text: "I will run a command.", tool: &toolUse{
			ID:   fmt.Sprintf("toolu_fake%04d", n),
			Name: "Bash",
			Input: map[string]any{
				"command":     BashCommand,
				"description": "Write a file with echo",
			},
		}}
	case strings.Contains(t, "SLOW"):
		words := make([]string, s.slowWords)
		for i := range words {
			words[i] = fmt.Sprintf("word%d ", i)
		}
		return reply{words: words}
	}
	return reply{text: "Hello from the fake model."}
}

// resultText flattens a tool_result's content to its first line of text.
func resultText(raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		var blocks []block
		_ = json.Unmarshal(raw, &blocks)
		var b strings.Builder
		for _, bl := range blocks {
			if bl.Type == "text" {
				b.WriteString(bl.Text)
			}
		}
		s = b.String()
	}
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func (s *server) messages(w http.ResponseWriter, r *http.Request, n int64, req *request) {
	rep := s.choose(n, req)
	if rep.fail500 {
		writeError(w, http.StatusInternalServerError, "api_error", "fake failure")
		return
	}
	id := fmt.Sprintf("msg_fake%04d", n)
	model := req.Model
	if model == "" {
		model = "claude-sonnet-4-5"
	}
	stop := "end_turn"
	if rep.tool != nil {
		stop = "tool_use"
	}
	usage := map[string]any{
		"input_tokens": 40 + len(req.Messages), "output_tokens": 0,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
	}
	outTokens := 10 + len(rep.words)

	if !req.Stream {
		content := []any{}
		if rep.text != "" || len(rep.words) > 0 {
			content = append(content, map[string]any{"type": "text", "text": rep.text + strings.Join(rep.words, "")})
		}
		if rep.tool != nil {
			content = append(content, map[string]any{"type": "tool_use", "id": rep.tool.ID, "name": rep.tool.Name, "input": rep.tool.Input})
		}
		usage["output_tokens"] = outTokens
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
			"stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}

	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("request-id", fmt.Sprintf("req_fake%04d", n))
	w.WriteHeader(http.StatusOK)
	send := func(event string, data any) bool {
		b, _ := json.Marshal(data)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return r.Context().Err() == nil
	}
	ok := send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage,
	}})
	idx := 0
	if ok && (rep.text != "" || len(rep.words) > 0) {
		ok = send("content_block_start", map[string]any{
			"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "text", "text": ""},
		})
		chunks := rep.words
		if rep.text != "" {
			chunks = []string{rep.text}
		}
		for i, c := range chunks {
			if !ok {
				break
			}
			if i > 0 && len(rep.words) > 0 {
				select {
				case <-time.After(s.slowDelay):
				case <-r.Context().Done():
					log.Printf("fakemodel: #%d client went away after %d words", n, i)
					return
				}
			}
			ok = send("content_block_delta", map[string]any{
				"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "text_delta", "text": c},
			})
		}
		if ok {
			ok = send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		}
		idx++
	}
	if ok && rep.tool != nil {
		input, _ := json.Marshal(rep.tool.Input)
		ok = send("content_block_start", map[string]any{
			"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "tool_use", "id": rep.tool.ID, "name": rep.tool.Name, "input": map[string]any{}},
		})
		if ok {
			ok = send("content_block_delta", map[string]any{
				"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)},
			})
		}
		if ok {
			ok = send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		}
	}
	if ok {
		ok = send("message_delta", map[string]any{
			"type":  "message_delta",
			"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": outTokens},
		})
	}
	if ok {
		send("message_stop", map[string]any{"type": "message_stop"})
	}
	if !ok {
		log.Printf("fakemodel: #%d client went away mid-stream", n)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": typ, "message": msg},
	})
}
