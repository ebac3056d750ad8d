package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// turnRun is one running turn.
type turnRun struct {
	f      *fake
	id     string
	thread string
	input  []map[string]any
	text   string
	start  time.Time
	items  []any // completed agentMessage items, for turn/completed
	// userItem is the completed userMessage item, kept in the thread.
	userItem map[string]any
	intr     chan struct{}
	once     sync.Once
	policy   string
}

func (t *turnRun) interrupt() { t.once.Do(func() { close(t.intr) }) }

func (t *turnRun) interrupted() bool {
	select {
	case <-t.intr:
		return true
	default:
		return false
	}
}

func (f *fake) turnStart(m message) {
	var p struct {
		ThreadID       string           `json:"threadId"`
		Input          []map[string]any `json:"input"`
		ApprovalPolicy string           `json:"approvalPolicy"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		f.fail(m.ID, -32600, "Invalid request: "+err.Error())
		return
	}
	f.mu.Lock()
	th, running := f.th, f.turn != nil
	if p.ApprovalPolicy != "" && policies[p.ApprovalPolicy] {
		f.policy = p.ApprovalPolicy
	}
	policy := f.policy
	f.mu.Unlock()
	switch {
	case th == nil || p.ThreadID != th.ID:
		f.fail(m.ID, -32600, "thread not found: "+p.ThreadID)
		return
	case len(p.Input) == 0:
		f.fail(m.ID, -32600, "Invalid request: input must not be empty")
		return
	case running:
		f.fail(m.ID, -32600, "a turn is already in progress")
		return
	}
	text := ""
	for _, in := range p.Input {
		if in["type"] == "text" {
			s, _ := in["text"].(string)
			text += s
		}
	}
	word, _ := keyword(text)
	if word == "" {
		word = f.getenv("FAKECODEX_SCRIPT")
	}
	if word == "REFUSE" {
		f.fail(m.ID, -32603, "fake refusal: the turn was not started")
		return
	}
	t := &turnRun{f: f, id: newID(), thread: th.ID, input: p.Input, text: text, start: time.Now(), intr: make(chan struct{}), policy: policy}
	f.mu.Lock()
	f.turn = t
	restore, model := f.restore, f.model
	f.restore = false
	total, last, lastTurn := th.Total, th.Last, th.LastTurn
	f.mu.Unlock()
	if restore { // Codex reports a resumed thread's usage, under its last turn
		f.notify("thread/tokenUsage/updated", map[string]any{"threadId": th.ID, "turnId": lastTurn, "tokenUsage": map[string]any{"total": total, "last": last, "modelContextWindow": 258400}})
		f.notify("thread/goal/cleared", map[string]any{"threadId": th.ID})
	}
	if !knownModels[model] {
		f.notify("warning", map[string]any{"threadId": th.ID, "message": "Model metadata for `" + model + "` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."})
	}
	f.respond(m.ID, map[string]any{"turn": t.turnJSON("inProgress", nil, false)})
	f.turns.Add(1)
	go func() {
		defer f.turns.Done()
		t.run()
	}()
}

// knownModels are slugs Codex has metadata for; others get a warning.
var knownModels = map[string]bool{"gpt-5.5": true, "gpt-5": true, "gpt-5-codex": true, "gpt-5.1": true, "gpt-5.1-codex": true, "gpt-5-mini": true}

func (t *turnRun) turnJSON(status string, turnErr any, done bool) map[string]any {
	j := map[string]any{
		"id": t.id, "rootTurnId": t.id, "items": []any{}, "itemsView": "notLoaded", "status": status,
		"error": turnErr, "startedAt": nil, "completedAt": nil, "durationMs": nil,
	}
	if done {
		j["items"], j["itemsView"] = t.items, "summary"
		if t.items == nil {
			j["items"] = []any{}
		}
		j["startedAt"], j["completedAt"] = t.start.Unix(), time.Now().Unix()
		j["durationMs"] = time.Since(t.start).Milliseconds()
	}
	return j
}

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

func (t *turnRun) notify(method string, params map[string]any) {
	params["threadId"] = t.thread
	if _, ok := params["turnId"]; !ok && !noTurnID[method] {
		params["turnId"] = t.id
	}
	t.f.notify(method, params)
}

// noTurnID are the turn's notifications that carry no turnId.
var noTurnID = map[string]bool{"thread/status/changed": true, "turn/started": true, "turn/completed": true, "serverRequest/resolved": true}

func (t *turnRun) status(active bool, flags ...string) {
	s := map[string]any{"type": "idle"}
	if active {
		if flags == nil {
			flags = []string{}
		}
		s = map[string]any{"type": "active", "activeFlags": flags}
	}
	t.notify("thread/status/changed", map[string]any{"status": s})
}

func (t *turnRun) run() {
	f := t.f
	t.status(true)
	t.notify("turn/started", map[string]any{"turn": func() map[string]any {
		j := t.turnJSON("inProgress", nil, false)
		j["startedAt"] = t.start.Unix()
		return j
	}()})
	um := map[string]any{"type": "userMessage", "id": newID(), "clientId": nil, "content": t.input, "startedAtMs": f.now(), "completedAtMs": nil}
	t.notify("item/started", map[string]any{"item": um, "startedAtMs": f.now()})
	umDone := copyMap(um)
	umDone["completedAtMs"] = f.now()
	t.userItem = umDone
	t.notify("item/completed", map[string]any{"item": umDone, "contentTokenCount": nil, "completedAtMs": f.now()})

	word, arg := keyword(t.text)
	script, ok := scripts[word]
	if !ok {
		script, ok = scripts[f.getenv("FAKECODEX_SCRIPT")]
	}
	status, turnErr := "completed", any(nil)
	if ok {
		status, turnErr = script(t, arg)
	} else {
		t.reply(helloText)
	}
	t.end(status, turnErr)
}

func (t *turnRun) end(status string, turnErr any) {
	f := t.f
	done := t.turnJSON(status, turnErr, true)
	full := copyMap(done)
	full["itemsView"] = "full"
	full["items"] = append([]any{t.userItem}, t.items...)
	f.mu.Lock()
	if f.th != nil {
		f.th.Turns++
		f.th.TurnList = append(f.th.TurnList, full)
		f.save(f.th)
	}
	f.turn = nil
	f.mu.Unlock()
	t.status(false)
	t.notify("turn/completed", map[string]any{"turn": done})
}

func copyMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// usage reports one model call's tokens.
func (t *turnRun) usage(input, output int) {
	f := t.f
	last := usage{TotalTokens: input + output, InputTokens: input, OutputTokens: output}
	f.mu.Lock()
	th := f.th
	th.Total.TotalTokens += last.TotalTokens
	th.Total.InputTokens += input
	th.Total.OutputTokens += output
	th.Last, th.LastTurn = last, t.id
	total := th.Total
	f.mu.Unlock()
	t.notify("thread/tokenUsage/updated", map[string]any{"tokenUsage": map[string]any{"total": total, "last": last, "modelContextWindow": 258400}})
	f.notify("account/rateLimits/updated", rateLimits())
}

// rateLimits is account/rateLimits/updated as a custom provider gets it:
// all null.
func rateLimits() map[string]any {
	return map[string]any{"rateLimits": map[string]any{
		"limitId": "codex", "limitName": nil, "normalModelSlug": nil, "primary": nil, "secondary": nil, "credits": nil,
		"individualLimit": nil, "spendControlReached": nil, "planType": nil, "rateLimitReachedType": nil,
	}}
}

// reply streams an agent message in word deltas, then its usage.
func (t *turnRun) reply(text string) {
	t.message(text, splitDeltas(text), 0)
	t.usage(42, 17)
}

func splitDeltas(text string) []string {
	var out []string
	words := strings.SplitAfter(text, " ")
	for i, w := range words {
		if i > 0 && !strings.HasPrefix(w, " ") {
			w = " " + strings.TrimSuffix(w, " ")
		} else {
			w = strings.TrimSuffix(w, " ")
		}
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// message streams an agentMessage item; it stops early when interrupted.
func (t *turnRun) message(text string, deltas []string, delay time.Duration) bool {
	f := t.f
	id := "msg_" + newID()[24:]
	item := map[string]any{"type": "agentMessage", "moderation": nil, "id": id, "text": "", "phase": nil, "memoryCitation": nil, "delivery": nil, "questions": nil, "startedAtMs": f.now(), "completedAtMs": nil}
	t.notify("item/started", map[string]any{"item": item, "startedAtMs": f.now()})
	got := ""
	for _, d := range deltas {
		if delay > 0 {
			select {
			case <-t.intr:
				return false
			case <-time.After(delay):
			}
		}
		got += d
		t.notify("item/agentMessage/delta", map[string]any{"itemId": id, "delta": d})
	}
	if text == "" {
		text = got
	}
	done := copyMap(item)
	done["text"], done["completedAtMs"] = text, f.now()
	t.notify("item/completed", map[string]any{"item": done, "contentTokenCount": nil, "completedAtMs": f.now()})
	t.items = append(t.items, done)
	return true
}

var scripts = map[string]func(t *turnRun, arg int) (string, any){
	"RUN_SHELL":   func(t *turnRun, _ int) (string, any) { return t.shell(strings.Contains(t.text, "ESCALATE")) },
	"APPLY_PATCH": func(t *turnRun, _ int) (string, any) { return t.patch() },
	"RESOLVE":     func(t *turnRun, _ int) (string, any) { return t.resolveItself() },
	"SLOW":        (*turnRun).slow,
	"BACKGROUND":  (*turnRun).background,
	"CRASH":       (*turnRun).crash,
	"FAIL500":     func(t *turnRun, _ int) (string, any) { return t.fail500() },
	"RAW": func(t *turnRun, _ int) (string, any) {
		t.f.o.raw("fakecodex debug: this line is not JSON")
		t.reply(helloText)
		return "completed", nil
	},
	"UNKNOWN": func(t *turnRun, _ int) (string, any) {
		t.notify("fake/somethingNew", map[string]any{"unknownField": map[string]any{"nested": []int{1, 2}}, "flag": true})
		t.reply(helloText)
		return "completed", nil
	},
	"REQUEST": func(t *turnRun, _ int) (string, any) { return t.hostRequest() },
	"STDERR": func(t *turnRun, _ int) (string, any) {
		for i := 1; i <= 3; i++ {
			t.f.o.stderr(fmt.Sprintf("WARN codex_core: fake warning %d", i))
		}
		t.reply(helloText)
		return "completed", nil
	},
	"ENV": func(t *turnRun, _ int) (string, any) {
		fields := strings.Fields(t.text)
		if len(fields) < 2 { // no name: every variable's name
			names := make([]string, 0, len(os.Environ()))
			for _, kv := range os.Environ() {
				name, _, _ := strings.Cut(kv, "=")
				names = append(names, name)
			}
			slices.Sort(names)
			t.reply(strings.Join(names, "\n"))
			return "completed", nil
		}
		t.reply(fields[1] + "=" + os.Getenv(fields[1]))
		return "completed", nil
	},
	"ECHO": func(t *turnRun, _ int) (string, any) {
		var kinds []string
		for _, in := range t.input {
			k, _ := in["type"].(string)
			if u, ok := in["url"].(string); ok {
				k += "(" + strings.SplitN(u, ",", 2)[0] + ")"
			}
			kinds = append(kinds, k)
		}
		t.reply("received: " + strings.Join(kinds, " "))
		return "completed", nil
	},
}

// request sends a server request and waits for the answer (or an
// interrupt, which resolves it).
func (t *turnRun) request(method string, params map[string]any) (reply, bool) {
	f := t.f
	f.mu.Lock()
	id := f.nextReq
	f.nextReq++
	ch := make(chan reply, 1)
	f.waiting[strconv.Itoa(id)] = ch
	f.mu.Unlock()
	params["threadId"], params["turnId"] = t.thread, t.id
	f.o.json(map[string]any{"method": method, "id": id, "params": params})
	select {
	case r := <-ch:
		t.notify("serverRequest/resolved", map[string]any{"requestId": id})
		return r, true
	case <-t.intr:
		f.mu.Lock()
		delete(f.waiting, strconv.Itoa(id))
		f.mu.Unlock()
		t.notify("serverRequest/resolved", map[string]any{"requestId": id})
		return reply{}, false
	}
}

// decision reads an approval answer: its decision's name.
func decision(r reply) string {
	var res struct {
		Decision json.RawMessage `json:"decision"`
	}
	if json.Unmarshal(r.Result, &res) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(res.Decision, &s) == nil {
		return s
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(res.Decision, &obj) == nil {
		for k := range obj {
			return k
		}
	}
	return ""
}

const shellCmd = "echo hello-from-shell > shell_out.txt && cat shell_out.txt"

func (t *turnRun) shell(escalate bool) (string, any) {
	f := t.f
	t.usage(42, 17)
	cwd := ""
	f.mu.Lock()
	if f.th != nil {
		cwd = f.th.Cwd
	}
	ask := (t.policy == "untrusted" || (t.policy == "on-request" && escalate)) && !f.allowed["command"]
	f.mu.Unlock()
	command := "/bin/bash -lc '" + shellCmd + "'"
	callID := "call_" + newID()[24:]
	item := map[string]any{
		"type": "commandExecution", "id": callID, "pluginId": nil, "scriptPath": nil, "command": command, "cwd": cwd,
		"processId": nil, "source": "agent", "status": "inProgress",
		"commandActions":   []any{map[string]any{"type": "unknown", "command": shellCmd}},
		"aggregatedOutput": nil, "exitCode": nil, "durationMs": nil, "startedAtMs": f.now(), "completedAtMs": nil,
	}
	dec := "accept"
	if ask {
		t.status(true, "waitingOnApproval")
		t.notify("item/started", map[string]any{"item": item, "startedAtMs": f.now()})
		amend := []string{"/bin/bash", "-lc", shellCmd}
		params := map[string]any{
			"kind": "command", "itemId": callID, "startedAtMs": f.now(), "environmentId": "local",
			"command": command, "cwd": cwd, "commandActions": item["commandActions"],
			"proposedExecpolicyAmendment": amend,
			"availableDecisions":          []any{"accept", map[string]any{"acceptWithExecpolicyAmendment": map[string]any{"execpolicy_amendment": amend}}, "cancel"},
		}
		if escalate {
			params["reason"] = "Allow writing shell_out.txt?"
		}
		r, ok := t.request("item/commandExecution/requestApproval", params)
		if !ok {
			return "interrupted", nil
		}
		dec = decision(r)
		if len(r.Error) > 0 && string(r.Error) != "null" {
			dec = "decline"
		}
		t.status(true)
	} else {
		item["processId"] = strconv.Itoa(os.Getpid())
		t.notify("item/started", map[string]any{"item": item, "startedAtMs": f.now()})
	}
	done := copyMap(item)
	done["completedAtMs"] = f.now()
	switch dec {
	case "accept", "acceptForSession", "acceptWithExecpolicyAmendment":
		if dec != "accept" {
			f.mu.Lock()
			f.allowed["command"] = true
			f.mu.Unlock()
		}
		done["status"], done["processId"], done["source"] = "completed", strconv.Itoa(os.Getpid()), "unifiedExecStartup"
		done["aggregatedOutput"], done["exitCode"], done["durationMs"] = "hello-from-shell\n", 0, 0
		t.notify("item/completed", map[string]any{"item": done, "contentTokenCount": nil, "completedAtMs": f.now()})
		t.reply("Tool finished: hello-from-shell")
	case "cancel":
		done["status"] = "declined"
		t.notify("item/completed", map[string]any{"item": done, "contentTokenCount": nil, "completedAtMs": f.now()})
		return "interrupted", nil
	default:
		done["status"] = "declined"
		t.notify("item/completed", map[string]any{"item": done, "contentTokenCount": nil, "completedAtMs": f.now()})
		t.reply("The command was rejected by the user.")
	}
	return "completed", nil
}

func (t *turnRun) patch() (string, any) {
	f := t.f
	t.usage(42, 17)
	cwd := ""
	f.mu.Lock()
	if f.th != nil {
		cwd = f.th.Cwd
	}
	ask := t.policy == "untrusted" && !f.allowed["fileChange"]
	f.mu.Unlock()
	callID := "call_" + newID()[24:]
	item := map[string]any{
		"type": "fileChange", "id": callID,
		"changes": []any{map[string]any{"path": cwd + "/patched.txt", "kind": map[string]any{"type": "add"}, "diff": "hello from apply_patch\n"}},
		"status":  "inProgress", "startedAtMs": f.now(), "completedAtMs": nil,
	}
	t.notify("item/started", map[string]any{"item": item, "startedAtMs": f.now()})
	dec := "accept"
	if ask {
		t.status(true, "waitingOnApproval")
		r, ok := t.request("item/fileChange/requestApproval", map[string]any{"itemId": callID, "startedAtMs": f.now(), "reason": nil, "grantRoot": nil})
		if !ok {
			return "interrupted", nil
		}
		dec = decision(r)
		t.status(true)
	}
	done := copyMap(item)
	done["completedAtMs"] = f.now()
	switch dec {
	case "accept", "acceptForSession":
		if dec == "acceptForSession" {
			f.mu.Lock()
			f.allowed["fileChange"] = true
			f.mu.Unlock()
		}
		done["status"] = "completed"
		t.notify("item/completed", map[string]any{"item": done, "contentTokenCount": nil, "completedAtMs": f.now()})
		t.notify("turn/diff/updated", map[string]any{"diff": "diff --git a/patched.txt b/patched.txt\nnew file mode 100644\n--- /dev/null\n+++ b/patched.txt\n@@ -0,0 +1 @@\n+hello from apply_patch\n"})
		t.reply("Patched patched.txt.")
	case "cancel":
		done["status"] = "declined"
		t.notify("item/completed", map[string]any{"item": done, "contentTokenCount": nil, "completedAtMs": f.now()})
		return "interrupted", nil
	default:
		done["status"] = "declined"
		t.notify("item/completed", map[string]any{"item": done, "contentTokenCount": nil, "completedAtMs": f.now()})
		t.reply("The patch was rejected by the user.")
	}
	return "completed", nil
}

// resolveItself asks for an approval, then resolves the request without
// waiting for the answer (as Codex does when it no longer needs it).
func (t *turnRun) resolveItself() (string, any) {
	f := t.f
	f.mu.Lock()
	id := f.nextReq
	f.nextReq++
	f.mu.Unlock()
	callID := "call_" + newID()[24:]
	f.o.json(map[string]any{"method": "item/fileChange/requestApproval", "id": id, "params": map[string]any{
		"threadId": t.thread, "turnId": t.id, "itemId": callID, "startedAtMs": f.now(), "reason": "fake: withdrawn", "grantRoot": nil,
	}})
	time.Sleep(50 * time.Millisecond)
	t.notify("serverRequest/resolved", map[string]any{"requestId": id})
	t.reply("The request was withdrawn.")
	return "completed", nil
}

func (t *turnRun) slow(n int) (string, any) {
	if n <= 0 {
		n = 10
	}
	delay := 100 * time.Millisecond
	if d, err := time.ParseDuration(t.f.getenv("FAKECODEX_DELAY")); err == nil {
		delay = d
	}
	deltas := make([]string, n)
	for i := range deltas {
		deltas[i] = fmt.Sprintf("chunk %d. ", i+1)
	}
	if !t.message("", deltas, delay) || t.interrupted() {
		t.f.notify("account/rateLimits/updated", rateLimits())
		return "interrupted", nil
	}
	t.usage(42, 5*n)
	return "completed", nil
}

func (t *turnRun) crash(code int) (string, any) {
	if code <= 0 {
		code = 3
	}
	t.notify("item/agentMessage/delta", map[string]any{"itemId": "msg_crash", "delta": "About to"})
	t.f.o.stderr("thread 'main' panicked at fakecodex: scripted crash")
	os.Exit(code)
	return "", nil
}

func (t *turnRun) fail500() (string, any) {
	e := map[string]any{"message": "We’re currently experiencing high demand, which may cause temporary errors.", "codexErrorInfo": "internalServerError", "additionalDetails": nil, "misalignment": nil}
	t.notify("error", map[string]any{"error": e, "willRetry": false})
	return "failed", e
}

func (t *turnRun) hostRequest() (string, any) {
	r, ok := t.request("item/tool/requestUserInput", map[string]any{"itemId": "call_ask", "questions": []any{map[string]any{"id": "q1", "question": "Pick one"}}})
	if !ok {
		return "interrupted", nil
	}
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(r.Error, &e) == nil && e.Message != "" {
		t.reply(fmt.Sprintf("host answered error %d: %s", e.Code, e.Message))
	} else {
		t.reply("host answered " + string(r.Result))
	}
	return "completed", nil
}

// background starts a command that outlives its turn, as unified exec does
// with a process still running after exec_command's yield_time_ms: its
// item/started and first output delta come in the turn, which then
// completes; n more lines (default 3) follow FAKECODEX_DELAY apart, then
// item/completed (exit code 0, the whole output).
func (t *turnRun) background(n int) (string, any) {
	f := t.f
	if n <= 0 {
		n = 3
	}
	delay := 100 * time.Millisecond
	if d, err := time.ParseDuration(f.getenv("FAKECODEX_DELAY")); err == nil {
		delay = d
	}
	cwd := ""
	f.mu.Lock()
	if f.th != nil {
		cwd = f.th.Cwd
	}
	f.mu.Unlock()
	script := fmt.Sprintf("for i in $(seq 0 %d); do echo line $i; sleep 1; done", n)
	callID := "call_" + newID()[24:]
	item := map[string]any{
		"type": "commandExecution", "id": callID, "pluginId": nil, "scriptPath": nil,
		"command": "/bin/bash -lc '" + script + "'", "cwd": cwd,
		"processId": strconv.Itoa(os.Getpid()), "source": "unifiedExecStartup", "status": "inProgress",
		"commandActions":   []any{map[string]any{"type": "unknown", "command": script}},
		"aggregatedOutput": nil, "exitCode": nil, "durationMs": nil, "startedAtMs": f.now(), "completedAtMs": nil,
	}
	t.notify("item/started", map[string]any{"item": item, "startedAtMs": f.now()})
	output := "line 0\n"
	t.notify("item/commandExecution/outputDelta", map[string]any{"itemId": callID, "delta": output})
	t.reply("Started in the background.")
	go func() {
		for i := 1; i <= n; i++ {
			time.Sleep(delay)
			line := fmt.Sprintf("line %d\n", i)
			output += line
			t.notify("item/commandExecution/outputDelta", map[string]any{"itemId": callID, "delta": line})
		}
		done := copyMap(item)
		done["status"], done["aggregatedOutput"], done["exitCode"] = "completed", output, 0
		done["durationMs"], done["completedAtMs"] = int64(n)*delay.Milliseconds(), f.now()
		t.notify("item/completed", map[string]any{"item": done, "contentTokenCount": nil, "completedAtMs": f.now()})
	}()
	return "completed", nil
}
