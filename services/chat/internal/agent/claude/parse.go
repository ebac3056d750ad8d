package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// Wire types of the lines this package reads (claude.md §3-§5). Only the
// fields the provider acts on are decoded; the line itself is kept raw.

// envelope holds the fields every line may carry.
type envelope struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	SessionID string          `json:"session_id"`
	UUID      string          `json:"uuid"`
	RequestID string          `json:"request_id"` // control_request, control_cancel_request
	Request   json.RawMessage `json:"request"`    // control_request
	Response  json.RawMessage `json:"response"`   // control_response
}

// controlResponse is the inner "response" of a control_response.
type controlResponse struct {
	Subtype   string          `json:"subtype"` // "success" or "error"
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response"`
	Error     string          `json:"error"`
	ErrorCode string          `json:"error_code"`
}

// canUseTool is the "request" of a can_use_tool control_request (§5).
type canUseTool struct {
	Subtype               string            `json:"subtype"`
	ToolName              string            `json:"tool_name"`
	Input                 json.RawMessage   `json:"input"`
	PermissionSuggestions []json.RawMessage `json:"permission_suggestions"`
	Description           string            `json:"description"`
	DecisionReason        string            `json:"decision_reason"`
	BlockedPath           string            `json:"blocked_path"`
	ToolUseID             string            `json:"tool_use_id"`
}

// systemMessage holds the fields of the system subtypes the provider reads.
type systemMessage struct {
	Model          string          `json:"model"`          // init
	PermissionMode *string         `json:"permissionMode"` // init, status
	Status         *string         `json:"status"`         // status
	CompactResult  *string         `json:"compact_result"` // status
	CompactMeta    *compactionMeta `json:"compact_metadata"`
}

type compactionMeta struct {
	Trigger    string `json:"trigger"`
	PreTokens  int64  `json:"pre_tokens"`
	PostTokens int64  `json:"post_tokens"`
}

// resultMessage is the turn-complete "result" message (§4.5).
type resultMessage struct {
	Subtype        string      `json:"subtype"`
	SessionID      string      `json:"session_id"`
	IsError        bool        `json:"is_error"`
	Result         string      `json:"result"`
	Errors         []string    `json:"errors"`
	TerminalReason string      `json:"terminal_reason"`
	StopReason     string      `json:"stop_reason"`
	APIErrorStatus int         `json:"api_error_status"`
	TotalCostUSD   float64     `json:"total_cost_usd"`
	Usage          agent.Usage `json:"usage"`
	DurationMS     int64       `json:"duration_ms"`
	DurationAPIMS  int64       `json:"duration_api_ms"`
	NumTurns       int         `json:"num_turns"`
	// SinceLast is the usage since the previous result, per model; its
	// costUSD sum is this turn's cost. Older CLIs (2.1.197) lack it.
	SinceLast map[string]struct {
		CostUSD float64 `json:"costUSD"`
	} `json:"model_usage_since_last_result"`
}

// parsed is one stdout line, classified.
type parsed struct {
	env    envelope
	raw    json.RawMessage // the trimmed line
	events []agent.Event
	// set for the line kinds the provider acts on
	response *controlResponse // control_response
	perm     *agent.PermissionRequest
	cancel   string // control_cancel_request: the withdrawn request_id
	request  bool   // a control_request of another subtype, which must be answered
	subtype  string // its subtype
	system   *systemMessage
	turnEnd  *agent.TurnEnded
	// costKnown: turnEnd.CostUSD came from model_usage_since_last_result.
	costKnown bool
}

// Parse turns one stdout line of the CLI into neutral events, without
// state: a control_response gives agent.Control, a can_use_tool request
// agent.PermissionRequest, a control_cancel_request agent.PermissionRetired,
// any other JSON object an agent.Message carrying the line unchanged,
// followed by what is derived from it (agent.TurnEnded for a result,
// agent.Compaction and agent.ModeChanged for the system messages that report
// them). A line that is not a JSON object gives agent.RawOutput. Only an
// empty line gives nothing.
func Parse(line []byte) []agent.Event {
	return parseLine(line).events
}

func parseLine(line []byte) parsed {
	line = bytes.TrimRight(line, "\r\n")
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return parsed{}
	}
	// Some builds print debug text to stdout; only lines starting with '{'
	// are protocol (§2). A broken JSON object is output too, not a reason
	// to stop reading.
	var p parsed
	if trimmed[0] != '{' || !decodeLenient(trimmed, &p.env) {
		p.events = []agent.Event{agent.RawOutput{Line: string(line)}}
		return p
	}
	raw := json.RawMessage(trimmed)
	p.raw = raw
	switch p.env.Type {
	case "control_response":
		var r controlResponse
		decodeLenient(p.env.Response, &r)
		p.response = &r
		p.events = []agent.Event{agent.Control{Type: p.env.Type, Subtype: r.Subtype, RequestID: r.RequestID, Raw: raw}}
	case "control_request":
		var req canUseTool
		decodeLenient(p.env.Request, &req)
		if req.Subtype == "can_use_tool" {
			p.perm = &agent.PermissionRequest{
				RequestID:      p.env.RequestID,
				ToolName:       req.ToolName,
				Input:          req.Input,
				Suggestions:    req.PermissionSuggestions,
				ToolUseID:      req.ToolUseID,
				Description:    req.Description,
				DecisionReason: req.DecisionReason,
				BlockedPath:    req.BlockedPath,
				Raw:            raw,
			}
			if len(p.perm.Input) == 0 {
				p.perm.Input = json.RawMessage("{}")
			}
			p.events = []agent.Event{*p.perm}
			break
		}
		p.request, p.subtype = true, req.Subtype
		p.events = []agent.Event{agent.Control{Type: p.env.Type, Subtype: req.Subtype, RequestID: p.env.RequestID, Raw: raw}}
	case "control_cancel_request":
		p.cancel = p.env.RequestID
		p.events = []agent.Event{agent.PermissionRetired{RequestID: p.env.RequestID, Reason: agent.RetiredCancelled}}
	default:
		p.events = []agent.Event{agent.Message{Type: p.env.Type, Subtype: p.env.Subtype, SessionID: p.env.SessionID, UUID: p.env.UUID, Raw: raw}}
		switch p.env.Type {
		case agent.TypeSystem:
			p.parseSystem(raw)
		case agent.TypeResult:
			p.parseResult(raw)
		}
	}
	return p
}

func (p *parsed) parseSystem(raw []byte) {
	var s systemMessage
	decodeLenient(raw, &s)
	p.system = &s
	switch p.env.Subtype {
	case "status":
		switch {
		case s.Status != nil && *s.Status == "compacting":
			p.events = append(p.events, agent.Compaction{Phase: agent.CompactionStarted})
		case s.CompactResult != nil:
			p.events = append(p.events, agent.Compaction{Phase: agent.CompactionFinished, Result: *s.CompactResult})
		}
		if s.PermissionMode != nil && *s.PermissionMode != "" {
			p.events = append(p.events, agent.ModeChanged{Mode: *s.PermissionMode})
		}
	case "compact_boundary":
		c := agent.Compaction{Phase: agent.CompactionBoundary}
		if m := s.CompactMeta; m != nil {
			c.Trigger, c.PreTokens, c.PostTokens = m.Trigger, m.PreTokens, m.PostTokens
		}
		p.events = append(p.events, c)
	}
}

func (p *parsed) parseResult(raw []byte) {
	var r resultMessage
	decodeLenient(raw, &r)
	t := agent.TurnEnded{
		SessionID:      r.SessionID,
		Subtype:        r.Subtype,
		IsError:        r.IsError,
		Interrupted:    strings.HasPrefix(r.TerminalReason, "aborted"),
		Result:         r.Result,
		Errors:         r.Errors,
		TerminalReason: r.TerminalReason,
		StopReason:     r.StopReason,
		APIErrorStatus: r.APIErrorStatus,
		CostUSD:        r.TotalCostUSD,
		TotalCostUSD:   r.TotalCostUSD,
		Usage:          r.Usage,
		DurationMS:     r.DurationMS,
		DurationAPIMS:  r.DurationAPIMS,
		NumTurns:       r.NumTurns,
	}
	if r.SinceLast != nil {
		p.costKnown = true
		t.CostUSD = 0
		for model, u := range r.SinceLast {
			t.CostUSD += u.CostUSD
			if len(r.SinceLast) == 1 {
				t.Model = model
			}
		}
	}
	p.turnEnd = &t
	p.events = append(p.events, t)
}

// decodeLenient decodes JSON into v, keeping what fits when some field has
// an unexpected type (the format gains and changes fields; §8). It reports
// false only for input that is not valid JSON.
func decodeLenient(data []byte, v any) bool {
	if len(data) == 0 {
		return false
	}
	err := json.Unmarshal(data, v)
	var typeErr *json.UnmarshalTypeError
	return err == nil || errors.As(err, &typeErr)
}
