package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	helloText  = "Hello from the fake model."
	cliVersion = "0.169.0"
)

// out writes protocol lines and keeps the transcript.
type out struct {
	mu    sync.Mutex
	w     io.Writer
	errw  io.Writer
	log   *os.File
	start time.Time
}

func (o *out) record(dir string, msg any) {
	if o.log == nil {
		return
	}
	b, _ := json.Marshal(map[string]any{"dt": time.Since(o.start).Seconds(), "dir": dir, "msg": msg})
	_, _ = o.log.Write(append(b, '\n'))
}

func (o *out) json(v any) {
	b, _ := json.Marshal(v)
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = o.w.Write(append(b, '\n'))
	o.record("out", json.RawMessage(b))
}

func (o *out) raw(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = io.WriteString(o.w, line+"\n")
	o.record("out", line)
}

func (o *out) stderr(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = io.WriteString(o.errw, line+"\n")
	o.record("stderr", line)
}

func (o *out) in(line []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var v any
	if json.Unmarshal(line, &v) != nil {
		v = string(line)
	}
	o.record("in", v)
}

// thread is a conversation, kept in the state dir.
type thread struct {
	ID         string `json:"id"`
	Turns      int    `json:"turns"`
	Model      string `json:"model"`
	Cwd        string `json:"cwd"`
	ForkedFrom string `json:"forked_from,omitempty"`
	CreatedAt  int64  `json:"created_at"`
	// TurnList is the finished turns, as thread/resume returns them.
	TurnList []any `json:"turn_list,omitempty"`
	// Total and Last are the thread's token usage, restored on resume.
	Total    usage  `json:"total"`
	Last     usage  `json:"last"`
	LastTurn string `json:"last_turn,omitempty"`
}

type fake struct {
	o        *out
	getenv   func(string) string
	stateDir string

	mu          sync.Mutex
	initialized bool
	nextReq     int
	waiting     map[string]chan reply // server request id → its answer
	th          *thread
	policy      string
	sandbox     string
	model       string
	turn        *turnRun
	allowed     map[string]bool // approval kinds accepted for the session
	restore     bool            // a resumed thread: report its usage at the next turn
	turns       sync.WaitGroup
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

type usage struct {
	TotalTokens           int `json:"totalTokens"`
	InputTokens           int `json:"inputTokens"`
	CachedInputTokens     int `json:"cachedInputTokens"`
	CacheWriteInputTokens int `json:"cacheWriteInputTokens"`
	OutputTokens          int `json:"outputTokens"`
	ReasoningOutputTokens int `json:"reasoningOutputTokens"`
}

type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 || args[0] != "app-server" {
		fmt.Fprintln(stderr, "usage: fakecodex app-server [-c key=value ...]")
		return 2
	}
	o := &out{w: stdout, errw: stderr, start: time.Now()}
	if path := getenv("FAKECODEX_LOG"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err == nil {
			o.log = f
			defer f.Close()
		}
	}
	o.record("meta", map[string]any{"argv": args, "pid": os.Getpid()})
	f := &fake{o: o, getenv: getenv, waiting: map[string]chan reply{}, allowed: map[string]bool{}}
	f.stateDir = getenv("FAKECODEX_STATE_DIR")
	if f.stateDir == "" && getenv("CODEX_HOME") != "" {
		f.stateDir = filepath.Join(getenv("CODEX_HOME"), "fake-threads")
	}
	f.model = getenv("FAKECODEX_MODEL")
	if f.model == "" {
		f.model = "mock-model"
	}
	o.stderr("WARNING: proceeding, even though we could not create PATH aliases (fakecodex)")

	br := bufio.NewReaderSize(stdin, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if s := strings.TrimSpace(string(line)); s != "" {
			o.in([]byte(s))
			f.handle([]byte(s))
		}
		if err != nil {
			break
		}
	}
	// EOF: a turn still waiting for an answer is cut short, as Codex does.
	f.mu.Lock()
	if f.turn != nil {
		f.turn.interrupt()
	}
	f.mu.Unlock()
	f.turns.Wait()
	o.record("meta", map[string]any{"exit": 0})
	return 0
}

func (f *fake) now() int64 { return time.Now().UnixMilli() }

func (f *fake) notify(method string, params any) {
	f.o.json(map[string]any{"method": method, "params": params, "emittedAtMs": f.now()})
}

func (f *fake) respond(id json.RawMessage, result any) {
	f.o.json(map[string]any{"id": id, "result": result})
}

func (f *fake) fail(id json.RawMessage, code int, msg string) {
	f.o.json(map[string]any{"id": id, "error": map[string]any{"code": code, "message": msg}})
}

func (f *fake) handle(line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		f.o.stderr("ERROR codex_app_server: invalid JSON-RPC message: " + err.Error())
		return
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	if m.Method == "" {
		if hasID { // an answer to one of our requests
			key := idKey(m.ID)
			f.mu.Lock()
			ch := f.waiting[key]
			delete(f.waiting, key)
			f.mu.Unlock()
			if ch != nil {
				ch <- reply{Result: m.Result, Error: m.Error}
			}
		}
		return
	}
	if !hasID { // a notification: initialized and anything else are accepted
		return
	}
	f.mu.Lock()
	initialized := f.initialized
	f.mu.Unlock()
	if m.Method != "initialize" && !initialized {
		f.fail(m.ID, -32600, "Not initialized")
		return
	}
	switch m.Method {
	case "initialize":
		f.initialize(m)
	case "thread/start", "thread/resume", "thread/fork":
		f.threadStart(m)
	case "turn/start":
		f.turnStart(m)
	case "turn/interrupt":
		f.mu.Lock()
		t := f.turn
		f.mu.Unlock()
		f.respond(m.ID, map[string]any{})
		if t != nil {
			t.interrupt()
		}
	default:
		f.fail(m.ID, -32600, "unknown variant `"+m.Method+"`")
	}
}

func idKey(id json.RawMessage) string {
	var n int
	if json.Unmarshal(id, &n) == nil {
		return strconv.Itoa(n)
	}
	return string(id)
}

func (f *fake) initialize(m message) {
	var p struct {
		ClientInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	_ = json.Unmarshal(m.Params, &p)
	f.mu.Lock()
	again := f.initialized
	f.initialized = true
	f.mu.Unlock()
	if again {
		f.fail(m.ID, -32600, "Already initialized")
		return
	}
	home := f.codexHome()
	f.respond(m.ID, map[string]any{
		"userAgent": fmt.Sprintf("%s/%s (Debian 12.0.0; x86_64) xterm (%s; %s)", p.ClientInfo.Name, cliVersion, p.ClientInfo.Name, p.ClientInfo.Version),
		"codexHome": home, "platformFamily": "unix", "platformOs": "linux",
	})
}

func (f *fake) codexHome() string {
	if home := f.getenv("CODEX_HOME"); home != "" {
		return home
	}
	return filepath.Join(f.getenv("HOME"), ".codex")
}

// newID is a UUIDv7-looking id.
func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (f *fake) load(id string) (*thread, bool) {
	if f.stateDir == "" {
		return &thread{ID: id, CreatedAt: time.Now().Unix()}, true
	}
	b, err := os.ReadFile(filepath.Join(f.stateDir, filepath.Base(id)+".json"))
	if err != nil {
		// A thread Codex itself ran (a user's `codex` in a terminal) has a
		// rollout file under the sessions directory, and resumes.
		if rollout := f.rollout(id); rollout != "" {
			return &thread{ID: id, CreatedAt: time.Now().Unix()}, true
		}
		return nil, false
	}
	var t thread
	if json.Unmarshal(b, &t) != nil {
		return nil, false
	}
	return &t, true
}

// rollout is the path of a rollout file of thread id under
// $CODEX_HOME/sessions/YYYY/MM/DD, or "".
func (f *fake) rollout(id string) string {
	if id == "" || strings.ContainsAny(id, "/*?[\\") {
		return ""
	}
	matches, _ := filepath.Glob(filepath.Join(f.codexHome(), "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
	if len(matches) == 0 {
		return ""
	}
	return matches[0]
}

func (f *fake) save(t *thread) {
	if f.stateDir == "" {
		return
	}
	_ = os.MkdirAll(f.stateDir, 0o700)
	b, _ := json.Marshal(t)
	_ = os.WriteFile(filepath.Join(f.stateDir, t.ID+".json"), b, 0o600)
}

var (
	policies  = map[string]bool{"untrusted": true, "on-request": true, "never": true}
	sandboxes = map[string]string{"read-only": "readOnly", "workspace-write": "workspaceWrite", "danger-full-access": "dangerFullAccess"}
)

func (f *fake) threadStart(m message) {
	var p struct {
		ThreadID       string          `json:"threadId"`
		Cwd            string          `json:"cwd"`
		Model          string          `json:"model"`
		ApprovalPolicy json.RawMessage `json:"approvalPolicy"`
		Sandbox        string          `json:"sandbox"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		f.fail(m.ID, -32600, "Invalid request: "+err.Error())
		return
	}
	policy := "on-request"
	if len(p.ApprovalPolicy) > 0 && string(p.ApprovalPolicy) != "null" {
		var s string
		if json.Unmarshal(p.ApprovalPolicy, &s) != nil || !policies[s] {
			f.fail(m.ID, -32600, "Invalid request: unknown variant "+string(p.ApprovalPolicy)+", expected one of `untrusted`, `on-request`, `granular`, `never`")
			return
		}
		policy = s
	}
	sandbox := "workspace-write"
	if p.Sandbox != "" {
		if sandboxes[p.Sandbox] == "" {
			f.fail(m.ID, -32600, "Invalid request: unknown variant `"+p.Sandbox+"`, expected one of `read-only`, `workspace-write`, `danger-full-access`")
			return
		}
		sandbox = p.Sandbox
	}
	cwd := p.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	var t *thread
	switch m.Method {
	case "thread/start":
		t = &thread{ID: newID(), CreatedAt: time.Now().Unix()}
	default:
		if p.ThreadID == "" {
			f.fail(m.ID, -32600, "Invalid request: missing field `threadId`")
			return
		}
		old, ok := f.load(p.ThreadID)
		if !ok {
			f.fail(m.ID, -32600, "thread not found: "+p.ThreadID)
			return
		}
		t = old
		if m.Method == "thread/fork" {
			t = &thread{
				ID: newID(), Turns: old.Turns, Model: old.Model, ForkedFrom: old.ID, CreatedAt: time.Now().Unix(),
				TurnList: old.TurnList, Total: old.Total, Last: old.Last, LastTurn: old.LastTurn,
			}
		}
	}
	model := f.model
	if p.Model != "" {
		model = p.Model
	}
	t.Model, t.Cwd = model, cwd
	f.save(t)
	f.mu.Lock()
	f.th, f.policy, f.sandbox, f.model = t, policy, sandbox, model
	f.restore = m.Method != "thread/start" && t.LastTurn != ""
	f.mu.Unlock()
	th := f.threadJSON(t)
	if m.Method != "thread/start" {
		th["turns"] = t.TurnList
		if t.TurnList == nil {
			th["turns"] = []any{}
		}
	}
	f.notify("configWarning", map[string]any{"summary": "Codex could not find bubblewrap on PATH. Install bubblewrap with your OS package manager. Codex will use the bundled bubblewrap in the meantime.", "details": nil})
	f.notify("remoteControl/status/changed", map[string]any{"status": "disabled", "serverName": "fake", "installationId": "00000000-0000-4000-8000-000000000000", "environmentId": nil})
	if m.Method == "thread/resume" {
		f.notify("deprecationNotice", map[string]any{"summary": "Full-history hydration is deprecated for paginated threads; use `excludeTurns: true`, then page with `thread/turns/list` and `thread/items/list`.", "details": nil})
		f.notify("thread/status/changed", map[string]any{"threadId": t.ID, "status": map[string]any{"type": "idle"}})
	}
	res := map[string]any{
		"thread": th, "model": model, "modelProvider": "mock_provider", "serviceTier": nil,
		"disabledPluginIds": []any{}, "cwd": cwd, "runtimeWorkspaceRoots": []string{cwd},
		"instructionSources": []any{}, "approvalPolicy": policy, "approvalsReviewer": "user",
		"sandbox": sandboxJSON(sandbox), "activePermissionProfile": nil, "reasoningEffort": nil,
		"multiAgentMode": "explicitRequestOnly",
	}
	if m.Method == "thread/resume" {
		res["collaborationMode"] = map[string]any{"mode": "default", "settings": map[string]any{"model": model, "reasoning_effort": nil, "developer_instructions": nil}}
		res["initialTurnsPage"] = nil
		res["turnsBackwardsCursor"] = `{"requestedThreadId":"` + t.ID + `","rolloutOrdinal":14,"includeAnchor":true,"scope":{"kind":"turns"}}`
		res["itemsBackwardsCursor"] = `{"requestedThreadId":"` + t.ID + `","rolloutOrdinal":18,"includeAnchor":true,"scope":{"kind":"itemsByCreatedAtOrdinal"}}`
	}
	f.respond(m.ID, res)
	if m.Method != "thread/resume" {
		f.notify("thread/started", map[string]any{"thread": th})
	}
}

func sandboxJSON(mode string) map[string]any {
	s := map[string]any{"type": sandboxes[mode]}
	if mode == "workspace-write" {
		s["writableRoots"], s["networkAccess"], s["excludeTmpdirEnvVar"], s["excludeSlashTmp"] = []any{}, false, false, false
	}
	if mode == "read-only" {
		s["networkAccess"] = false
	}
	return s
}

func (f *fake) threadJSON(t *thread) map[string]any {
	var forked any
	if t.ForkedFrom != "" {
		forked = t.ForkedFrom
	}
	return map[string]any{
		"id": t.ID, "environments": []any{map[string]any{"environmentId": "local", "cwd": t.Cwd, "runtimeWorkspaceRoots": []string{t.Cwd}}},
		"extra": nil, "sessionId": t.ID, "forkedFromId": forked, "attachedToThreadId": nil, "parentThreadId": nil,
		"preview": "", "ephemeral": false, "section": nil, "sectionEnteredAt": nil, "projectId": nil,
		"historyMode": "paginated", "modelProvider": "mock_provider", "model": t.Model, "reasoningEffort": nil,
		"createdAt": t.CreatedAt, "updatedAt": time.Now().Unix(), "recencyAt": time.Now().Unix(),
		"status": map[string]any{"type": "idle"}, "cwd": t.Cwd,
		"path": filepath.Join(f.codexHome(), "sessions", time.Unix(t.CreatedAt, 0).UTC().Format("2006/01/02"),
			"rollout-"+time.Unix(t.CreatedAt, 0).UTC().Format("2006-01-02T15-04-05")+"-"+t.ID+".jsonl"), "cliVersion": cliVersion,
		"originator": "svc_code", "source": "vscode", "canAcceptDirectInput": true, "threadSource": nil,
		"agentNickname": nil, "agentRole": nil, "gitInfo": nil, "name": nil, "daybreakEnabled": nil, "turns": []any{},
	}
}
