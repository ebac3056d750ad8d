package codex

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// Background commands. Codex 0.169.0 has no background flag of its own: a
// commandExecution item (codex.md §4.3) starts (item/started, inProgress;
// its processId is null while it awaits an approval), streams its output
// through item/commandExecution/outputDelta and ends with item/completed,
// which may come after its turn has completed (unified exec keeps a
// process that outlives exec_command's yield_time_ms). A command still in
// progress when its turn completes is a background command (a turn does
// not complete while an approval is open): from then on each change is
// reported as an agent.Command, with the end of its output (at most
// CommandTail bytes).

// CommandTail is the most output an agent.Command carries.
const CommandTail = 16 << 10

// CommandReportEvery is the least time between two reports of a command's
// new output (its start and end are reported at once).
const CommandReportEvery = 250 * time.Millisecond

// maxCommands bounds the running commands followed per process.
const maxCommands = 256

// command is a running commandExecution item. Its reports are pushed with
// pr.mu held (Push never blocks), so they keep their order.
type command struct {
	agent.Command
	background bool
	sent       time.Time   // last report
	flush      *time.Timer // a report of new output is due
}

// outputDeltaParams is item/commandExecution/outputDelta's params.
type outputDeltaParams struct {
	ItemID string `json:"itemId"`
	Delta  string `json:"delta"`
}

// commandStarted follows a commandExecution item in progress.
func (pr *process) commandStarted(it item) {
	if it.Type != "commandExecution" || it.ID == "" || it.Status != "inProgress" {
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.commands == nil {
		pr.commands = map[string]*command{}
	}
	if c := pr.commands[it.ID]; c != nil || len(pr.commands) >= maxCommands {
		return
	}
	pr.commands[it.ID] = &command{Command: agent.Command{
		ID: it.ID, Command: it.Command, Cwd: it.Cwd, ProcessID: it.ProcessID, State: agent.CommandRunning,
	}}
}

// commandOutput adds output to a followed command; a background one is
// reported, at most every CommandReportEvery.
func (pr *process) commandOutput(d outputDeltaParams) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	c := pr.commands[d.ItemID]
	if c == nil || d.Delta == "" {
		return
	}
	c.OutputBytes += int64(len(d.Delta))
	c.Output = tail(c.Output + d.Delta)
	if !c.background || c.flush != nil {
		return
	}
	if wait := CommandReportEvery - time.Since(c.sent); wait > 0 {
		c.flush = time.AfterFunc(wait, func() { pr.flushCommand(c) })
		return
	}
	pr.reportCommand(c)
}

// flushCommand reports c's output that waited for CommandReportEvery.
func (pr *process) flushCommand(c *command) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if c.flush == nil || pr.commands[c.ID] != c {
		return // ended, or reported, meanwhile
	}
	pr.reportCommand(c)
}

// reportCommand pushes c's state; pr.mu is held.
func (pr *process) reportCommand(c *command) {
	if c.flush != nil {
		c.flush.Stop()
		c.flush = nil
	}
	c.sent = time.Now()
	pr.p.events.Push(c.Command)
}

// commandCompleted ends a followed command; a background one is reported
// with its final output. It tells whether the command was a background
// one (its item then belongs to no turn).
func (pr *process) commandCompleted(it item) bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	c := pr.commands[it.ID]
	if c == nil || it.Type != "commandExecution" {
		return false
	}
	delete(pr.commands, it.ID)
	c.State = commandState(it)
	c.ExitCode = it.ExitCode
	if it.AggregatedOutput != nil {
		c.OutputBytes = max(c.OutputBytes, int64(len(*it.AggregatedOutput)))
		c.Output = tail(*it.AggregatedOutput)
	}
	if c.background {
		pr.reportCommand(c)
	}
	return c.background
}

// backgroundCommands reports the commands still running when a turn
// completes (called before its result): they are background commands from
// now on. Each gets a tool_result in the turn, so that its tool call is not
// left without one (Claude Code answers run_in_background the same way).
func (pr *process) backgroundCommands() {
	type pending struct{ id, output string }
	var results []pending
	pr.mu.Lock()
	for _, c := range pr.commands {
		if c.background {
			continue
		}
		c.background = true
		pr.reportCommand(c)
		if t := pr.cur; t != nil && t.toolUses[c.ID] {
			results = append(results, pending{c.ID, c.Output})
		}
	}
	pr.mu.Unlock()
	for _, r := range results {
		content := "The command is still running in the background."
		if r.output != "" {
			content += " Its output so far ends with:\n" + tailOf(r.output, 2048)
		}
		pr.p.events.Push(pr.message(map[string]any{
			"type": agent.TypeUser, "parent_tool_use_id": nil,
			"message": map[string]any{"role": "user", "content": []any{map[string]any{
				"type": "tool_result", "tool_use_id": r.id, "content": content, "is_error": false,
			}}},
			"tool_use_result": map[string]any{"status": "inProgress", "background": true},
		}))
	}
}

// lostCommands reports the background commands still running when the
// process has exited: their end will never be reported.
func (pr *process) lostCommands() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, c := range pr.commands {
		if c.background {
			c.State = agent.CommandLost
			pr.reportCommand(c)
		}
	}
	pr.commands = nil
}

// commandState is the agent.Command state of a finished item.
func commandState(it item) string {
	switch it.Status {
	case "completed":
		if it.ExitCode != nil && *it.ExitCode != 0 {
			return agent.CommandFailed
		}
		return agent.CommandCompleted
	case "declined":
		return agent.CommandDeclined
	}
	return agent.CommandFailed
}

// tail is the end of s, at most CommandTail bytes, from a rune start.
func tail(s string) string { return tailOf(s, CommandTail) }

// tailOf is the end of s, at most n bytes, from a rune start.
func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return strings.Clone(s)
}

// denied reports a tool item the user declined as Claude Code reports a
// refused permission: a system/permission_denied message now, and an entry
// of the result's permission_denials (turn events count the call as
// denied, not failed).
func (pr *process) denied(it item, message string) {
	name, input, _ := toolUse(it)
	pr.mu.Lock()
	if t := pr.cur; t != nil {
		t.denials = append(t.denials, map[string]any{"tool_name": name, "tool_use_id": it.ID, "tool_input": input})
	}
	pr.mu.Unlock()
	pr.p.events.Push(pr.message(map[string]any{
		"type": agent.TypeSystem, "subtype": "permission_denied",
		"tool_name": name, "tool_use_id": it.ID, "message": message,
	}))
}
