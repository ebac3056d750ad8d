package room

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// TurnStreamMaxLen bounds the turn events stream (approximate trimming).
const TurnStreamMaxLen = 100000

// turnAddTimeout bounds one XADD of a turn event.
const turnAddTimeout = 5 * time.Second

// prompt is a user message sent to the agent, waiting for its turn.
type prompt struct {
	id    string // turn_id: "<session_id>:<line of the prompt>"
	text  string
	cwd   string
	model string
	start time.Time
	tools int // tool_use blocks in the turn's assistant messages
}

// publishTurn adds a turn event to the turns stream, in the background:
// failures are logged, never reported to the turn.
func (m *Manager) publishTurn(values map[string]any) {
	if m.cfg.Redis == nil || m.cfg.TurnStream == "" {
		return
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), turnAddTimeout)
		defer cancel()
		err := m.cfg.Redis.XAdd(ctx, &redis.XAddArgs{
			Stream: m.cfg.TurnStream, MaxLen: TurnStreamMaxLen, Approx: true, Values: values,
		}).Err()
		if err != nil {
			m.log.Error("add turn event", "stream", m.cfg.TurnStream, "event", values["event"], "err", err)
		}
	}()
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
	t.start = time.Now()
	r.turns = append(r.turns, t)
	r.mu.Unlock()
	r.m.publishTurn(map[string]any{
		"event": "turn_started", "session_id": r.id, "turn_id": t.id, "prompt": t.text,
		"cwd": t.cwd, "provider": provider, "model": t.model,
		"started_at": t.start.UTC().Format(time.RFC3339Nano),
	})
}

// countTools adds the tool_use blocks of an assistant message to the
// running turn.
func (r *Room) countTools(raw json.RawMessage) {
	var msg struct {
		Message struct {
			Content []struct {
				Type string `json:"type"`
			} `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(raw, &msg) != nil {
		return
	}
	n := 0
	for _, b := range msg.Message.Content {
		if b.Type == "tool_use" {
			n++
		}
	}
	if n == 0 {
		return
	}
	r.mu.Lock()
	if len(r.turns) > 0 {
		r.turns[0].tools += n
	}
	r.mu.Unlock()
}

// turnEnded pops the running turn and publishes turn_ended; e is nil for a
// turn cut off by the process's exit.
func (r *Room) turnEnded(e *agent.TurnEnded) {
	r.mu.Lock()
	if len(r.turns) == 0 {
		r.mu.Unlock()
		return
	}
	t := r.turns[0]
	r.turns = r.turns[1:]
	r.mu.Unlock()
	now := time.Now()
	v := map[string]any{
		"event": "turn_ended", "session_id": r.id, "turn_id": t.id, "prompt": t.text, "model": t.model,
		"cost_usd": "0", "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
		"cache_creation_tokens": 0, "duration_ms": now.Sub(t.start).Milliseconds(), "tool_calls": t.tools,
		"is_error": "true", "stop_reason": "process_exited", "ended_at": now.UTC().Format(time.RFC3339Nano),
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

func turnID(session string, line int64) string { return fmt.Sprintf("%s:%d", session, line) }
