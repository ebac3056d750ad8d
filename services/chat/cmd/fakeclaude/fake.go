package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

const defaultVersion = "2.1.330"

// fake is one fake CLI session.
type fake struct {
	opts    options
	getenv  func(string) string
	out     *output
	errw    *lineWriter
	rec     *recorder
	version string
	cwd     string
	session string
	delay   time.Duration
	chunks  int
	setMode string // FAKECLAUDE_SET_MODE
	state   string // FAKECLAUDE_STATE_DIR

	initDone   chan struct{}
	eof        chan struct{} // stdin closed
	inbox      chan userInput
	interrupts chan string // request ids of interrupts for the running turn

	mu              sync.Mutex
	initialized     bool
	stdinClosed     bool // asks made from now on fail as the CLI's do
	mode            string
	model           string
	turnActive      bool
	ignoreInterrupt bool
	perms           map[string]chan permAnswer // can_use_tool asks waiting for the host
	allowed         map[string]bool            // tools allowed for the session by an addRules answer
	seq             int                        // msg_/req_ numbering
	totalCost       float64
	modelUsage      map[string]*usageTotals
	lastIsError     bool
	results         int
}

type userInput struct {
	text   string
	blocks []string // "text", "image/png", ...
	raw    json.RawMessage
}

type permAnswer struct {
	subtype  string // success or error
	response map[string]any
	errText  string
	closed   bool // stdin closed while waiting
}

// usageTotals is one model's usage over the session. Restored entries
// come from an earlier process (--resume) and, as the CLI's, are reported
// without canonicalModel, provider and costBasis until used again.
type usageTotals struct {
	In       int     `json:"in"`
	Out      int     `json:"out"`
	Cost     float64 `json:"cost"`
	restored bool
}

// savedSession is what FAKECLAUDE_STATE_DIR keeps of a session for --resume.
type savedSession struct {
	TotalCost float64                 `json:"total_cost_usd"`
	Models    map[string]*usageTotals `json:"models"`
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	rec := openRecorder(getenv("FAKECLAUDE_LOG"))
	defer rec.close()
	rec.meta(map[string]any{"argv": args})
	rec.meta(map[string]any{"pid": os.Getpid()})
	rec.meta(map[string]any{"env": map[string]string{
		"IS_SANDBOX":                          getenv("IS_SANDBOX"),
		"CLAUDE_CODE_ENTRYPOINT":              getenv("CLAUDE_CODE_ENTRYPOINT"),
		"CLAUDE_AGENT_SDK_VERSION":            getenv("CLAUDE_AGENT_SDK_VERSION"),
		"CLAUDE_CODE_SDK_READS_SESSION_STATE": getenv("CLAUDE_CODE_SDK_READS_SESSION_STATE"),
	}})
	errw := &lineWriter{w: stderr, rec: rec}
	exit := func(code int) int {
		rec.meta(map[string]any{"exit": code})
		return code
	}

	opts, err := parseArgs(args)
	if err != nil {
		errw.line("error: " + err.Error())
		return exit(2)
	}
	if (opts.permissionMode == "bypassPermissions" || opts.skipPermissions) && os.Geteuid() == 0 && getenv("IS_SANDBOX") != "1" {
		errw.line("--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons")
		return exit(1)
	}
	f := newFake(opts, getenv, &output{w: stdout, rec: rec}, errw, rec)
	if found, err := f.restore(); err != nil {
		errw.line("fakeclaude: " + err.Error())
		return exit(1)
	} else if !found {
		errw.line("No conversation found with session ID: " + opts.resume)
		return exit(1)
	}
	code := f.serve(stdin)
	return exit(code)
}

func newFake(opts options, getenv func(string) string, out *output, errw *lineWriter, rec *recorder) *fake {
	f := &fake{
		opts:       opts,
		getenv:     getenv,
		out:        out,
		errw:       errw,
		rec:        rec,
		version:    defaultVersion,
		delay:      100 * time.Millisecond,
		chunks:     10,
		setMode:    getenv("FAKECLAUDE_SET_MODE"),
		state:      getenv("FAKECLAUDE_STATE_DIR"),
		initDone:   make(chan struct{}),
		eof:        make(chan struct{}),
		inbox:      make(chan userInput, 256),
		interrupts: make(chan string, 16),
		mode:       opts.permissionMode,
		model:      opts.model,
		perms:      make(map[string]chan permAnswer),
		allowed:    make(map[string]bool),
		modelUsage: make(map[string]*usageTotals),
	}
	if v := getenv("FAKECLAUDE_VERSION"); v != "" {
		f.version = v
	}
	if d, err := time.ParseDuration(getenv("FAKECLAUDE_DELAY")); err == nil {
		f.delay = d
	}
	if n, err := strconv.Atoi(getenv("FAKECLAUDE_CHUNKS")); err == nil && n > 0 {
		f.chunks = n
	}
	if f.model == "" {
		f.model = "claude-sonnet-4-5"
	}
	f.cwd, _ = os.Getwd()
	f.session = opts.resume
	if opts.forkSession {
		f.session = "" // the resumed conversation continues under a new id
	}
	if f.session == "" {
		f.session = opts.sessionID
	}
	if f.session == "" {
		f.session = newUUID()
	}
	return f
}

// restore loads a resumed session's totals from FAKECLAUDE_STATE_DIR. It
// reports false for a session that is not there, which the CLI refuses.
func (f *fake) restore() (bool, error) {
	if f.state == "" || f.opts.resume == "" {
		return true, nil
	}
	root, err := os.OpenRoot(f.state) // the id comes from argv: stay inside the directory
	if err != nil {
		return false, fmt.Errorf("open state dir: %w", err)
	}
	defer root.Close()
	b, err := root.ReadFile(f.opts.resume + ".json")
	if err != nil {
		return false, nil
	}
	var saved savedSession
	if err := json.Unmarshal(b, &saved); err != nil {
		return false, fmt.Errorf("read session %s: %w", f.opts.resume, err)
	}
	f.totalCost = saved.TotalCost
	for name, u := range saved.Models {
		u.restored = true
		f.modelUsage[name] = u
	}
	return true, nil
}

// save keeps the session's totals for a later --resume. The caller holds mu.
func (f *fake) save() {
	if f.state == "" {
		return
	}
	b, err := json.Marshal(savedSession{TotalCost: f.totalCost, Models: f.modelUsage})
	if err == nil {
		err = os.WriteFile(filepath.Join(f.state, f.session+".json"), b, 0o600)
	}
	if err != nil {
		f.errw.line("fakeclaude: save session: " + err.Error())
	}
}

// serve reads stdin until EOF, then waits for the turns to finish.
func (f *fake) serve(stdin io.Reader) int {
	runnerDone := make(chan struct{})
	go func() {
		defer close(runnerDone)
		f.runTurns()
	}()
	br := bufio.NewReaderSize(stdin, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			f.handleInput(bytes.TrimSpace(line))
		}
		if err != nil {
			break
		}
	}
	close(f.eof)
	close(f.inbox)
	f.mu.Lock()
	f.stdinClosed = true
	for id, ch := range f.perms {
		ch <- permAnswer{closed: true}
		delete(f.perms, id)
	}
	f.mu.Unlock()
	<-runnerDone
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lastIsError {
		return 1
	}
	return 0
}

// handleInput acts on one stdin line.
func (f *fake) handleInput(line []byte) {
	f.rec.in(line)
	var msg struct {
		Type      string          `json:"type"`
		RequestID string          `json:"request_id"`
		Request   map[string]any  `json:"request"`
		Response  json.RawMessage `json:"response"`
		Message   struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		f.errw.line("fakeclaude: ignoring a stdin line that is not JSON: " + err.Error())
		return
	}
	switch msg.Type {
	case "control_request":
		f.handleControl(msg.RequestID, msg.Request)
	case "control_response":
		f.handleAnswer(msg.Response)
	case "user":
		in := userInput{raw: line}
		in.text, in.blocks = readContent(msg.Message.Content)
		f.inbox <- in
	case "control_cancel_request", "keep_alive":
	default:
		f.errw.line("fakeclaude: ignoring stdin message of type " + strconv.Quote(msg.Type))
	}
}

// readContent returns the text and the kinds of the blocks of a user
// message's content (a string, or a list of content blocks).
func readContent(raw json.RawMessage) (string, []string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, []string{"text"}
	}
	var blocks []struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Source struct {
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
		} `json:"source"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var texts, kinds []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
			kinds = append(kinds, "text")
		case "image":
			kinds = append(kinds, fmt.Sprintf("%s:%d", b.Source.MediaType, len(b.Source.Data)))
		default:
			kinds = append(kinds, b.Type)
		}
	}
	return strings.Join(texts, "\n"), kinds
}

func (f *fake) handleControl(id string, req map[string]any) {
	subtype, _ := req["subtype"].(string)
	switch subtype {
	case "initialize":
		f.mu.Lock()
		already := f.initialized
		f.initialized = true
		mode := f.mode
		f.mu.Unlock()
		if already {
			f.controlError(id, "Already initialized", "")
			return
		}
		// CLIs since 2.1.268 list unanswered asks next to the payload.
		f.out.json(map[string]any{
			"type": "control_response",
			"response": map[string]any{
				"subtype": "success", "request_id": id, "response": f.initializePayload(mode),
				"pending_permission_requests": []any{}, "pending_user_dialog_requests": []any{},
			},
		})
		close(f.initDone)
	case "interrupt":
		f.mu.Lock()
		switch {
		case f.turnActive && f.ignoreInterrupt:
			f.mu.Unlock()
			f.errw.line("fakeclaude: ignoring interrupt " + id)
			return
		case f.turnActive:
			select {
			case f.interrupts <- id:
				f.mu.Unlock()
				return
			default:
			}
		}
		f.mu.Unlock()
		f.controlSuccess(id, map[string]any{"still_queued": []any{}})
	case "set_permission_mode":
		mode, _ := req["mode"].(string)
		f.handleSetMode(id, mode)
	case "set_model":
		asked, _ := req["model"].(string)
		model := f.resolveModel(asked)
		f.mu.Lock()
		f.model = model
		f.mu.Unlock()
		shown := model
		if asked != "" && asked != model {
			shown = asked + " (" + model + ")"
		}
		f.out.json(f.userReplay("<local-command-stdout>Set model to `" + shown + "`</local-command-stdout>"))
		f.controlSuccess(id, map[string]any{"model": model})
	default:
		f.controlError(id, "Unsupported control request subtype: "+subtype, "unsupported_request")
	}
}

// resolveModel maps an alias of the initialize payload's model list to its
// model id; "" and "default" go back to the launch model.
func (f *fake) resolveModel(asked string) string {
	if asked == "" || asked == "default" {
		if f.opts.model != "" {
			return f.opts.model
		}
		return "claude-sonnet-4-5"
	}
	models, _ := template("initialize")["models"].([]any)
	for _, m := range models {
		entry, _ := m.(map[string]any)
		if entry["value"] == asked {
			if resolved, ok := entry["resolvedModel"].(string); ok {
				return resolved
			}
		}
	}
	return asked
}

func (f *fake) handleSetMode(id, mode string) {
	switch f.setMode {
	case "ignore":
		f.errw.line("fakeclaude: not answering set_permission_mode " + id)
		return
	case "nack":
		f.controlError(id, "Cannot set permission mode now (FAKECLAUDE_SET_MODE=nack)", "refused")
		return
	}
	switch {
	case !validMode(mode):
		f.controlError(id, "Cannot set permission mode: must be one of "+strings.Join(permissionModes, ", "), "invalid_mode")
		return
	case mode == "bypassPermissions" && !f.opts.allowDangerous && !f.opts.skipPermissions:
		f.controlError(id, "Cannot set permission mode to bypassPermissions: the session was not launched with --allow-dangerously-skip-permissions", "bypass_not_launched")
		return
	}
	f.mu.Lock()
	f.mode = mode
	f.mu.Unlock()
	f.controlSuccess(id, map[string]any{"mode": mode})
	f.out.json(f.modeStatus(mode))
}

// handleAnswer routes the host's answer to a can_use_tool ask.
func (f *fake) handleAnswer(raw json.RawMessage) {
	var r struct {
		Subtype   string         `json:"subtype"`
		RequestID string         `json:"request_id"`
		Response  map[string]any `json:"response"`
		Error     string         `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		f.errw.line("fakeclaude: bad control_response: " + err.Error())
		return
	}
	f.mu.Lock()
	ch, ok := f.perms[r.RequestID]
	delete(f.perms, r.RequestID)
	f.mu.Unlock()
	if !ok {
		f.errw.line("fakeclaude: control_response for unknown request " + r.RequestID)
		return
	}
	ch <- permAnswer{subtype: r.Subtype, response: r.Response, errText: r.Error}
}

func (f *fake) controlSuccess(id string, payload map[string]any) {
	f.out.json(map[string]any{
		"type":     "control_response",
		"response": map[string]any{"subtype": "success", "request_id": id, "response": payload},
	})
}

func (f *fake) controlError(id, text, code string) {
	resp := map[string]any{"subtype": "error", "request_id": id, "error": text}
	if code != "" {
		resp["error_code"] = code
	}
	f.out.json(map[string]any{"type": "control_response", "response": resp})
}

// runTurns plays the queued user messages one at a time.
func (f *fake) runTurns() {
	for in := range f.inbox {
		select {
		case <-f.initDone:
		case <-f.eof:
			select {
			case <-f.initDone:
			default:
				continue // never initialized: nothing to answer
			}
		}
		f.runTurn(in)
	}
}

// output writes protocol lines to stdout, one at a time.
type output struct {
	mu  sync.Mutex
	w   io.Writer
	rec *recorder
}

func (o *output) json(v any) {
	var buf bytes.Buffer
	encode(&buf, v)
	buf.WriteByte('\n')
	o.raw(buf.Bytes())
}

// encode writes v as JSON like the CLI's JSON.stringify: no HTML escaping,
// and "type" and "subtype" first in every object (the rest sorted).
func encode(buf *bytes.Buffer, v any) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			ri, rj := keyRank(keys[i]), keyRank(keys[j])
			if ri != rj {
				return ri < rj
			}
			return keys[i] < keys[j]
		})
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			encode(buf, k)
			buf.WriteByte(':')
			encode(buf, v[k])
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			encode(buf, e)
		}
		buf.WriteByte(']')
	default:
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			panic(fmt.Sprintf("encode output: %v", err))
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
	}
}

func keyRank(k string) int {
	switch k {
	case "type":
		return 0
	case "subtype":
		return 1
	}
	return 2
}

// raw writes b, which must end in a newline.
func (o *output) raw(b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = o.w.Write(b)
	o.rec.out(bytes.TrimSuffix(b, []byte("\n")))
}

type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	rec *recorder
}

func (l *lineWriter) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, s+"\n")
	l.rec.stderr(s)
}

// recorder appends a transcript in the shape of shared/protocols'
// recordings: {"dt": seconds, "dir": "meta"|"in"|"out"|"stderr", "msg": ...}.
type recorder struct {
	mu    sync.Mutex
	f     *os.File
	start time.Time
}

func openRecorder(path string) *recorder {
	r := &recorder{start: time.Now()}
	if path == "" {
		return r
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeclaude: FAKECLAUDE_LOG:", err)
		return r
	}
	r.f = f
	return r
}

func (r *recorder) write(dir string, msg any) {
	if r.f == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	dt := float64(time.Since(r.start).Microseconds()) / 1e6
	b, err := json.Marshal(map[string]any{"dt": dt, "dir": dir, "msg": msg})
	if err != nil {
		return
	}
	_, _ = r.f.Write(append(b, '\n'))
}

func (r *recorder) meta(v map[string]any) { r.write("meta", v) }
func (r *recorder) stderr(s string)       { r.write("stderr", s) }
func (r *recorder) in(line []byte)        { r.write("in", lineValue(line)) }
func (r *recorder) out(line []byte)       { r.write("out", lineValue(line)) }

func lineValue(line []byte) any {
	if json.Valid(line) {
		return json.RawMessage(bytes.Clone(line))
	}
	return string(line)
}

func (r *recorder) close() {
	if r.f != nil {
		_ = r.f.Close()
	}
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}
