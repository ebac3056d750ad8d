package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func execBody(t *testing.T, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExec(t *testing.T) {
	h := startHost(t, withEnv("TERMINAL_EXEC_OUTPUT_KB", "1"), withEnv("TERMINAL_EXEC_TIMEOUT", "10s"), withEnv("TERMINAL_EXEC_MAX_TIMEOUT", "30s"))
	dir := t.TempDir()
	tests := []struct {
		name       string
		body       map[string]any
		wantStatus int
		want       map[string]any
	}{
		{
			"stdout and stderr",
			map[string]any{"command": "echo out; echo err >&2", "cwd": dir},
			200,
			map[string]any{"stdout": "out\n", "stderr": "err\n", "exit_code": float64(0), "truncated": false},
		},
		{
			"non-zero exit is still 200",
			map[string]any{"command": "echo bye; exit 3", "cwd": dir},
			200,
			map[string]any{"stdout": "bye\n", "exit_code": float64(3)},
		},
		{"runs in cwd", map[string]any{"command": "pwd", "cwd": dir}, 200, map[string]any{"stdout": dir + "\n"}},
		{"stdin is empty", map[string]any{"command": "cat; echo done", "cwd": dir}, 200, map[string]any{"stdout": "done\n"}},
		{"killed by a signal", map[string]any{"command": "kill -9 $$", "cwd": dir}, 200, map[string]any{"exit_code": float64(137)}},
		{
			"output capped per stream",
			map[string]any{"command": "head -c 5000 /dev/zero | tr '\\0' a; echo e >&2", "cwd": dir},
			200,
			map[string]any{"stdout": strings.Repeat("a", 1024), "stderr": "e\n", "truncated": true, "exit_code": float64(0)},
		},
		{"timeout_s honoured", map[string]any{"command": "echo fast", "cwd": dir, "timeout_s": 2.5}, 200, map[string]any{"stdout": "fast\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, got := h.request("POST", "/api/exec", "application/json", execBody(t, tt.body))
			if status != tt.wantStatus {
				t.Fatalf("got %d %v, want %d", status, got, tt.wantStatus)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %#v, want %#v", k, got[k], v)
				}
			}
			if _, ok := got["duration_ms"].(float64); !ok {
				t.Errorf("no duration_ms in %v", got)
			}
		})
	}
}

// TestExecTimeout: past its timeout the command's whole session is killed
// (background jobs included) and the answer is 408 with what it printed.
func TestExecTimeout(t *testing.T) {
	h := startHost(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	start := time.Now()
	status, got := h.request("POST", "/api/exec", "application/json", execBody(t, map[string]any{
		"command":   "sleep 300 & echo $! > " + pidFile + "; echo started; echo warn >&2; sleep 300",
		"cwd":       dir,
		"timeout_s": 0.5,
	}))
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v for a 0.5 s timeout", took)
	}
	if status != 408 || got["error"] != "timeout" || got["message"] == "" || got["stdout"] != "started\n" ||
		got["stderr"] != "warn\n" || got["exit_code"] != float64(137) {
		t.Errorf("got %d %v, want 408 timeout with the output so far", status, got)
	}
	if ms, _ := got["duration_ms"].(float64); ms < 500 {
		t.Errorf("duration_ms = %v, want at least 500", got["duration_ms"])
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	waitFor(t, 5*time.Second, "the background sleep to be gone", func() bool { return !running(pid) })
}

// running reports whether pid is a live (not zombie) process.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

func TestExecBadRequests(t *testing.T) {
	h := startHost(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		contentType string
		body        string
		wantStatus  int
		wantCode    string
	}{
		{"wrong content type", "text/plain", `{"command":"true","cwd":"/"}`, 415, "unsupported_media_type"},
		{"no content type", "", `{"command":"true","cwd":"/"}`, 415, "unsupported_media_type"},
		{"malformed JSON", "application/json", `{"command":`, 400, "bad_request"},
		{"not an object", "application/json", `["true"]`, 400, "bad_request"},
		{"unknown field", "application/json", `{"command":"true","cwd":"/","shell":"zsh"}`, 400, "bad_request"},
		{"trailing data", "application/json", `{"command":"true","cwd":"/"} {}`, 400, "bad_request"},
		{"trailing bracket", "application/json", `{"command":"true","cwd":"/"}]`, 400, "bad_request"},
		{"empty command", "application/json", `{"command":"","cwd":"/"}`, 400, "bad_request"},
		{"blank command", "application/json", `{"command":"  \n","cwd":"/"}`, 400, "bad_request"},
		{"missing command", "application/json", `{"cwd":"/"}`, 400, "bad_request"},
		{"missing cwd", "application/json", `{"command":"true"}`, 400, "bad_request"},
		{"relative cwd", "application/json", `{"command":"true","cwd":"tmp"}`, 400, "bad_request"},
		{"cwd does not exist", "application/json", `{"command":"true","cwd":"/does/not/exist"}`, 400, "bad_request"},
		{"cwd is a file", "application/json", `{"command":"true","cwd":"` + file + `"}`, 400, "bad_request"},
		{"zero timeout", "application/json", `{"command":"true","cwd":"/","timeout_s":0}`, 400, "bad_request"},
		{"negative timeout", "application/json", `{"command":"true","cwd":"/","timeout_s":-1}`, 400, "bad_request"},
		{"timeout over the maximum", "application/json", `{"command":"true","cwd":"/","timeout_s":601}`, 400, "bad_request"},
		{"timeout as a string", "application/json", `{"command":"true","cwd":"/","timeout_s":"5"}`, 400, "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, got := h.request("POST", "/api/exec", tt.contentType, tt.body)
			if status != tt.wantStatus || got["error"] != tt.wantCode || got["message"] == "" {
				t.Errorf("got %d %v, want %d %s with a message", status, got, tt.wantStatus, tt.wantCode)
			}
		})
	}
}
