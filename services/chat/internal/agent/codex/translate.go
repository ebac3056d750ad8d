package codex

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// Codex's wire shapes that the translation reads (codex.md §4). Unknown
// fields are ignored, unexpected types tolerated (decodeLenient).

type threadInfo struct {
	ID         string `json:"id"`
	CliVersion string `json:"cliVersion"`
}

// threadResult is the result of thread/start, thread/resume and thread/fork.
type threadResult struct {
	Thread         threadInfo      `json:"thread"`
	Model          string          `json:"model"`
	Cwd            string          `json:"cwd"`
	ApprovalPolicy json.RawMessage `json:"approvalPolicy"`
	Sandbox        json.RawMessage `json:"sandbox"`
}

type turnInfo struct {
	ID         string          `json:"id"`
	Status     string          `json:"status"`
	Error      *turnError      `json:"error"`
	DurationMs *int64          `json:"durationMs"`
	Items      json.RawMessage `json:"items"`
}

type turnError struct {
	Message        string          `json:"message"`
	CodexErrorInfo json.RawMessage `json:"codexErrorInfo"`
}

type turnParams struct {
	ThreadID string   `json:"threadId"`
	Turn     turnInfo `json:"turn"`
}

type itemParams struct {
	Item     item   `json:"item"`
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

type fileChange struct {
	Path string          `json:"path"`
	Kind json.RawMessage `json:"kind"`
	Diff string          `json:"diff"`
}

// item is a ThreadItem; which fields are set depends on Type.
type item struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Text             string          `json:"text"`
	Command          string          `json:"command"`
	Cwd              string          `json:"cwd"`
	ProcessID        string          `json:"processId"`
	Status           string          `json:"status"`
	AggregatedOutput *string         `json:"aggregatedOutput"`
	ExitCode         *int            `json:"exitCode"`
	DurationMs       *int64          `json:"durationMs"`
	Changes          []fileChange    `json:"changes"`
	Summary          []string        `json:"summary"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Result           json.RawMessage `json:"result"`
	Error            json.RawMessage `json:"error"`
	Query            string          `json:"query"`
	Path             string          `json:"path"`
}

type tokenCounts struct {
	TotalTokens           int64 `json:"totalTokens"`
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
}

type tokenUsageParams struct {
	TurnID     string `json:"turnId"`
	TokenUsage struct {
		Total              tokenCounts `json:"total"`
		Last               tokenCounts `json:"last"`
		ModelContextWindow *int64      `json:"modelContextWindow"`
	} `json:"tokenUsage"`
}

type errorParams struct {
	Error     turnError `json:"error"`
	WillRetry bool      `json:"willRetry"`
}

type warningParams struct {
	Message string `json:"message"`
	Summary string `json:"summary"`
	Details string `json:"details"`
}

type resolvedParams struct {
	RequestID json.RawMessage `json:"requestId"`
}

// commandApproval is item/commandExecution/requestApproval's params.
type commandApproval struct {
	ItemID                      string            `json:"itemId"`
	Command                     string            `json:"command"`
	Cwd                         string            `json:"cwd"`
	Reason                      *string           `json:"reason"`
	ProposedExecpolicyAmendment []string          `json:"proposedExecpolicyAmendment"`
	AvailableDecisions          []json.RawMessage `json:"availableDecisions"`
}

// fileChangeApproval is item/fileChange/requestApproval's params.
type fileChangeApproval struct {
	ItemID string  `json:"itemId"`
	Reason *string `json:"reason"`
}

// turnState is one user turn of a process: queued, running, then ended.
type turnState struct {
	input     []map[string]any
	announced bool // TurnStarted pushed
	inited    bool // system/init pushed
	id        string
	start     time.Time
	// usage sums the model calls' "last" usage by turn id: a resumed
	// thread first reports the usage of its last old turn, which is not
	// this turn's.
	usage    map[string]*tokenCounts
	calls    map[string]int
	lastText string
	errors   []string
	toolUses map[string]bool            // items whose tool_use was emitted
	changes  map[string][]neutralChange // fileChange items' changes, for approvals
	denials  []any                      // the result's permission_denials
}

func newTurn(input []map[string]any) *turnState {
	return &turnState{
		input: input, toolUses: map[string]bool{}, changes: map[string][]neutralChange{},
		usage: map[string]*tokenCounts{}, calls: map[string]int{},
	}
}

// neutralChange is one file of an Edit tool_use or approval.
type neutralChange struct {
	Path     string `json:"path"`
	Kind     string `json:"kind"`
	MovePath string `json:"move_path,omitempty"`
	Diff     string `json:"diff"`
}

func neutralChanges(cs []fileChange) []neutralChange {
	out := make([]neutralChange, 0, len(cs))
	for _, c := range cs {
		n := neutralChange{Path: c.Path, Diff: c.Diff}
		var kind struct {
			Type     string `json:"type"`
			MovePath string `json:"move_path"`
		}
		var s string
		switch {
		case json.Unmarshal(c.Kind, &s) == nil:
			n.Kind = s
		case decodeLenient(c.Kind, &kind):
			n.Kind, n.MovePath = kind.Type, kind.MovePath
		}
		out = append(out, n)
	}
	return out
}

func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// toolUse is the neutral tool_use block of a Codex item, and whether the
// item is a tool call at all.
func toolUse(it item) (name string, input any, ok bool) {
	switch it.Type {
	case "commandExecution":
		return "Bash", map[string]any{"command": it.Command, "cwd": it.Cwd}, true
	case "fileChange":
		return "Edit", map[string]any{"changes": neutralChanges(it.Changes)}, true
	case "mcpToolCall":
		args := it.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		return "mcp__" + it.Server + "__" + it.Tool, args, true
	case "dynamicToolCall":
		args := it.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		return it.Tool, args, true
	case "webSearch":
		return "WebSearch", map[string]any{"query": it.Query}, true
	case "imageView":
		return "Read", map[string]any{"file_path": it.Path}, true
	}
	return "", nil, false
}

// toolResult is the content and error flag of a finished tool item.
func toolResult(it item) (content string, isError bool) {
	switch it.Type {
	case "commandExecution":
		out := ""
		if it.AggregatedOutput != nil {
			out = *it.AggregatedOutput
		}
		switch it.Status {
		case "declined":
			return "The user refused this command.", true
		case "completed":
			return out, it.ExitCode != nil && *it.ExitCode != 0
		}
		if it.ExitCode != nil {
			return fmt.Sprintf("%sExit code %d", out, *it.ExitCode), true
		}
		return out, true
	case "fileChange":
		switch it.Status {
		case "declined":
			return "The user refused this change.", true
		case "completed":
			paths := make([]string, 0, len(it.Changes))
			for _, c := range it.Changes {
				paths = append(paths, c.Path)
			}
			return "Changed " + strings.Join(paths, ", "), false
		}
		return "The change was not applied (" + it.Status + ").", true
	}
	if len(it.Error) > 0 && string(it.Error) != "null" {
		return string(it.Error), true
	}
	if len(it.Result) > 0 {
		return string(it.Result), it.Status == "failed"
	}
	return it.Status, it.Status == "failed"
}

// usageJSON is the neutral usage object of a result.
func usageJSON(u tokenCounts) agent.Usage {
	return agent.Usage{
		InputTokens:              max(u.InputTokens-u.CachedInputTokens, 0),
		OutputTokens:             u.OutputTokens,
		CacheReadInputTokens:     u.CachedInputTokens,
		CacheCreationInputTokens: u.CacheWriteInputTokens,
	}
}

func (u *tokenCounts) add(o tokenCounts) {
	u.TotalTokens += o.TotalTokens
	u.InputTokens += o.InputTokens
	u.CachedInputTokens += o.CachedInputTokens
	u.CacheWriteInputTokens += o.CacheWriteInputTokens
	u.OutputTokens += o.OutputTokens
	u.ReasoningOutputTokens += o.ReasoningOutputTokens
}
