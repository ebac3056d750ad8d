package codex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/svc-code/svc-code/libs/childenv"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// launch is what one process is started with.
type launch struct {
	Program string
	Args    []string
	Mode    string
	Policy  Policy
	Model   string
	Resume  string // the thread to continue, or ""
	Fork    bool   // fork Resume into a new thread instead of continuing it
}

// Args is the app-server's argv (without the program): `app-server` and
// extra (e.g. `-c key=value` overrides).
func Args(extra []string) []string {
	return append([]string{"app-server"}, extra...)
}

// pendingCall is one of our requests waiting for its response.
type pendingCall struct {
	method string
	ch     chan callResult // capacity 1
	// hook, when set, runs in the reader goroutine before anything after
	// the response is read, so that the events it pushes keep their order.
	hook func(result json.RawMessage, e *rpcError)
}

type callResult struct {
	result json.RawMessage
	err    error
}

// permEntry is a server approval request waiting for the user.
type permEntry struct {
	rawID  json.RawMessage // the server's id, echoed in our answer
	method string
	req    agent.PermissionRequest
	// decisions that "always allow" may pick, parallel to req.Suggestions
	always []any
}

// process is one running app-server and the state of its protocol.
type process struct {
	p      *Provider
	cmd    *exec.Cmd
	pid    int
	num    int // the provider's process number, in permission request ids
	args   []string
	launch launch

	stdin *os.File
	wsem  chan struct{} // capacity 1: serialises stdin writes, with timeouts
	done  chan struct{} // closed when exited and all output is reported

	mu         sync.Mutex
	seq        int
	pending    map[string]pendingCall
	perms      map[string]*permEntry // by our request id
	permOrder  []string
	thread     string
	model      string
	cliVersion string
	cur        *turnState   // the running turn
	queue      []*turnState // turns sent while another ran
	cause      string       // why we stopped it; "" if it exited by itself
	reaped     bool         // cmd.Wait returned
	exited     bool
	exit       agent.ProcessExited
	lastStderr string
	commands   map[string]*command // running commandExecution items (commands.go)
}

// spawn starts the app-server and its reader goroutines. The process
// outlives ctx: only its values are kept.
func spawn(ctx context.Context, p *Provider, num int, l launch) (*process, error) {
	path, err := exec.LookPath(l.Program)
	if err != nil {
		return nil, &agent.MissingExecutableError{Provider: Name, Program: l.Program, PathName: PathName, Err: err}
	}
	// Start reports a missing working directory as ENOENT, like a missing
	// program: tell them apart first.
	if dir := p.cfg.Cwd; dir != "" {
		info, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("working directory %s: not a directory", dir)
		}
	}
	cmd := exec.CommandContext(context.WithoutCancel(ctx), path, l.Args...)
	cmd.Dir = p.cfg.Cwd
	// The server's environment without its own variables (libs/childenv):
	// an agent runs shell commands a prompt, or a file it reads, can steer.
	cmd.Env = childenv.Filter(append(os.Environ(), p.cfg.Env...))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("create stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("create stderr pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return nil, &agent.MissingExecutableError{Provider: Name, Program: l.Program, PathName: PathName, Err: err}
		}
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	closeAll(inR, outW, errW)
	pid := cmd.Process.Pid
	p.log.InfoContext(ctx, "agent process started", "pid", pid, "args", l.Args)
	p.events.Push(agent.ProcessStarted{PID: pid, Args: l.Args, Resume: l.Resume, PermissionMode: l.Mode})
	pr := &process{
		p: p, cmd: cmd, pid: pid, num: num, args: l.Args, launch: l,
		stdin: inW, wsem: make(chan struct{}, 1), done: make(chan struct{}),
		pending: map[string]pendingCall{}, perms: map[string]*permEntry{},
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		pr.readStdout(outR)
	}()
	go func() {
		defer readers.Done()
		pr.readStderr(errR)
	}()
	go pr.wait(&readers, outR, errR)
	return pr, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// handshake is initialize, initialized, then the thread: started, resumed
// or forked. A thread that cannot be resumed is replaced by a new one (and
// said so on stderr), so that a lost Codex home does not lock the session.
func (pr *process) handshake(ctx context.Context) error {
	init := map[string]any{
		"clientInfo":   map[string]any{"name": ClientName, "title": "svc-code", "version": ProtocolVersion},
		"capabilities": nil,
	}
	if _, err := pr.call(ctx, "initialize", init, nil); err != nil {
		return err
	}
	if err := pr.notify(ctx, "initialized", nil); err != nil {
		return err
	}
	l := pr.launch
	params := map[string]any{
		"cwd":            pr.p.cfg.Cwd,
		"approvalPolicy": l.Policy.ApprovalPolicy,
		"sandbox":        l.Policy.Sandbox,
	}
	if l.Model != "" {
		params["model"] = l.Model
	}
	method := "thread/start"
	if l.Resume != "" {
		method = "thread/resume"
		if l.Fork {
			method = "thread/fork"
		}
		params["threadId"] = l.Resume
	}
	res, err := pr.call(ctx, method, params, nil)
	var rpcErr *RPCError
	// Overloaded is no verdict on the thread: replacing it would lose the
	// conversation for good, so the launch fails and the next one retries.
	if errors.As(err, &rpcErr) && l.Resume != "" && rpcErr.Code != codeOverloaded {
		pr.p.events.Push(agent.Stderr{Line: fmt.Sprintf("codex: cannot continue thread %s (%s); starting a new thread", l.Resume, rpcErr.Message)})
		pr.p.events.Push(agent.ResumeLost{SessionID: l.Resume, Reason: rpcErr.Message})
		delete(params, "threadId")
		method = "thread/start"
		res, err = pr.call(ctx, method, params, nil)
	}
	if err != nil {
		return err
	}
	var tr threadResult
	decodeLenient(res, &tr)
	if tr.Thread.ID == "" {
		return fmt.Errorf("codex %s: the answer names no thread", method)
	}
	pr.mu.Lock()
	pr.thread, pr.model, pr.cliVersion = tr.Thread.ID, tr.Model, tr.Thread.CliVersion
	pr.mu.Unlock()
	if l.Fork {
		pr.p.forked()
	}
	pr.p.noteThread(tr.Thread.ID)
	return nil
}

// readStdout is the single reader of stdout. bufio.Reader's ReadBytes
// grows its result as needed, so lines have no length cap.
func (pr *process) readStdout(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			pr.handleLine(line)
		}
		if err != nil {
			go pr.stdoutClosed()
			return
		}
	}
}

// stdoutGrace is how long a process may live on after its stdout closed
// (an exiting process closes it just before it is reaped).
const stdoutGrace = time.Second

// stdoutClosed ends a process that closed its stdout but lives on: nothing
// it does can reach us any more, and the session would wait on it (the
// handshake for RequestTimeout, a turn for ever).
func (pr *process) stdoutClosed() {
	timer := time.NewTimer(stdoutGrace)
	defer timer.Stop()
	select {
	case <-pr.done:
		return
	case <-timer.C:
	}
	pr.mu.Lock()
	// Reaped, or being stopped by us (stop and interruptHard kill it in
	// their own time): nothing to do.
	act := !pr.reaped && pr.cause == ""
	if act {
		pr.cause = agent.ExitCrashed
	}
	pr.mu.Unlock()
	if !act {
		return
	}
	pr.p.events.Push(agent.Stderr{Line: "codex: the app-server closed its stdout but kept running; ending it"})
	pr.signal(agent.ExitCrashed, syscall.SIGKILL)
}

func (pr *process) readStderr(r io.Reader) {
	br := bufio.NewReaderSize(r, 16<<10)
	for {
		line, err := br.ReadBytes('\n')
		if s := strings.TrimRight(string(line), "\r\n"); strings.TrimSpace(s) != "" {
			pr.mu.Lock()
			pr.lastStderr = s
			pr.mu.Unlock()
			pr.p.events.Push(agent.Stderr{Line: s})
		}
		if err != nil {
			return
		}
	}
}

// handleLine routes one stdout line by its shape.
func (pr *process) handleLine(line []byte) {
	line = bytes.TrimRight(line, "\r\n")
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return
	}
	m, ok := parseWire(trimmed)
	if !ok {
		pr.p.events.Push(agent.RawOutput{Line: string(line)})
		return
	}
	raw := json.RawMessage(append([]byte(nil), trimmed...))
	switch m.shape() {
	case shapeResponse:
		pr.resolve(&m, raw)
	case shapeRequest:
		pr.serverRequest(&m, raw)
	case shapeNotification:
		pr.p.events.Push(agent.Control{Type: shapeNotification, Subtype: m.Method, Raw: raw})
		pr.notification(&m)
	default:
		pr.p.events.Push(agent.RawOutput{Line: string(line)})
	}
}

// resolve hands a response to the request waiting for it.
func (pr *process) resolve(m *wireMsg, raw json.RawMessage) {
	id := m.idString()
	pr.mu.Lock()
	pc, ok := pr.pending[id]
	delete(pr.pending, id)
	pr.mu.Unlock()
	pr.p.events.Push(agent.Control{Type: shapeResponse, Subtype: responseSubtype(m), RequestID: id, Request: pc.method, Raw: raw})
	if !ok {
		pr.p.log.Debug("response without a waiter", "id", id, "pid", pr.pid)
		return
	}
	if pc.hook != nil {
		pc.hook(m.Result, m.Error)
	}
	res := callResult{result: m.Result}
	if m.Error != nil {
		res.err = &RPCError{Method: pc.method, Code: m.Error.Code, Message: m.Error.Message}
	}
	pc.ch <- res
}

func responseSubtype(m *wireMsg) string {
	if m.Error != nil {
		return "error"
	}
	return "success"
}

// serverRequest handles a request from the server: approvals wait for the
// user, anything else is refused with a JSON-RPC error.
func (pr *process) serverRequest(m *wireMsg, raw json.RawMessage) {
	var perm *permEntry
	switch m.Method {
	case "item/commandExecution/requestApproval":
		perm = pr.commandApproval(m, raw)
	case "item/fileChange/requestApproval":
		perm = pr.fileChangeApproval(m, raw)
	}
	if perm == nil {
		pr.p.events.Push(agent.Control{Type: shapeRequest, Subtype: m.Method, RequestID: m.idString(), Raw: raw})
		// Not from this goroutine, which must keep reading while the
		// write waits.
		rawID := append(json.RawMessage(nil), m.ID...)
		method := m.Method
		go pr.refuse(rawID, method)
		return
	}
	pr.mu.Lock()
	pr.perms[perm.req.RequestID] = perm
	pr.permOrder = append(pr.permOrder, perm.req.RequestID)
	pr.mu.Unlock()
	pr.p.events.Push(perm.req)
}

func (pr *process) refuse(rawID json.RawMessage, method string) {
	msg := map[string]any{"id": rawID, "error": rpcError{Code: codeMethodNotFound, Message: "svc-code does not support " + method}}
	if err := pr.writeJSON(context.Background(), msg); err != nil {
		pr.p.log.Debug("refuse server request", "method", method, "err", err)
	}
}

// requestID is the id a server request gets in the API: unique across the
// provider's processes, whose own ids restart at 0.
func (pr *process) requestID(m *wireMsg) string {
	return fmt.Sprintf("codex-%d-%s", pr.num, m.idString())
}

func (pr *process) commandApproval(m *wireMsg, raw json.RawMessage) *permEntry {
	var a commandApproval
	decodeLenient(m.Params, &a)
	input := map[string]any{"command": a.Command, "cwd": a.Cwd}
	reason := ""
	if a.Reason != nil && *a.Reason != "" {
		reason = *a.Reason
		input["reason"] = reason
	}
	inputJSON, _ := json.Marshal(input)
	e := &permEntry{rawID: append(json.RawMessage(nil), m.ID...), method: m.Method}
	e.req = agent.PermissionRequest{
		RequestID: pr.requestID(m), ToolName: "Bash", Input: inputJSON,
		ToolUseID: a.ItemID, Description: reason, Raw: raw,
	}
	e.addSuggestion(map[string]any{"type": "acceptForSession", "description": "Always allow this command for this session"}, "acceptForSession")
	for _, d := range a.AvailableDecisions {
		var obj map[string]struct {
			Amendment []string `json:"execpolicy_amendment"`
		}
		if json.Unmarshal(d, &obj) != nil {
			continue
		}
		if am, ok := obj["acceptWithExecpolicyAmendment"]; ok && len(am.Amendment) > 0 {
			e.addSuggestion(map[string]any{
				"type": "acceptWithExecpolicyAmendment", "execpolicy_amendment": am.Amendment,
				"description": "Always allow commands that start with: " + strings.Join(am.Amendment, " "),
			}, map[string]any{"acceptWithExecpolicyAmendment": map[string]any{"execpolicy_amendment": am.Amendment}})
		}
	}
	return e
}

func (pr *process) fileChangeApproval(m *wireMsg, raw json.RawMessage) *permEntry {
	var a fileChangeApproval
	decodeLenient(m.Params, &a)
	pr.mu.Lock()
	changes := []neutralChange{}
	if t := pr.cur; t != nil && t.changes[a.ItemID] != nil {
		changes = t.changes[a.ItemID]
	}
	pr.mu.Unlock()
	input := map[string]any{"changes": changes}
	reason := ""
	if a.Reason != nil && *a.Reason != "" {
		reason = *a.Reason
		input["reason"] = reason
	}
	inputJSON, _ := json.Marshal(input)
	e := &permEntry{rawID: append(json.RawMessage(nil), m.ID...), method: m.Method}
	e.req = agent.PermissionRequest{
		RequestID: pr.requestID(m), ToolName: "Edit", Input: inputJSON,
		ToolUseID: a.ItemID, Description: reason, Raw: raw,
	}
	e.addSuggestion(map[string]any{"type": "acceptForSession", "description": "Always allow file changes for this session"}, "acceptForSession")
	return e
}

func (e *permEntry) addSuggestion(s map[string]any, decision any) {
	b, _ := json.Marshal(s)
	e.req.Suggestions = append(e.req.Suggestions, b)
	e.always = append(e.always, decision)
}

// notification translates a notification into neutral events.
func (pr *process) notification(m *wireMsg) {
	switch m.Method {
	case "turn/started":
		var tp turnParams
		decodeLenient(m.Params, &tp)
		pr.mu.Lock()
		t := pr.cur
		if t != nil && t.id == "" {
			t.id = tp.Turn.ID
		}
		pr.mu.Unlock()
		if t != nil {
			pr.announce(t)
		}
	case "item/started":
		var ip itemParams
		decodeLenient(m.Params, &ip)
		pr.commandStarted(ip.Item)
		pr.itemStarted(ip.Item)
	case "item/completed":
		var ip itemParams
		decodeLenient(m.Params, &ip)
		if !pr.commandCompleted(ip.Item) {
			pr.itemCompleted(ip.Item)
		}
	case "item/commandExecution/outputDelta":
		var dp outputDeltaParams
		decodeLenient(m.Params, &dp)
		pr.commandOutput(dp)
	case "thread/tokenUsage/updated":
		var up tokenUsageParams
		decodeLenient(m.Params, &up)
		pr.mu.Lock()
		if t := pr.cur; t != nil {
			u := t.usage[up.TurnID]
			if u == nil {
				u = &tokenCounts{}
				t.usage[up.TurnID] = u
			}
			u.add(up.TokenUsage.Last)
			t.calls[up.TurnID]++
		}
		pr.mu.Unlock()
	case "error":
		var ep errorParams
		decodeLenient(m.Params, &ep)
		if ep.WillRetry {
			pr.p.events.Push(agent.Stderr{Line: "codex: " + ep.Error.Message + " (retrying)"})
			return
		}
		pr.mu.Lock()
		if t := pr.cur; t != nil && ep.Error.Message != "" {
			t.errors = append(t.errors, ep.Error.Message)
		}
		pr.mu.Unlock()
	case "warning", "configWarning", "deprecationNotice":
		var wp warningParams
		decodeLenient(m.Params, &wp)
		text := strings.TrimSpace(strings.Join([]string{wp.Message, wp.Summary, wp.Details}, " "))
		if text != "" {
			pr.p.events.Push(agent.Stderr{Line: "codex " + m.Method + ": " + text})
		}
	case "serverRequest/resolved":
		var rp resolvedParams
		decodeLenient(m.Params, &rp)
		id := pr.requestID(&wireMsg{ID: rp.RequestID})
		if pr.takePerm(id) != nil {
			// Resolved by the server itself (the turn ended, it was
			// interrupted, ...): nobody can answer it any more.
			pr.p.events.Push(agent.PermissionRetired{RequestID: id, Reason: agent.RetiredCancelled})
		}
	case "turn/completed":
		var tp turnParams
		decodeLenient(m.Params, &tp)
		pr.backgroundCommands()
		pr.turnCompleted(tp.Turn)
	}
}

// announce reports the start of t once (TurnStarted, unless it was queued
// and reported then) and its system/init.
func (pr *process) announce(t *turnState) {
	pr.mu.Lock()
	announced, inited := t.announced, t.inited
	t.announced, t.inited = true, true
	if t.start.IsZero() {
		t.start = time.Now()
	}
	thread, model, version := pr.thread, pr.model, pr.cliVersion
	pr.mu.Unlock()
	if !announced {
		pr.p.events.Push(agent.TurnStarted{})
	}
	if !inited {
		pr.p.events.Push(pr.message(map[string]any{
			"type": agent.TypeSystem, "subtype": "init", "cwd": pr.p.cfg.Cwd, "model": model,
			"permissionMode": pr.launch.Mode, "approval_policy": pr.launch.Policy.ApprovalPolicy,
			"sandbox": pr.launch.Policy.Sandbox, "tools": []string{"Bash", "Edit", "WebSearch"},
			"provider": Name, "codex_version": version, "thread_id": thread,
		}))
	}
}

// message is a neutral agent message carrying the thread id.
func (pr *process) message(v map[string]any) agent.Message {
	pr.mu.Lock()
	thread := pr.thread
	pr.mu.Unlock()
	uuid := newUUID()
	v["session_id"], v["uuid"] = thread, uuid
	raw, _ := json.Marshal(v)
	typ, _ := v["type"].(string)
	sub, _ := v["subtype"].(string)
	return agent.Message{Type: typ, Subtype: sub, SessionID: thread, UUID: uuid, Raw: raw}
}

func (pr *process) assistant(id string, blocks ...any) agent.Message {
	pr.mu.Lock()
	model := pr.model
	pr.mu.Unlock()
	return pr.message(map[string]any{
		"type": agent.TypeAssistant, "parent_tool_use_id": nil,
		"message": map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": nil,
		},
	})
}

func (pr *process) itemStarted(it item) {
	if it.Type == "fileChange" {
		pr.mu.Lock()
		if t := pr.cur; t != nil {
			t.changes[it.ID] = neutralChanges(it.Changes)
		}
		pr.mu.Unlock()
	}
	pr.emitToolUse(it)
}

// emitToolUse emits the tool_use of a tool item once.
func (pr *process) emitToolUse(it item) {
	name, input, ok := toolUse(it)
	if !ok || it.ID == "" {
		return
	}
	pr.mu.Lock()
	t := pr.cur
	if t == nil || t.toolUses[it.ID] {
		pr.mu.Unlock()
		return
	}
	t.toolUses[it.ID] = true
	pr.mu.Unlock()
	pr.p.events.Push(pr.assistant(it.ID, map[string]any{"type": "tool_use", "id": it.ID, "name": name, "input": input}))
}

func (pr *process) itemCompleted(it item) {
	switch it.Type {
	case "agentMessage":
		if it.Text == "" {
			return
		}
		pr.mu.Lock()
		if t := pr.cur; t != nil {
			t.lastText = it.Text
		}
		pr.mu.Unlock()
		pr.p.events.Push(pr.assistant(it.ID, map[string]any{"type": "text", "text": it.Text}))
		return
	case "reasoning":
		if text := strings.TrimSpace(strings.Join(it.Summary, "\n")); text != "" {
			pr.p.events.Push(pr.assistant(it.ID, map[string]any{"type": "thinking", "thinking": text}))
		}
		return
	}
	if _, _, ok := toolUse(it); !ok {
		return
	}
	pr.mu.Lock()
	idle := pr.cur == nil
	pr.mu.Unlock()
	if idle {
		return // a background command ending after its turn (commands.go)
	}
	// Some tool calls are reported only when they end (codex.md §4.3).
	pr.emitToolUse(it)
	content, isErr := toolResult(it)
	if it.Status == "declined" {
		pr.denied(it, content)
	}
	result := map[string]any{"status": it.Status}
	if it.ExitCode != nil {
		result["exit_code"] = *it.ExitCode
	}
	if it.DurationMs != nil {
		result["duration_ms"] = *it.DurationMs
	}
	pr.p.events.Push(pr.message(map[string]any{
		"type": agent.TypeUser, "parent_tool_use_id": nil,
		"message": map[string]any{"role": "user", "content": []any{map[string]any{
			"type": "tool_result", "tool_use_id": it.ID, "content": content, "is_error": isErr,
		}}},
		"tool_use_result": result,
	}))
}

// turnCompleted ends the running turn and starts the next queued one.
func (pr *process) turnCompleted(ti turnInfo) {
	pr.mu.Lock()
	t := pr.cur
	if t == nil || (t.id != "" && ti.ID != "" && t.id != ti.ID) {
		pr.mu.Unlock()
		return
	}
	if t.id == "" {
		t.id = ti.ID
	}
	pr.cur = nil
	next := pr.popQueue()
	pr.mu.Unlock()
	if !t.announced || !t.inited {
		pr.announce(t)
	}
	errMsg := ""
	if ti.Error != nil {
		errMsg = ti.Error.Message
	}
	var dur int64 = -1
	if ti.DurationMs != nil {
		dur = *ti.DurationMs
	}
	pr.finish(t, ti.Status, errMsg, dur)
	if next != nil {
		go pr.startQueued(next)
	}
}

// popQueue makes the next queued turn the running one; pr.mu is held.
func (pr *process) popQueue() *turnState {
	if pr.cur != nil || len(pr.queue) == 0 {
		return nil
	}
	pr.cur = pr.queue[0]
	pr.queue = pr.queue[1:]
	return pr.cur
}

// Terminal reasons of a result.
const (
	terminalCompleted   = "completed"
	terminalInterrupted = "interrupted"
	terminalFailed      = "failed"
	terminalNotStarted  = "not_started"
)

// finish pushes t's result message and TurnEnded. status is Codex's turn
// status ("completed", "interrupted", "failed"); durMS < 0 means measure it.
func (pr *process) finish(t *turnState, status, errMsg string, durMS int64) {
	pr.mu.Lock()
	if errMsg != "" && !slices.Contains(t.errors, errMsg) {
		t.errors = append(t.errors, errMsg)
	}
	errs := append([]string(nil), t.errors...)
	denials := append([]any{}, t.denials...)
	var usage tokenCounts
	if u := t.usage[t.id]; u != nil {
		usage = *u
	}
	calls, text, model := t.calls[t.id], t.lastText, pr.model
	start := t.start
	pr.mu.Unlock()
	if durMS < 0 {
		durMS = 0
		if !start.IsZero() {
			durMS = time.Since(start).Milliseconds()
		}
	}
	price, priced := pr.p.cfg.Prices.Lookup(model)
	cost := price.Cost(usage.InputTokens, usage.CachedInputTokens, usage.OutputTokens)
	total := pr.p.addCost(cost)

	terminal, subtype, isErr := terminalCompleted, "success", false
	switch status {
	case "completed":
	case "interrupted":
		terminal, subtype, isErr = terminalInterrupted, "error_during_execution", true
	case terminalNotStarted:
		terminal, subtype, isErr = terminalNotStarted, "error_during_execution", true
	default:
		terminal, subtype, isErr = terminalFailed, "error_during_execution", true
	}
	result := text
	if isErr && len(errs) > 0 {
		result = errs[len(errs)-1]
	}
	u := usageJSON(usage)
	var stop any = "end_turn"
	if isErr {
		stop = nil
	}
	msg := map[string]any{
		"type": agent.TypeResult, "subtype": subtype, "is_error": isErr, "result": result,
		"duration_ms": durMS, "duration_api_ms": 0, "num_turns": max(calls, 1),
		"total_cost_usd": total, "cost_usd": cost, "cost_source": "price_table", "priced": priced,
		"usage": u, "stop_reason": stop, "terminal_reason": terminal, "codex_status": status,
		"errors": errs, "permission_denials": denials,
		"modelUsage": map[string]any{model: map[string]any{
			"inputTokens": u.InputTokens, "outputTokens": u.OutputTokens,
			"cacheReadInputTokens": u.CacheReadInputTokens, "cacheCreationInputTokens": u.CacheCreationInputTokens,
			"reasoningOutputTokens": usage.ReasoningOutputTokens, "costUSD": cost,
		}},
	}
	if errs == nil {
		msg["errors"] = []string{}
	}
	m := pr.message(msg)
	pr.p.events.Push(m)
	pr.p.events.Push(agent.TurnEnded{
		SessionID: m.SessionID, Subtype: subtype, IsError: isErr, Interrupted: terminal == terminalInterrupted,
		Result: result, Errors: errs, TerminalReason: terminal, CostUSD: cost, TotalCostUSD: total,
		Usage: u, DurationMS: durMS, NumTurns: max(calls, 1), Model: model,
	})
}

// startTurn writes turn/start for t, the running turn, and waits for the
// answer. The answer is handled in the reader: success announces the turn;
// an error ends it unstarted (reported as a result when it had been
// announced as queued) and starts the next queued one.
func (pr *process) startTurn(ctx context.Context, t *turnState) error {
	pr.mu.Lock()
	thread := pr.thread
	pr.mu.Unlock()
	params := map[string]any{"threadId": thread, "input": t.input}
	_, err := pr.call(ctx, "turn/start", params, func(result json.RawMessage, e *rpcError) {
		if e == nil {
			var r struct {
				Turn turnInfo `json:"turn"`
			}
			decodeLenient(result, &r)
			pr.mu.Lock()
			current := pr.cur == t
			if current && t.id == "" {
				t.id = r.Turn.ID
			}
			pr.mu.Unlock()
			if current { // else Send gave up waiting and forgot it
				pr.announce(t)
			}
			return
		}
		pr.turnFailed(t, "codex refused the turn: "+e.Message)
	})
	if err != nil && !isRPC(err) {
		// Not written, or no answer: the exit (if it comes) ends it.
		pr.p.log.DebugContext(ctx, "turn/start", "pid", pr.pid, "err", err)
	}
	return err
}

// startQueued starts a queued turn; its failures end it (see startTurn).
func (pr *process) startQueued(t *turnState) {
	_ = pr.startTurn(context.Background(), t)
}

// turnFailed ends t, which Codex did not start: with a result when it was
// announced; then the next queued turn starts.
func (pr *process) turnFailed(t *turnState, msg string) {
	pr.mu.Lock()
	if pr.cur == t {
		pr.cur = nil
	}
	next := pr.popQueue()
	announced := t.announced
	pr.mu.Unlock()
	if announced {
		if !t.inited {
			pr.announce(t)
		}
		pr.finish(t, terminalNotStarted, msg, 0)
	}
	if next != nil {
		go pr.startQueued(next)
	}
}

func isRPC(err error) bool {
	var e *RPCError
	return errors.As(err, &e)
}

// call sends a request and waits for its response (up to the provider's
// RequestTimeout, ctx, or the process's exit).
func (pr *process) call(ctx context.Context, method string, params any, hook func(json.RawMessage, *rpcError)) (json.RawMessage, error) {
	pr.mu.Lock()
	if pr.exited {
		pr.mu.Unlock()
		return nil, agent.ErrProcessExited
	}
	pr.seq++
	id := "c" + itoa(pr.seq)
	ch := make(chan callResult, 1)
	pr.pending[id] = pendingCall{method: method, ch: ch, hook: hook}
	pr.mu.Unlock()
	msg := map[string]any{"method": method, "id": id}
	if params != nil {
		msg["params"] = params
	}
	if err := pr.writeJSON(ctx, msg); err != nil {
		pr.forget(id)
		return nil, fmt.Errorf("codex %s: %w", method, pr.exitError(err))
	}
	timer := time.NewTimer(pr.p.cfg.RequestTimeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r.result, r.err
	case <-timer.C:
		return nil, fmt.Errorf("codex %s: %w", method, errNoResponse)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// notify sends a notification.
func (pr *process) notify(ctx context.Context, method string, params any) error {
	msg := map[string]any{"method": method}
	if params != nil {
		msg["params"] = params
	}
	if err := pr.writeJSON(ctx, msg); err != nil {
		return fmt.Errorf("codex %s: %w", method, err)
	}
	return nil
}

func (pr *process) forget(id string) {
	pr.mu.Lock()
	delete(pr.pending, id)
	pr.mu.Unlock()
}

// writeJSON writes v as one line; writes are serialised and bounded by the
// write timeout.
func (pr *process) writeJSON(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	b = append(b, '\n')
	timeout := pr.p.cfg.WriteTimeout
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case pr.wsem <- struct{}{}:
	case <-timer.C:
		return fmt.Errorf("write to agent stdin: %w", os.ErrDeadlineExceeded)
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-pr.wsem }()
	_ = pr.stdin.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := pr.stdin.Write(b); err != nil {
		return fmt.Errorf("write to agent stdin: %w", err)
	}
	return nil
}

// exitError explains a failed write by the process's exit, if it exits
// within a moment.
func (pr *process) exitError(err error) error {
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	select {
	case <-pr.done:
		pr.mu.Lock()
		reason := pr.exit.Reason
		pr.mu.Unlock()
		return fmt.Errorf("%w: %s", agent.ErrProcessExited, reason)
	case <-timer.C:
		return err
	}
}

// takePerm removes and returns a pending approval, or nil.
func (pr *process) takePerm(id string) *permEntry {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	e := pr.perms[id]
	if e == nil {
		return nil
	}
	delete(pr.perms, id)
	if i := slices.Index(pr.permOrder, id); i >= 0 {
		pr.permOrder = slices.Delete(pr.permOrder, i, i+1)
	}
	return e
}

// busy: a turn runs or waits, or an approval does.
func (pr *process) busy() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.cur != nil || len(pr.queue) > 0 || len(pr.perms) > 0
}

func (pr *process) gone() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.exited
}

// wait reaps the process, ends what is left of its group, and reports the
// exit once all its output is reported: pending approvals are retired, a
// turn cut short by an interrupt still ends with its result, queued turns
// end unstarted.
func (pr *process) wait(readers *sync.WaitGroup, outR, errR *os.File) {
	waitErr := pr.cmd.Wait()
	pr.mu.Lock()
	pr.reaped = true
	pr.mu.Unlock()
	_ = syscall.Kill(-pr.pid, syscall.SIGKILL)
	read := make(chan struct{})
	go func() {
		readers.Wait()
		close(read)
	}()
	timer := time.NewTimer(2 * time.Second)
	select {
	case <-read:
		timer.Stop()
	case <-timer.C:
		closeAll(outR, errR)
		<-read
	}
	closeAll(outR, errR, pr.stdin)

	pr.mu.Lock()
	pr.exited = true
	pending, perms, order := pr.pending, pr.perms, pr.permOrder
	pr.pending, pr.perms, pr.permOrder = map[string]pendingCall{}, map[string]*permEntry{}, nil
	cur, queue := pr.cur, pr.queue
	pr.cur, pr.queue = nil, nil
	cause, lastStderr := pr.cause, pr.lastStderr
	pr.mu.Unlock()
	for _, pc := range pending {
		pc.ch <- callResult{err: agent.ErrProcessExited}
	}
	for _, id := range order {
		if perms[id] != nil {
			pr.p.events.Push(agent.PermissionRetired{RequestID: id, Reason: agent.RetiredProcessExited})
		}
	}
	pr.lostCommands()
	turnRunning := false
	if cur != nil {
		if cause == agent.ExitInterrupted && cur.announced {
			pr.finish(cur, "interrupted", "the turn was stopped", -1)
		} else {
			turnRunning = true
		}
	}
	for _, t := range queue {
		pr.finish(t, terminalNotStarted, "the agent process exited before this turn started", 0)
	}

	ev := agent.ExitReport(agent.ProcessExited{PID: pr.pid, Cause: cause, TurnRunning: turnRunning},
		pr.cmd.ProcessState, waitErr, lastStderr, interruptedReason)
	pr.mu.Lock()
	pr.exit = ev
	pr.mu.Unlock()
	pr.p.log.Info("agent process exited", "pid", pr.pid, "cause", ev.Cause, "reason", ev.Reason)
	pr.p.events.Push(ev)
	pr.p.processGone(pr)
	close(pr.done)
}

// interruptedReason is ProcessExited.Reason for agent.ExitInterrupted.
func interruptedReason(state string) string {
	return "stopped by the user (" + state + "); the next message resumes the thread"
}

// signal sends sig to the whole process group, recording cause first.
func (pr *process) signal(cause string, sig syscall.Signal) {
	pr.mu.Lock()
	if pr.cause == "" {
		pr.cause = cause
	}
	pr.mu.Unlock()
	if err := syscall.Kill(-pr.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		pr.p.log.Warn("signal agent process group", "pid", pr.pid, "signal", sig.String(), "err", err)
	}
}

// interruptHard sends SIGINT to the group and SIGKILL after the kill delay
// unless the process exits first.
func (pr *process) interruptHard() {
	pr.signal(agent.ExitInterrupted, syscall.SIGINT)
	delay := pr.p.cfg.KillDelay
	go func() {
		timer := time.NewTimer(delay)
		defer timer.Stop()
		select {
		case <-pr.done:
		case <-timer.C:
			pr.signal(agent.ExitInterrupted, syscall.SIGKILL)
		}
	}()
}

// stop ends the process: stdin is closed (EOF ends the app-server), and if
// it has not exited after grace, its group is killed. It returns once the
// exit is reported.
func (pr *process) stop(cause string, grace time.Duration) {
	pr.mu.Lock()
	if pr.cause == "" {
		pr.cause = cause
	}
	pr.mu.Unlock()
	_ = pr.stdin.Close()
	if grace > 0 {
		timer := time.NewTimer(grace)
		select {
		case <-pr.done:
			timer.Stop()
			return
		case <-timer.C:
		}
	}
	pr.signal(cause, syscall.SIGKILL)
	<-pr.done
}
