package agent

// KindCommand is the kind of Command.
const KindCommand Kind = "command"

// States of a Command.
const (
	CommandRunning   = "running"
	CommandCompleted = "completed"
	CommandFailed    = "failed"
	CommandDeclined  = "declined"
	// CommandLost: the agent process ended before it reported the end.
	CommandLost = "lost"
)

// Command reports a shell command the agent runs on its own (Codex's
// commandExecution items, which may outlive their turn): once when it
// starts, once per piece of output, once when it ends. Every report
// carries the whole state; Output is only the new output since the last
// report: Output is the end of the output so far (the provider bounds
// it), OutputBytes how much output there has been in all.
type Command struct {
	// ID is the agent's id of the command (Codex's item id), unique
	// within the agent conversation.
	ID          string `json:"id"`
	Command     string `json:"command"`
	Cwd         string `json:"cwd,omitempty"`
	ProcessID   string `json:"process_id,omitempty"`
	State       string `json:"state"`
	ExitCode    *int   `json:"exit_code,omitempty"`
	Output      string `json:"output,omitempty"`
	OutputBytes int64  `json:"output_bytes"`
}

// Kind implements Event.
func (Command) Kind() Kind { return KindCommand }
