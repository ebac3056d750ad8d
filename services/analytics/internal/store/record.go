package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Tool outcomes.
const (
	OutcomeOK     = "ok"
	OutcomeError  = "error"
	OutcomeDenied = "denied"
)

// TurnStart is what a turn_started event says.
type TurnStart struct {
	ID, SessionID string
	TurnNumber    int // 0: unknown
	StartedAt     time.Time
	Prompt        string
	Model         string
	Provider      string
	Cwd, Project  string
}

// TurnEnd is what a turn_ended event says.
type TurnEnd struct {
	ID, SessionID string
	TurnNumber    int // 0: unknown
	EndedAt       time.Time
	DurationMS    int64
	Prompt        string
	Model         string
	Provider      string // "" when the event did not carry it
	Cwd, Project  string // "" when the event did not carry them
	// CostUSD is the cost as decimal text (exact, stored as numeric).
	CostUSD                              string
	InputTokens, OutputTokens            int64
	CacheReadTokens, CacheCreationTokens int64
	ToolCalls                            int
	IsError                              bool
	StopReason                           string
	Tools                                []Tool
}

// Tool is one tool call of a turn.
type Tool struct {
	Name       string `json:"name"`
	DurationMS *int64 `json:"duration_ms"`
	Outcome    string `json:"outcome"`
}

// nullInt is n, or NULL for 0.
func nullInt(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

// RecordStart records a turn's start. Recording it again changes nothing;
// after the turn's end it fills only what the end left unknown (the start
// time always comes from here).
func (s *Store) RecordStart(ctx context.Context, t TurnStart) error {
	_, err := s.db.Exec(ctx, `
INSERT INTO turns (id, session_id, turn_number, started_at, user_prompt, model, provider, cwd, project)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (id) DO UPDATE SET
	started_at  = EXCLUDED.started_at,
	turn_number = COALESCE(turns.turn_number, EXCLUDED.turn_number),
	user_prompt = CASE WHEN turns.user_prompt = '' THEN EXCLUDED.user_prompt ELSE turns.user_prompt END,
	model       = CASE WHEN turns.model = '' THEN EXCLUDED.model ELSE turns.model END,
	provider    = CASE WHEN turns.provider = '' THEN EXCLUDED.provider ELSE turns.provider END,
	cwd         = CASE WHEN turns.cwd = '' THEN EXCLUDED.cwd ELSE turns.cwd END,
	project     = CASE WHEN turns.project = '' THEN EXCLUDED.project ELSE turns.project END`,
		t.ID, t.SessionID, nullInt(t.TurnNumber), t.StartedAt, t.Prompt, t.Model, t.Provider, t.Cwd, t.Project)
	if err != nil {
		return fmt.Errorf("record start of turn %s: %w", t.ID, err)
	}
	return nil
}

// RecordEnd records a turn's end and its tool calls, in one transaction:
// the turn is created when its start was not seen (started_at is then
// ended_at minus the duration). Recording it again gives the same row.
func (s *Store) RecordEnd(ctx context.Context, t TurnEnd) error {
	started := t.EndedAt.Add(-time.Duration(t.DurationMS) * time.Millisecond)
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
INSERT INTO turns (id, session_id, turn_number, started_at, ended_at, duration_ms, user_prompt, model,
	provider, cost, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, tool_calls,
	is_error, stop_reason, cwd, project)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::numeric, $11, $12, $13, $14, $15, $16, $17, $18, $19)
ON CONFLICT (id) DO UPDATE SET
	turn_number           = COALESCE(EXCLUDED.turn_number, turns.turn_number),
	ended_at              = EXCLUDED.ended_at,
	duration_ms           = EXCLUDED.duration_ms,
	user_prompt           = CASE WHEN EXCLUDED.user_prompt <> '' THEN EXCLUDED.user_prompt ELSE turns.user_prompt END,
	model                 = CASE WHEN EXCLUDED.model <> '' THEN EXCLUDED.model ELSE turns.model END,
	provider              = CASE WHEN EXCLUDED.provider <> '' THEN EXCLUDED.provider ELSE turns.provider END,
	cost                  = EXCLUDED.cost,
	input_tokens          = EXCLUDED.input_tokens,
	output_tokens         = EXCLUDED.output_tokens,
	cache_read_tokens     = EXCLUDED.cache_read_tokens,
	cache_creation_tokens = EXCLUDED.cache_creation_tokens,
	tool_calls            = EXCLUDED.tool_calls,
	is_error              = EXCLUDED.is_error,
	stop_reason           = EXCLUDED.stop_reason,
	cwd                   = CASE WHEN EXCLUDED.cwd <> '' THEN EXCLUDED.cwd ELSE turns.cwd END,
	project               = CASE WHEN EXCLUDED.project <> '' THEN EXCLUDED.project ELSE turns.project END`,
			t.ID, t.SessionID, nullInt(t.TurnNumber), started, t.EndedAt, t.DurationMS, t.Prompt, t.Model,
			t.Provider, t.CostUSD, t.InputTokens, t.OutputTokens, t.CacheReadTokens, t.CacheCreationTokens,
			t.ToolCalls, t.IsError, t.StopReason, t.Cwd, t.Project)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM turn_tools WHERE turn_id = $1`, t.ID); err != nil {
			return err
		}
		if len(t.Tools) == 0 {
			return nil
		}
		names := make([]string, len(t.Tools))
		durations := make([]*int64, len(t.Tools))
		outcomes := make([]string, len(t.Tools))
		for i, tool := range t.Tools {
			names[i], durations[i], outcomes[i] = tool.Name, tool.DurationMS, tool.Outcome
		}
		_, err = tx.Exec(ctx, `
INSERT INTO turn_tools (turn_id, seq, name, duration_ms, outcome)
SELECT $1, u.seq, u.name, u.duration_ms, u.outcome
FROM unnest($2::text[], $3::bigint[], $4::text[]) WITH ORDINALITY AS u(name, duration_ms, outcome, seq)`,
			t.ID, names, durations, outcomes)
		return err
	})
	if err != nil {
		return fmt.Errorf("record end of turn %s: %w", t.ID, err)
	}
	return nil
}
