package claude

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
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

// errControlTimeout: a control request got no response in time.
var errControlTimeout = errors.New("no control response in time")

// process is one running CLI and the state of its protocol.
type process struct {
	p      *Provider
	cmd    *exec.Cmd
	pid    int
	args   []string
	launch Launch

	stdin *os.File
	wsem  chan struct{} // capacity 1: serialises stdin writes, with timeouts

	ready chan struct{} // closed when initialize was answered, or on exit
	done  chan struct{} // closed when exited and all output is reported

	mu         sync.Mutex
	seq        int
	pending    map[string]pendingControl          // our control requests
	perms      map[string]agent.PermissionRequest // can_use_tool asks waiting for an answer
	turns      int                                // turns written and not yet ended
	mode       string                             // the process's permission mode, as last known
	model      string                             // from the last system/init
	initErr    error
	answered   bool // initialize was answered
	readyOnce  sync.Once
	cause      string // why we stopped it; "" if it exited by itself
	exited     bool
	exit       agent.ProcessExited // set before done is closed
	lastStderr string
}

type pendingControl struct {
	subtype string
	ch      chan controlResult // capacity 1
}

type controlResult struct {
	resp controlResponse
	err  error
}

// spawn starts the CLI and its reader goroutines. The initialize request is
// written before spawn returns. The process outlives ctx: only its values
// are kept.
func spawn(ctx context.Context, p *Provider, program string, l Launch) (*process, error) {
	path, err := exec.LookPath(program)
	if err != nil {
		return nil, &agent.MissingExecutableError{Provider: Name, Program: program, PathName: PathName, Err: err}
	}
	args := Args(l)
	cmd := exec.CommandContext(context.WithoutCancel(ctx), path, args...)
	// Start reports a missing working directory as ENOENT, like a missing
	// program: check it first, so the error names the right thing.
	if dir := p.cfg.Cwd; dir != "" {
		info, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("working directory %s: not a directory", dir)
		}
	}
	cmd.Dir = p.cfg.Cwd
	// The server's environment without its own variables (libs/childenv):
	// an agent runs shell commands a prompt, or a file it reads, can steer.
	cmd.Env = childenv.Filter(Env(os.Environ(), p.cfg.Env, l.PermissionMode, p.euid()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	// Our own pipes (*os.File on both sides): no copying goroutines inside
	// exec, Wait does not close our read ends, and reads and writes can be
	// cut short by Close and deadlines.
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
			return nil, &agent.MissingExecutableError{Provider: Name, Program: program, PathName: PathName, Err: err}
		}
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	closeAll(inR, outW, errW)
	pid := cmd.Process.Pid
	p.log.InfoContext(ctx, "agent process started", "pid", pid, "args", args)
	p.events.Push(agent.ProcessStarted{PID: pid, Args: args, Resume: l.Resume, PermissionMode: l.PermissionMode})

	pr := &process{
		p:       p,
		cmd:     cmd,
		pid:     pid,
		args:    args,
		launch:  l,
		stdin:   inW,
		wsem:    make(chan struct{}, 1),
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
		pending: make(map[string]pendingControl),
		perms:   make(map[string]agent.PermissionRequest),
		mode:    l.PermissionMode,
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

	// initialize comes first (§3.2); its answer is handled by the reader.
	// Like the SDK, we do not wait for it before writing the first turn. A
	// failed write means the CLI is already exiting (it refused its
	// arguments, say): its exit is reported like any other.
	if err := pr.sendControl(context.WithoutCancel(ctx), "initialize", map[string]any{"subtype": "initialize", "hooks": nil}, nil); err != nil {
		p.log.DebugContext(ctx, "write initialize", "pid", pid, "err", err)
	}
	return pr, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// readStdout is the single reader of the CLI's stdout. bufio.Reader's
// ReadBytes grows its result as needed, so lines have no length cap (§2).
func (pr *process) readStdout(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			pr.handleLine(line)
		}
		if err != nil {
			return
		}
	}
}

func (pr *process) readStderr(r io.Reader) {
	br := bufio.NewReaderSize(r, 16<<10)
	for {
		line, err := br.ReadBytes('\n')
		if s := string(trimEOL(line)); s != "" {
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

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// handleLine routes one stdout line (§8): control responses to their
// waiters, permission asks to the pending set, cancels to the ask they
// withdraw, everything to the event stream.
func (pr *process) handleLine(line []byte) {
	pl := parseLine(line)
	events := pl.events
	switch {
	case pl.response != nil:
		pr.resolve(pl.response, events)
	case pl.perm != nil:
		pr.mu.Lock()
		pr.perms[pl.perm.RequestID] = *pl.perm
		pr.mu.Unlock()
	case pl.request:
		// hook_callback, mcp_message, elicitation, ...: features we do not
		// register. Every request must be answered (§3.3); not from this
		// goroutine, which must keep reading while the write waits.
		go pr.answerUnsupported(pl.env.RequestID, pl.subtype)
	case pl.cancel != "":
		pr.mu.Lock()
		_, known := pr.perms[pl.cancel]
		delete(pr.perms, pl.cancel)
		pr.mu.Unlock()
		if !known {
			events = []agent.Event{agent.Control{Type: pl.env.Type, RequestID: pl.cancel, Raw: pl.raw}}
		}
	case pl.system != nil:
		pr.noteSystem(pl)
	case pl.turnEnd != nil:
		pr.noteResult(&pl)
		events[len(events)-1] = *pl.turnEnd
	}
	if pl.env.SessionID != "" && pl.env.Type != "" {
		pr.p.noteSessionID(pl.env.SessionID)
	}
	for _, e := range events {
		pr.p.events.Push(e)
	}
}

func (pr *process) resolve(r *controlResponse, events []agent.Event) {
	pr.mu.Lock()
	pc, ok := pr.pending[r.RequestID]
	delete(pr.pending, r.RequestID)
	pr.mu.Unlock()
	if !ok {
		pr.p.log.Debug("control response without a waiter", "request_id", r.RequestID, "pid", pr.pid)
		return
	}
	if c, isControl := events[0].(agent.Control); isControl {
		c.Request = pc.subtype
		events[0] = c
	}
	if pc.subtype == "initialize" {
		pr.markReady(r)
	}
	if pc.ch != nil {
		pc.ch <- controlResult{resp: *r}
	}
}

func (pr *process) markReady(r *controlResponse) {
	pr.readyOnce.Do(func() {
		pr.mu.Lock()
		pr.answered = r != nil
		if r != nil && r.Subtype != "success" {
			pr.initErr = fmt.Errorf("initialize refused: %s", r.Error)
		}
		pr.mu.Unlock()
		close(pr.ready)
	})
}

func (pr *process) noteSystem(pl parsed) {
	s := pl.system
	mode := ""
	if s.PermissionMode != nil {
		mode = *s.PermissionMode
	}
	pr.mu.Lock()
	if pl.env.Subtype == "init" && s.Model != "" {
		pr.model = s.Model
	}
	if mode != "" && (pl.env.Subtype == "init" || pl.env.Subtype == "status") {
		pr.mode = mode
	}
	pr.mu.Unlock()
	if mode != "" && (pl.env.Subtype == "init" || pl.env.Subtype == "status") {
		// The agent's own word on its mode (our live change confirmed, an
		// accepted setMode suggestion, leaving plan mode): the mode of
		// the session from now on, also for a later relaunch.
		pr.p.noteMode(mode)
	}
}

func (pr *process) noteResult(pl *parsed) {
	t := pl.turnEnd
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.turns > 0 {
		pr.turns--
	}
	if pr.model != "" {
		t.Model = pr.model
	}
	pr.p.noteCost(t, pl.costKnown)
}

func (pr *process) answerUnsupported(requestID, subtype string) {
	msg := map[string]any{
		"type": "control_response",
		"response": map[string]any{
			"subtype":    "error",
			"request_id": requestID,
			"error":      "Unsupported control request subtype: " + subtype,
		},
	}
	if err := pr.writeJSON(context.Background(), msg); err != nil {
		pr.p.log.Debug("answer control request", "request_id", requestID, "subtype", subtype, "err", err)
	}
}

// wait reaps the process, ends what is left of its group, and reports the
// exit once all its output is reported.
func (pr *process) wait(readers *sync.WaitGroup, outR, errR *os.File) {
	waitErr := pr.cmd.Wait()
	// The leader is gone; children it left (a tool's shell) would keep the
	// pipes open and outlive the session.
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
		// Something outside the group holds the pipes: stop reading.
		closeAll(outR, errR)
		<-read
	}
	closeAll(outR, errR, pr.stdin)

	pr.mu.Lock()
	pr.exited = true
	pending, perms, turns := pr.pending, pr.perms, pr.turns
	pr.pending, pr.perms = nil, nil
	cause, lastStderr := pr.cause, pr.lastStderr
	if cause == "" && pr.launch.Resume != "" && !pr.answered && resumeRefused(lastStderr) {
		// The provider launches a new conversation in its place (see
		// Provider.ensure): not an end of the session.
		cause = agent.ExitRespawn
	}
	pr.mu.Unlock()
	pr.markReady(nil)
	for _, pc := range pending {
		if pc.ch != nil {
			pc.ch <- controlResult{err: agent.ErrProcessExited}
		}
	}
	ids := make([]string, 0, len(perms))
	for id := range perms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		pr.p.events.Push(agent.PermissionRetired{RequestID: id, Reason: agent.RetiredProcessExited})
	}

	ev := agent.ExitReport(agent.ProcessExited{PID: pr.pid, Cause: cause, TurnRunning: turns > 0 || len(perms) > 0},
		pr.cmd.ProcessState, waitErr, lastStderr, interruptedReason)
	pr.mu.Lock()
	pr.exit = ev
	pr.mu.Unlock()
	pr.p.log.Info("agent process exited", "pid", pr.pid, "cause", ev.Cause, "reason", ev.Reason)
	pr.p.events.Push(ev)
	// Only now: Close waits for the process it finds, so the exit is in
	// the stream before the stream closes.
	pr.p.processGone(pr)
	close(pr.done)
}

// resumeRefused reports whether line is the CLI's refusal of --resume: the
// conversation is not on this machine (any more).
func resumeRefused(line string) bool {
	return strings.HasPrefix(line, "No conversation found with session ID")
}

// refusedResume waits until the CLI, launched with --resume, has answered
// initialize or exited (at most timeout), and returns its refusal when it
// exited refusing the conversation ("" otherwise).
func (pr *process) refusedResume(ctx context.Context, timeout time.Duration) string {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-pr.ready:
	case <-t.C:
		return ""
	case <-ctx.Done():
		return ""
	}
	pr.mu.Lock()
	exited := pr.exited
	pr.mu.Unlock()
	if !exited {
		return ""
	}
	select {
	case <-pr.done: // its exit is reported: its stderr is whole
	case <-ctx.Done():
		return ""
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.exit.Cause != agent.ExitRespawn || !resumeRefused(pr.lastStderr) {
		return ""
	}
	return pr.lastStderr
}

// interruptedReason is ProcessExited.Reason for agent.ExitInterrupted.
func interruptedReason(state string) string {
	return "interrupt was not acknowledged; process stopped (" + state + ")"
}

// writeJSON writes v as one line. Writes are serialised; a write that
// cannot start or finish within the write timeout (a CLI that stopped
// reading) fails instead of blocking forever.
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

// sendControl writes a control request and registers ch (may be nil) for
// its response.
func (pr *process) sendControl(ctx context.Context, subtype string, req map[string]any, ch chan controlResult) error {
	pr.mu.Lock()
	if pr.exited {
		pr.mu.Unlock()
		return agent.ErrProcessExited
	}
	pr.seq++
	id := fmt.Sprintf("req_%d_%s", pr.seq, randomHex(4))
	pr.pending[id] = pendingControl{subtype: subtype, ch: ch}
	pr.mu.Unlock()
	msg := map[string]any{"type": "control_request", "request_id": id, "request": req}
	if err := pr.writeJSON(ctx, msg); err != nil {
		pr.forget(id)
		return err
	}
	return nil
}

// control sends a control request and waits up to timeout for its answer.
func (pr *process) control(ctx context.Context, subtype string, req map[string]any, timeout time.Duration) (controlResponse, error) {
	ch := make(chan controlResult, 1)
	if err := pr.sendControl(ctx, subtype, req, ch); err != nil {
		return controlResponse{}, err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	// After a timeout the pending entry stays: a late response is still
	// routed (into ch, which nobody reads) and reported as a Control event.
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-timer.C:
		return controlResponse{}, errControlTimeout
	case <-ctx.Done():
		return controlResponse{}, ctx.Err()
	}
}

func (pr *process) forget(id string) {
	pr.mu.Lock()
	delete(pr.pending, id)
	pr.mu.Unlock()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// beginTurn counts a turn in; it reports whether another was running.
func (pr *process) beginTurn() (queued bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	queued = pr.turns > 0
	pr.turns++
	return queued
}

func (pr *process) cancelTurn() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.turns > 0 {
		pr.turns--
	}
}

// busy: a turn is running or a permission ask waits.
func (pr *process) busy() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.turns > 0 || len(pr.perms) > 0
}

func (pr *process) currentMode() string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.mode
}

func (pr *process) setMode(mode string) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.mode = mode
}

// takePerm removes and returns a pending permission ask.
func (pr *process) takePerm(id string, check func(agent.PermissionRequest) error) (agent.PermissionRequest, error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	req, ok := pr.perms[id]
	if !ok {
		return req, agent.ErrPermissionExpired
	}
	if err := check(req); err != nil {
		return req, err
	}
	delete(pr.perms, id)
	return req, nil
}

// exitError explains a failed write: if the process has exited (or does
// within a moment), the error names its exit instead of a broken pipe.
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

// gone: the process has exited (its exit may still be being reported).
func (pr *process) gone() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.exited
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

// stop ends the process: stdin is closed (EOF ends the session, §2), and if
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
