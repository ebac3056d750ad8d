package room

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// TurnStreamMaxLen bounds the turn events stream (approximate trimming).
const TurnStreamMaxLen = 100000

// Turn event writes: each XADD gets turnAddTimeout; a failed one is retried
// up to turnAddAttempts times in all, the wait doubling from turnRetryDelay,
// for as long as the event is younger than the sum of those waits (about
// 13 s after it was queued). Then it is logged and given up. While Redis is
// down (the last event was given up), an event already past that age is
// given up without an attempt: a long outage, or a Close during one (Close
// waits for the queue), costs one retry budget, not one per event. At most
// turnQueueMax events wait; past that the oldest is dropped (and logged),
// so a long Redis outage costs bounded memory.
const (
	turnAddTimeout  = 5 * time.Second
	turnAddAttempts = 8
	turnQueueMax    = 10000
)

// turnRetryDelay is the first wait between attempts (a variable for the
// tests).
var turnRetryDelay = 100 * time.Millisecond

// turnRetryBudget is how long after it was queued an event may still be
// retried: the sum of the waits between turnAddAttempts attempts.
func turnRetryBudget() time.Duration { return turnRetryDelay * (1<<(turnAddAttempts-1) - 1) }

// turnNumberTimeout bounds the read of the session's turn count.
const turnNumberTimeout = 2 * time.Second

// Outcomes of a tool call in turn_ended's tools.
const (
	toolOK     = "ok"
	toolError  = "error"
	toolDenied = "denied"
)

// prompt is a user message sent to the agent, waiting for its turn.
type prompt struct {
	id    string // turn_id: "<session_id>:<line of the prompt>"
	line  int64  // the line of the prompt
	text  string
	cwd   string
	model string
	// provider and start: set when the turn starts.
	provider string
	start    time.Time
	number   int // the session's turn count at this turn, 1-based; 0 if unknown
	// open: the turn is recorded in open_turns (recover.go).
	open bool

	// The turn's tool calls, in tool_use order; byID indexes them by
	// tool_use id; denied holds the ids of the denied ones.
	tools  []*toolCall
	byID   map[string]*toolCall
	denied map[string]bool
}

// toolCall is one tool_use of a turn and what became of it.
type toolCall struct {
	name     string
	used     time.Time // when its tool_use arrived
	done     bool      // its tool_result arrived
	isError  bool      // the tool_result's is_error
	duration time.Duration
}

// turnTool is a tool call as turn_ended's tools field carries it.
type turnTool struct {
	Name       string `json:"name"`
	DurationMS *int64 `json:"duration_ms"` // null when no tool_result came
	Outcome    string `json:"outcome"`     // ok, error or denied
}

// turnPublisher writes turn events to the stream one at a time, in the
// order they happen, retrying on failure. Its zero value is ready.
type turnPublisher struct {
	mu      sync.Mutex
	queue   []queuedTurn
	running bool
	// down: the last event was given up (Redis is taken as down).
	down bool
}

// queuedTurn is a turn event waiting to be written, and when it was queued.
type queuedTurn struct {
	values map[string]any
	at     time.Time
}

// publishTurn queues a turn event for the turns stream. The write happens
// in the background, in order, with bounded retries: failures are logged,
// never reported to the turn.
func (m *Manager) publishTurn(values map[string]any) {
	if m.cfg.Redis == nil || m.cfg.TurnStream == "" {
		return
	}
	p := &m.turnPub
	p.mu.Lock()
	if len(p.queue) >= turnQueueMax {
		m.log.Error("drop turn event: queue full", "stream", m.cfg.TurnStream, "event", p.queue[0].values["event"], "turn_id", p.queue[0].values["turn_id"])
		p.queue = p.queue[1:]
	}
	p.queue = append(p.queue, queuedTurn{values: values, at: time.Now()})
	start := !p.running
	p.running = true
	p.mu.Unlock()
	if start {
		m.bg.Go(m.drainTurns)
	}
}

// drainTurns writes the queued turn events until the queue is empty.
func (m *Manager) drainTurns() {
	p := &m.turnPub
	for {
		p.mu.Lock()
		if len(p.queue) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		q := p.queue[0]
		p.queue = p.queue[1:]
		down := p.down
		p.mu.Unlock()
		ok := m.addTurnEvent(q, down)
		p.mu.Lock()
		p.down = !ok
		p.mu.Unlock()
	}
}

// addTurnEvent XADDs one event, retrying with backoff within its retry
// budget; down: the previous event was given up. It reports whether the
// event was written.
func (m *Manager) addTurnEvent(q queuedTurn, down bool) bool {
	values := q.values
	// Signed for shadow and analytics, which ignore unsigned events; a
	// Manager without the internal secret (unit tests) writes them as
	// they are.
	if m.turnKey.Valid() {
		if err := m.turnKey.Sign(m.cfg.TurnStream, values); err != nil {
			m.log.Error("sign turn event", "event", values["event"], "turn_id", values["turn_id"], "err", err)
			return true // dropped, but Redis is not down
		}
	}
	deadline := q.at.Add(turnRetryBudget())
	if down && time.Now().After(deadline) {
		m.log.Error("drop turn event: Redis down past its retry time", "stream", m.cfg.TurnStream,
			"event", values["event"], "turn_id", values["turn_id"])
		return false
	}
	delay := turnRetryDelay
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), turnAddTimeout)
		err := m.cfg.Redis.XAdd(ctx, &redis.XAddArgs{
			Stream: m.cfg.TurnStream, MaxLen: TurnStreamMaxLen, Approx: true, Values: values,
		}).Err()
		cancel()
		if err == nil {
			return true
		}
		wait := min(delay, time.Until(deadline))
		if attempt >= turnAddAttempts || wait <= 0 {
			m.log.Error("add turn event", "stream", m.cfg.TurnStream, "event", values["event"],
				"turn_id", values["turn_id"], "attempts", attempt, "err", err)
			return false
		}
		m.log.Warn("add turn event, retrying", "stream", m.cfg.TurnStream, "event", values["event"],
			"turn_id", values["turn_id"], "attempt", attempt, "err", err)
		time.Sleep(wait)
		delay *= 2
	}
}

// turnNumber is the number the session's next turn gets: its stored turn
// count plus one (the count grows when a turn's result is recorded, so a
// turn cut off by the process's exit leaves it, and its number, unchanged).
// The room keeps the count (see Room.turnCount), so this reads the session
// only when the last recordTurn failed. 0 when the count cannot be read.
func (r *Room) turnNumber() int {
	r.mu.Lock()
	n, known := r.turnCount, r.turnCountKnown
	r.mu.Unlock()
	if known {
		return n + 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), turnNumberTimeout)
	defer cancel()
	sess, err := r.m.cfg.Store.Get(ctx, r.id)
	if err != nil {
		r.m.log.Error("read turn count", "session_id", r.id, "err", err)
		return 0
	}
	r.mu.Lock()
	r.turnCount, r.turnCountKnown = sess.Turns, true
	r.mu.Unlock()
	return sess.Turns + 1
}

// turnStarted pops the next sent prompt as the running turn and publishes
// turn_started.
func (r *Room) turnStarted(provider string) {
	r.mu.Lock()
	if len(r.sent) == 0 {
		r.mu.Unlock()
		return
	}
	t := r.sent[0]
	r.sent = r.sent[1:]
	t.start, t.provider = time.Now(), provider
	r.turns = append(r.turns, t)
	r.mu.Unlock()
	number := r.turnNumber()
	r.mu.Lock()
	t.number = number
	r.mu.Unlock()
	v := map[string]any{
		"event": "turn_started", "session_id": r.id, "turn_id": t.id, "prompt": t.text,
		"cwd": t.cwd, "provider": provider, "model": t.model,
		"started_at": t.start.UTC().Format(time.RFC3339Nano),
	}
	if number > 0 {
		v["turn_number"] = number
	}
	r.recordOpen(t)
	r.m.publishTurn(v)
}

// toolMessage is what trackTools reads of an agent message.
type toolMessage struct {
	Message struct {
		Content json.RawMessage `json:"content"` // a string or a list of blocks
	} `json:"message"`
	ToolUseID         string `json:"tool_use_id"` // system/permission_denied
	PermissionDenials []struct {
		ToolUseID string `json:"tool_use_id"`
	} `json:"permission_denials"` // result
}

// toolBlock is a content block of an assistant or user message.
type toolBlock struct {
	Type      string `json:"type"`
	ID        string `json:"id"`          // tool_use
	Name      string `json:"name"`        // tool_use
	ToolUseID string `json:"tool_use_id"` // tool_result
	IsError   bool   `json:"is_error"`    // tool_result
}

// trackTools follows the running turn's tool calls: the tool_use blocks of
// assistant messages, the tool_result blocks of user messages, and the
// denials (system/permission_denied, the result's permission_denials).
func (r *Room) trackTools(e agent.Message) {
	switch {
	case e.Type == agent.TypeAssistant, e.Type == agent.TypeUser,
		e.Type == agent.TypeSystem && e.Subtype == "permission_denied", e.Type == agent.TypeResult:
	default:
		return
	}
	var msg toolMessage
	if json.Unmarshal(e.Raw, &msg) != nil {
		return
	}
	var blocks []toolBlock
	if len(msg.Message.Content) > 0 && msg.Message.Content[0] == '[' {
		_ = json.Unmarshal(msg.Message.Content, &blocks)
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.turns) == 0 {
		return
	}
	t := r.turns[0]
	switch e.Type {
	case agent.TypeAssistant:
		for _, b := range blocks {
			if b.Type != "tool_use" {
				continue
			}
			c := &toolCall{name: b.Name, used: now}
			t.tools = append(t.tools, c)
			if b.ID != "" {
				if t.byID == nil {
					t.byID = map[string]*toolCall{}
				}
				t.byID[b.ID] = c
			}
		}
	case agent.TypeUser:
		for _, b := range blocks {
			if c := t.byID[b.ToolUseID]; b.Type == "tool_result" && c != nil && !c.done {
				c.done, c.isError, c.duration = true, b.IsError, now.Sub(c.used)
			}
		}
	case agent.TypeSystem:
		t.deny(msg.ToolUseID)
	case agent.TypeResult:
		for _, d := range msg.PermissionDenials {
			t.deny(d.ToolUseID)
		}
	}
}

// deny marks the tool call id as denied.
func (t *prompt) deny(id string) {
	if id == "" {
		return
	}
	if t.denied == nil {
		t.denied = map[string]bool{}
	}
	t.denied[id] = true
}

// toolList is turn_ended's tools: each tool call with its duration and
// outcome. Call with r.mu held or t no longer shared.
func (t *prompt) toolList() []turnTool {
	denied := map[*toolCall]bool{}
	for id := range t.denied {
		if c := t.byID[id]; c != nil {
			denied[c] = true
		}
	}
	out := make([]turnTool, 0, len(t.tools))
	for _, c := range t.tools {
		tt := turnTool{Name: c.name, Outcome: toolOK}
		if c.done {
			ms := c.duration.Milliseconds()
			tt.DurationMS = &ms
		}
		switch {
		case denied[c]:
			tt.Outcome = toolDenied
		case !c.done || c.isError:
			tt.Outcome = toolError
		}
		out = append(out, tt)
	}
	return out
}

// turnEnded pops the running turn and publishes turn_ended; e is nil for a
// turn cut off by the process's exit, whose stop_reason is cut.
func (r *Room) turnEnded(e *agent.TurnEnded, cut string) {
	r.mu.Lock()
	if len(r.turns) == 0 {
		r.mu.Unlock()
		return
	}
	t := r.turns[0]
	r.turns = r.turns[1:]
	tools := t.toolList()
	number := t.number
	r.mu.Unlock()
	if !r.closeOpen(t) {
		return // closed as interrupted by another instance (recover.go)
	}
	toolsJSON, err := json.Marshal(tools)
	if err != nil {
		toolsJSON = []byte("[]")
	}
	now := time.Now()
	if h := r.m.cfg.Push; h != nil {
		status := cut
		if e != nil {
			status = "success"
			if e.IsError {
				status = "error"
			}
		}
		cost := 0.0
		if e != nil {
			cost = e.CostUSD
		}
		h.TurnEnded(r.id, t.id, now.Sub(t.start), cost, status)
	}
	v := map[string]any{
		"event": "turn_ended", "session_id": r.id, "turn_id": t.id, "prompt": t.text, "model": t.model,
		"cwd": t.cwd, "provider": t.provider,
		"cost_usd": "0", "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
		"cache_creation_tokens": 0, "duration_ms": now.Sub(t.start).Milliseconds(), "tool_calls": len(tools),
		"tools":    string(toolsJSON),
		"is_error": "true", "stop_reason": cut, "ended_at": now.UTC().Format(time.RFC3339Nano),
	}
	if number > 0 {
		v["turn_number"] = number
	}
	if e != nil {
		if e.Model != "" {
			v["model"] = e.Model
		}
		v["cost_usd"] = strconv.FormatFloat(e.CostUSD, 'f', -1, 64)
		v["input_tokens"] = e.Usage.InputTokens
		v["output_tokens"] = e.Usage.OutputTokens
		v["cache_read_tokens"] = e.Usage.CacheReadInputTokens
		v["cache_creation_tokens"] = e.Usage.CacheCreationInputTokens
		if e.DurationMS > 0 {
			v["duration_ms"] = e.DurationMS
		}
		v["is_error"] = strconv.FormatBool(e.IsError)
		v["stop_reason"] = e.StopReason
		if v["stop_reason"] == "" {
			v["stop_reason"] = e.Subtype
		}
	}
	r.m.publishTurn(v)
}

// promptSent queues a prompt for the TurnStarted its Send reports.
func (r *Room) promptSent(p *prompt) {
	r.mu.Lock()
	r.sent = append(r.sent, p)
	r.mu.Unlock()
}

// promptFailed forgets p when its Send failed before its turn started.
func (r *Room) promptFailed(p *prompt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, q := range r.sent {
		if q == p {
			r.sent = append(r.sent[:i], r.sent[i+1:]...)
			return
		}
	}
}

// runningPromptLine is the line of the prompt of the running turn (or of
// the oldest prompt sent whose turn has not started), 0 if none.
func (r *Room) runningPromptLine() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case len(r.turns) > 0:
		return r.turns[0].line
	case len(r.sent) > 0:
		return r.sent[0].line
	}
	return 0
}

func turnID(session string, line int64) string { return fmt.Sprintf("%s:%d", session, line) }
