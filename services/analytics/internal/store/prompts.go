package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Prompt is a turn's prompt, as the prompt routes list it.
type Prompt struct {
	TurnID    string    `json:"turn_id"`
	SessionID string    `json:"session_id"`
	Project   string    `json:"project"`
	StartedAt time.Time `json:"started_at"`
	Prompt    string    `json:"prompt"`
	// Rank and Snippet: search results only.
	Rank    *float64 `json:"rank,omitempty"`
	Snippet string   `json:"snippet,omitempty"`
}

// SearchPrompts is a full-text search of the prompts of the turns f
// selects (websearch syntax: words, "a phrase", -not, or; English
// stemming), best match first, at most limit. Like prompt_tsv, the snippet
// looks at a prompt's first 100000 characters.
func (s *Store) SearchPrompts(ctx context.Context, text string, f Filter, limit int) ([]Prompt, error) {
	q := &query{}
	tsq := q.arg(text)
	q.filter(f, "t")
	q.add("t.prompt_tsv @@ websearch_to_tsquery('english', " + tsq + ")")
	rows, err := s.db.Query(ctx, `SELECT t.id, t.session_id, t.project, t.started_at, t.user_prompt,
	ts_rank_cd(t.prompt_tsv, websearch_to_tsquery('english', `+tsq+`))::float8 AS rank,
	ts_headline('english', left(t.user_prompt, 100000), websearch_to_tsquery('english', `+tsq+`),
		'StartSel=[[, StopSel=]], MaxWords=30, MinWords=10, MaxFragments=2')
FROM turns t WHERE `+q.whereSQL()+` ORDER BY rank DESC, t.started_at DESC, t.id DESC LIMIT `+q.arg(clampLimit(limit)), q.args...)
	if err != nil {
		return nil, fmt.Errorf("search prompts: %w", err)
	}
	return collectPrompts(rows, true)
}

func collectPrompts(rows pgx.Rows, ranked bool) ([]Prompt, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Prompt, error) {
		var p Prompt
		dest := []any{&p.TurnID, &p.SessionID, &p.Project, &p.StartedAt, &p.Prompt}
		if ranked {
			dest = append(dest, &p.Rank, &p.Snippet)
		}
		err := r.Scan(dest...)
		p.StartedAt = p.StartedAt.UTC()
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("read prompts: %w", err)
	}
	if out == nil {
		out = []Prompt{}
	}
	return out, nil
}

// RecentPrompts lists the newest prompts of the turns f selects.
func (s *Store) RecentPrompts(ctx context.Context, f Filter, limit int) ([]Prompt, error) {
	q := &query{}
	q.filter(f, "t")
	q.add("t.user_prompt <> ''")
	rows, err := s.db.Query(ctx, `SELECT t.id, t.session_id, t.project, t.started_at, t.user_prompt FROM turns t WHERE `+
		q.whereSQL()+` ORDER BY t.started_at DESC, t.id DESC LIMIT `+q.arg(clampLimit(limit)), q.args...)
	if err != nil {
		return nil, fmt.Errorf("recent prompts: %w", err)
	}
	return collectPrompts(rows, false)
}

// FrequentPrompt is a prompt text and how often it was sent.
type FrequentPrompt struct {
	Prompt   string    `json:"prompt"`
	Count    int64     `json:"count"`
	Sessions int64     `json:"sessions"`
	LastAt   time.Time `json:"last_at"`
}

// FrequentPrompts lists the prompt texts sent most often (exact text,
// surrounding whitespace ignored) in the turns f selects.
func (s *Store) FrequentPrompts(ctx context.Context, f Filter, limit int) ([]FrequentPrompt, error) {
	q := &query{}
	q.filter(f, "t")
	q.add("btrim(t.user_prompt) <> ''")
	rows, err := s.db.Query(ctx, `SELECT btrim(t.user_prompt), count(*), count(DISTINCT t.session_id), max(t.started_at)
FROM turns t WHERE `+q.whereSQL()+` GROUP BY 1 ORDER BY 2 DESC, 4 DESC LIMIT `+q.arg(clampLimit(limit)), q.args...)
	if err != nil {
		return nil, fmt.Errorf("frequent prompts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (FrequentPrompt, error) {
		var p FrequentPrompt
		err := r.Scan(&p.Prompt, &p.Count, &p.Sessions, &p.LastAt)
		p.LastAt = p.LastAt.UTC()
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("frequent prompts: %w", err)
	}
	if out == nil {
		out = []FrequentPrompt{}
	}
	return out, nil
}

// PromptStats is GET /api/prompts/stats.
type PromptStats struct {
	Prompts   int64      `json:"prompts"`
	Distinct  int64      `json:"distinct"`
	Sessions  int64      `json:"sessions"`
	AvgLength float64    `json:"avg_length"`
	MaxLength int64      `json:"max_length"`
	First     *time.Time `json:"first_at"`
	Last      *time.Time `json:"last_at"`
}

// PromptStats counts the prompts of the turns f selects (lengths in
// characters).
func (s *Store) PromptStats(ctx context.Context, f Filter) (PromptStats, error) {
	q := &query{}
	q.filter(f, "t")
	var p PromptStats
	err := s.db.QueryRow(ctx, `SELECT count(*), count(DISTINCT btrim(t.user_prompt)), count(DISTINCT t.session_id),
	coalesce(avg(char_length(t.user_prompt)), 0)::float8, coalesce(max(char_length(t.user_prompt)), 0),
	min(t.started_at), max(t.started_at)
FROM turns t WHERE `+q.whereSQL(), q.args...).Scan(&p.Prompts, &p.Distinct, &p.Sessions, &p.AvgLength, &p.MaxLength, &p.First, &p.Last)
	if err != nil {
		return PromptStats{}, fmt.Errorf("prompt stats: %w", err)
	}
	utc(p.First)
	utc(p.Last)
	return p, nil
}
