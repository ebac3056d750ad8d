package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent/claude/claudetest"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex/codextest"
)

var fakeBin string

func TestMain(m *testing.M) { codextest.MainWithFake(m, &fakeBin) }

// session drives the fake over its pipes.
type session struct {
	t     *testing.T
	cmd   *exec.Cmd
	env   []string
	in    io.WriteCloser
	lines chan json.RawMessage
	outs  []json.RawMessage
}

func start(t *testing.T, env ...string) *session {
	t.Helper()
	cmd := exec.Command(fakeBin, "app-server")
	env = append([]string{"HOME=" + t.TempDir(), "FAKECODEX_DELAY=20ms"}, env...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, cmd: cmd, env: env, in: in, lines: make(chan json.RawMessage, 1000)}
	go func() {
		defer close(s.lines)
		br := bufio.NewReader(out)
		for {
			line, err := br.ReadBytes('\n')
			if len(strings.TrimSpace(string(line))) > 0 {
				s.lines <- json.RawMessage(strings.TrimSpace(string(line)))
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = in.Close()
		_ = cmd.Wait()
	})
	return s
}

func (s *session) write(v any) {
	s.t.Helper()
	b, _ := json.Marshal(v)
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatal(err)
	}
}

// until reads lines until match accepts one (10 s).
func (s *session) until(what string, match func(map[string]any) bool) map[string]any {
	s.t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("stdout ended before %s", what)
			}
			s.outs = append(s.outs, line)
			var m map[string]any
			if json.Unmarshal(line, &m) == nil && match(m) {
				return m
			}
		case <-timer.C:
			s.t.Fatalf("no %s within 10s", what)
		}
	}
}

func isMethod(method string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["method"] == method }
}

func isID(id any) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["id"] == id && m["method"] == nil }
}

// key groups lines for comparison: the method (with the item type) of a
// message, or "response to <method>".
func key(m map[string]any, requests map[string]string) string {
	if method, ok := m["method"].(string); ok {
		if p, ok := m["params"].(map[string]any); ok {
			if it, ok := p["item"].(map[string]any); ok {
				return method + ":" + it["type"].(string) + ":" + statusOf(it)
			}
		}
		return method
	}
	b, _ := json.Marshal(m["id"])
	return "response to " + requests[string(b)]
}

func statusOf(it map[string]any) string { s, _ := it["status"].(string); return s }

// setupThread runs a turn in another fake process with the same
// environment and returns its thread.
func setupThread(t *testing.T, env []string) string {
	t.Helper()
	s := start(t, env...)
	s.write(map[string]any{"method": "initialize", "id": 1, "params": map[string]any{"clientInfo": map[string]any{"name": "t", "version": "1"}}})
	s.until("initialize", isID(float64(1)))
	s.write(map[string]any{"method": "thread/start", "id": 2, "params": map[string]any{}})
	res := s.until("thread", isID(float64(2)))
	id := res["result"].(map[string]any)["thread"].(map[string]any)["id"].(string)
	s.write(map[string]any{"method": "turn/start", "id": 3, "params": map[string]any{"threadId": id, "input": []any{map[string]any{"type": "text", "text": "Say hello", "text_elements": []any{}}}}})
	s.until("turn/completed", isMethod("turn/completed"))
	_ = s.in.Close()
	for range s.lines {
	}
	return id
}

// replay plays the transcript's input against the fake and returns the
// fake's output lines.
func replay(t *testing.T, lines []claudetest.Line) (outs []json.RawMessage, requests map[string]string) {
	t.Helper()
	s := start(t, "CODEX_HOME="+t.TempDir())
	requests = map[string]string{}
	thread, turn := "", ""
	turnRunning := false
	for _, l := range lines {
		if l.Dir != "in" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l.Msg, &m); err != nil {
			t.Fatal(err)
		}
		if p, ok := m["params"].(map[string]any); ok {
			if _, ok := p["threadId"]; ok && m["method"] != "thread/resume" {
				p["threadId"] = thread
			}
			if _, ok := p["turnId"]; ok {
				p["turnId"] = turn
			}
		}
		method, _ := m["method"].(string)
		idb, _ := json.Marshal(m["id"])
		switch {
		case method == "" && m["id"] != nil: // an answer to the fake's request
			s.until("server request", func(o map[string]any) bool { return o["method"] != nil && o["id"] == m["id"] })
			s.write(m)
			continue
		case method == "turn/interrupt":
			s.until("a delta", isMethod("item/agentMessage/delta"))
		case method == "thread/resume":
			// Resume needs a thread of the fake's own, with a turn, from an
			// earlier process.
			m["params"].(map[string]any)["threadId"] = setupThread(t, s.env)
		case method == "turn/start" && turnRunning:
			s.until("turn/completed", isMethod("turn/completed"))
			turnRunning = false
		}
		requests[string(idb)] = method
		s.write(m)
		if m["id"] == nil {
			continue
		}
		res := s.until("response to "+method, isID(m["id"]))
		r, _ := res["result"].(map[string]any)
		if th, ok := r["thread"].(map[string]any); ok {
			thread, _ = th["id"].(string)
		}
		if tu, ok := r["turn"].(map[string]any); ok {
			turn, _ = tu["id"].(string)
		}
		if method == "turn/start" {
			turnRunning = true
		}
	}
	if turnRunning {
		s.until("turn/completed", isMethod("turn/completed"))
	}
	_ = s.in.Close()
	for line := range s.lines {
		s.outs = append(s.outs, line)
	}
	return s.outs, requests
}

// TestShapesMatchTranscripts: for the recorded scenarios the fake can
// play, every kind of line Codex printed is printed by the fake with the
// same shape (keys and value types, recursively), and the fake prints no
// kind of line Codex did not.
func TestShapesMatchTranscripts(t *testing.T) {
	for _, name := range []string{"text", "two", "hdr", "shell_untrusted", "shell_decline", "onreq_shell_escalate", "never_full", "patch", "fail500", "interrupt", "resume"} {
		t.Run(name, func(t *testing.T) {
			lines, err := codextest.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			recorded := map[string][]string{}
			reqs := map[string]string{}
			for _, l := range lines {
				var m map[string]any
				if json.Unmarshal(l.Msg, &m) != nil {
					continue
				}
				if l.Dir == "in" && m["method"] != nil {
					b, _ := json.Marshal(m["id"])
					reqs[string(b)] = m["method"].(string)
				}
				if l.Dir == "out" {
					k := key(m, reqs)
					recorded[k] = appendNew(recorded[k], claudetest.Shape(l.Msg))
				}
			}
			outs, fakeReqs := replay(t, lines)
			got := map[string][]string{}
			for _, o := range outs {
				var m map[string]any
				if json.Unmarshal(o, &m) != nil {
					t.Errorf("fake printed a non-JSON line: %s", o)
					continue
				}
				k := key(m, fakeReqs)
				got[k] = appendNew(got[k], claudetest.Shape(o))
			}
			for k, shapes := range recorded {
				for _, sh := range shapes {
					if !slices.Contains(got[k], sh) {
						t.Errorf("%s: the fake never printed the recorded shape\n%s\nfake: %v", k, sh, got[k])
					}
				}
			}
			for k := range got {
				if _, ok := recorded[k]; !ok {
					t.Errorf("the fake printed %s, which Codex did not", k)
				}
			}
		})
	}
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func TestProtocolErrors(t *testing.T) {
	s := start(t, "CODEX_HOME="+t.TempDir())
	errOf := func(id float64) string {
		t.Helper()
		res := s.until("response", isID(id))
		e, _ := res["error"].(map[string]any)
		msg, _ := e["message"].(string)
		return msg
	}
	s.write(map[string]any{"method": "thread/start", "id": 1, "params": map[string]any{}})
	if got := errOf(1); got != "Not initialized" {
		t.Errorf("before initialize: %q", got)
	}
	s.write(map[string]any{"method": "initialize", "id": 2, "params": map[string]any{"clientInfo": map[string]any{"name": "t"}}})
	s.until("initialize", isID(float64(2)))
	s.write(map[string]any{"method": "initialize", "id": 3, "params": map[string]any{}})
	if got := errOf(3); got != "Already initialized" {
		t.Errorf("second initialize: %q", got)
	}
	s.write(map[string]any{"method": "newConversation", "id": 4, "params": map[string]any{}})
	if got := errOf(4); !strings.Contains(got, "unknown variant") {
		t.Errorf("removed v1 method: %q", got)
	}
	s.write(map[string]any{"method": "thread/start", "id": 5, "params": map[string]any{"sandbox": "workspaceWrite"}})
	if got := errOf(5); !strings.Contains(got, "unknown variant `workspaceWrite`") {
		t.Errorf("camelCase sandbox: %q", got)
	}
	s.write(map[string]any{"method": "thread/resume", "id": 6, "params": map[string]any{"threadId": "nope"}})
	if got := errOf(6); !strings.Contains(got, "thread not found") {
		t.Errorf("unknown thread: %q", got)
	}
	s.write(map[string]any{"method": "turn/start", "id": 7, "params": map[string]any{"threadId": "nope", "input": []any{}}})
	if got := errOf(7); !strings.Contains(got, "thread not found") {
		t.Errorf("turn without a thread: %q", got)
	}
}

func TestResumeAThreadCodexWrote(t *testing.T) {
	home := t.TempDir()
	const id = "01a21b7b-d8f3-7ee2-9179-0854450fbf7b"
	dir := filepath.Join(home, "sessions", "2026", "11", "27")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rollout-2026-11-27T05-30-31-"+id+".jsonl"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "CODEX_HOME="+home)
	s.write(map[string]any{"method": "initialize", "id": 1, "params": map[string]any{"clientInfo": map[string]any{"name": "t"}}})
	s.until("initialize", isID(float64(1)))
	s.write(map[string]any{"method": "thread/resume", "id": 2, "params": map[string]any{"threadId": id}})
	res := s.until("resume", isID(float64(2)))
	th, _ := res["result"].(map[string]any)["thread"].(map[string]any)
	if th["id"] != id {
		t.Fatalf("resume of a thread with a rollout: %v", res)
	}
	// Another id, without a rollout, is still unknown.
	s.write(map[string]any{"method": "thread/resume", "id": 3, "params": map[string]any{"threadId": "01a21b7b-d8f3-7ee2-9179-000000000000"}})
	res = s.until("resume", isID(float64(3)))
	if res["error"] == nil {
		t.Errorf("resume of an unknown thread: %v", res)
	}
}
