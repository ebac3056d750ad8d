package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svc-code/svc-code/services/analytics/internal/schema"
)

// TableStats is one analytics table or view: its rows and its size on
// disk (indexes and TOAST included; 0 for a view).
type TableStats struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// Stats is GET /api/shadow-db.
type Stats struct {
	Tables      []TableStats `json:"tables"`
	Turns       int64        `json:"turns"`
	Sessions    int64        `json:"sessions"`
	OldestTurn  *time.Time   `json:"oldest_turn"`
	NewestTurn  *time.Time   `json:"newest_turn"`
	TotalBytes  int64        `json:"total_bytes"`
	GeneratedAt time.Time    `json:"generated_at"`
}

// Stats counts the rows of every analytics table and view (exactly) and
// their sizes, and the turns' time span. turns is scanned once for its
// counts (the turn_costs view's rows are its ended turns) and once more,
// hashed, for its sessions.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	st := Stats{GeneratedAt: time.Now().UTC()}
	var endedTurns int64
	err := s.db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE ended_at IS NOT NULL),
	(SELECT count(*) FROM (SELECT 1 FROM turns GROUP BY session_id) s), min(started_at), max(started_at) FROM turns`).
		Scan(&st.Turns, &endedTurns, &st.Sessions, &st.OldestTurn, &st.NewestTurn)
	if err != nil {
		return Stats{}, fmt.Errorf("turn span: %w", err)
	}
	utc(st.OldestTurn)
	utc(st.NewestTurn)
	for _, t := range schema.Describe() {
		ts := TableStats{Name: t.Name, Kind: t.Kind}
		ident := pgx.Identifier{t.Name}.Sanitize()
		switch t.Name {
		case "turns":
			ts.Rows = st.Turns
		case "turn_costs":
			ts.Rows = endedTurns
		default:
			if err := s.db.QueryRow(ctx, `SELECT count(*) FROM `+ident).Scan(&ts.Rows); err != nil {
				return Stats{}, fmt.Errorf("count %s: %w", t.Name, err)
			}
		}
		if t.Kind == schema.KindTable {
			if err := s.db.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass)`, ident).Scan(&ts.Bytes); err != nil {
				return Stats{}, fmt.Errorf("size of %s: %w", t.Name, err)
			}
		}
		st.TotalBytes += ts.Bytes
		st.Tables = append(st.Tables, ts)
	}
	return st, nil
}

func utc(t *time.Time) {
	if t != nil {
		*t = t.UTC()
	}
}

// Usage is the cost and token sums of a set of turns.
type Usage struct {
	Turns               int64   `json:"turns"`
	Cost                float64 `json:"cost"`
	InputTokens         int64   `json:"input_tokens"`
	OutputTokens        int64   `json:"output_tokens"`
	CacheReadTokens     int64   `json:"cache_read_tokens"`
	CacheCreationTokens int64   `json:"cache_creation_tokens"`
}

const usageColumns = `count(*), coalesce(sum(t.cost), 0)::float8, coalesce(sum(t.input_tokens), 0)::bigint,
	coalesce(sum(t.output_tokens), 0)::bigint, coalesce(sum(t.cache_read_tokens), 0)::bigint,
	coalesce(sum(t.cache_creation_tokens), 0)::bigint`

func usageDest(u *Usage) []any {
	return []any{&u.Turns, &u.Cost, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheCreationTokens}
}

// ModelUsage is Usage of one model.
type ModelUsage struct {
	Model string `json:"model"`
	Usage
}

// CostSummary is GET /api/costs.
type CostSummary struct {
	Usage
	Errors  int64        `json:"errors"`
	ByModel []ModelUsage `json:"by_model"`
}

// Costs sums the ended turns f selects, in all and per model (costliest
// first), in one scan (GROUPING SETS).
func (s *Store) Costs(ctx context.Context, f Filter) (CostSummary, error) {
	q := &query{}
	q.filter(f, "t")
	q.add("t.ended_at IS NOT NULL")
	rows, err := s.db.Query(ctx, `SELECT grouping(t.model) = 1, coalesce(t.model, ''), `+usageColumns+`,
	count(*) FILTER (WHERE t.is_error)
FROM turns t WHERE `+q.whereSQL()+` GROUP BY GROUPING SETS ((), (t.model)) ORDER BY 1 DESC, 4 DESC, 2`, q.args...)
	if err != nil {
		return CostSummary{}, fmt.Errorf("cost summary: %w", err)
	}
	defer rows.Close()
	out := CostSummary{ByModel: []ModelUsage{}}
	for rows.Next() {
		var total bool
		var m ModelUsage
		var errs int64
		if err := rows.Scan(append(append([]any{&total, &m.Model}, usageDest(&m.Usage)...), &errs)...); err != nil {
			return CostSummary{}, fmt.Errorf("cost summary: %w", err)
		}
		if total {
			out.Usage, out.Errors = m.Usage, errs
			continue
		}
		out.ByModel = append(out.ByModel, m)
	}
	if err := rows.Err(); err != nil {
		return CostSummary{}, fmt.Errorf("cost summary: %w", err)
	}
	return out, nil
}

// SessionCost is the Usage of one session.
type SessionCost struct {
	SessionID string    `json:"session_id"`
	Project   string    `json:"project"`
	FirstAt   time.Time `json:"first_at"`
	LastAt    time.Time `json:"last_at"`
	Usage
}

// SessionCosts lists the sessions of the ended turns f selects, costliest
// first, at most limit.
func (s *Store) SessionCosts(ctx context.Context, f Filter, limit int) ([]SessionCost, error) {
	q := &query{}
	q.filter(f, "t")
	q.add("t.ended_at IS NOT NULL")
	rows, err := s.db.Query(ctx, `SELECT t.session_id, max(t.project), min(t.started_at), max(t.started_at), `+usageColumns+
		` FROM turns t WHERE `+q.whereSQL()+` GROUP BY t.session_id ORDER BY 6 DESC, t.session_id LIMIT `+q.arg(clampLimit(limit)), q.args...)
	if err != nil {
		return nil, fmt.Errorf("cost per session: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SessionCost, error) {
		var c SessionCost
		err := r.Scan(append([]any{&c.SessionID, &c.Project, &c.FirstAt, &c.LastAt}, usageDest(&c.Usage)...)...)
		c.FirstAt, c.LastAt = c.FirstAt.UTC(), c.LastAt.UTC()
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("cost per session: %w", err)
	}
	if out == nil {
		out = []SessionCost{}
	}
	return out, nil
}

// ToolCost is one tool's calls in the turns f selects.
type ToolCost struct {
	Name          string  `json:"name"`
	Calls         int64   `json:"calls"`
	Errors        int64   `json:"errors"`
	Denied        int64   `json:"denied"`
	TotalMS       int64   `json:"total_duration_ms"`
	AvgMS         float64 `json:"avg_duration_ms"`
	Turns         int64   `json:"turns"`
	TurnsCost     float64 `json:"turns_cost"`
	AttributedUSD float64 `json:"attributed_cost"`
}

// ToolCosts lists the tools called in the ended turns f selects, most
// called first. TurnsCost sums the cost of the turns that called the tool
// (a turn counts for each tool it called); AttributedUSD splits each
// turn's cost evenly over its tool calls, so it adds up across tools.
func (s *Store) ToolCosts(ctx context.Context, f Filter) ([]ToolCost, error) {
	q := &query{}
	q.filter(f, "t")
	q.add("t.ended_at IS NOT NULL")
	rows, err := s.db.Query(ctx, `
WITH calls AS (
	SELECT x.name, x.duration_ms, x.outcome, t.id, t.cost, count(*) OVER (PARTITION BY t.id) AS n
	FROM turn_tools x JOIN turns t ON t.id = x.turn_id
	WHERE `+q.whereSQL()+`
), per_turn AS (
	SELECT name, id, max(cost) AS cost FROM calls GROUP BY name, id
)
SELECT c.name, count(*), count(*) FILTER (WHERE c.outcome = 'error'), count(*) FILTER (WHERE c.outcome = 'denied'),
	coalesce(sum(c.duration_ms), 0)::bigint, coalesce(avg(c.duration_ms), 0)::float8,
	(SELECT count(*) FROM per_turn p WHERE p.name = c.name),
	(SELECT coalesce(sum(p.cost), 0)::float8 FROM per_turn p WHERE p.name = c.name),
	coalesce(sum(c.cost / c.n), 0)::float8
FROM calls c GROUP BY c.name ORDER BY 2 DESC, c.name`, q.args...)
	if err != nil {
		return nil, fmt.Errorf("cost per tool: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ToolCost])
	if err != nil {
		return nil, fmt.Errorf("cost per tool: %w", err)
	}
	if out == nil {
		out = []ToolCost{}
	}
	return out, nil
}

// Trend is the Usage of one UTC day and model.
type Trend struct {
	Day   string `json:"day"` // YYYY-MM-DD
	Model string `json:"model"`
	Usage
}

// Trends sums the ended turns f selects per UTC day (of started_at) and
// model, oldest day first.
func (s *Store) Trends(ctx context.Context, f Filter) ([]Trend, error) {
	q := &query{}
	q.filter(f, "t")
	q.add("t.ended_at IS NOT NULL")
	rows, err := s.db.Query(ctx, `SELECT (t.started_at AT TIME ZONE 'UTC')::date AS day, t.model, `+usageColumns+
		` FROM turns t WHERE `+q.whereSQL()+` GROUP BY 1, 2 ORDER BY 1, 2`, q.args...)
	if err != nil {
		return nil, fmt.Errorf("cost trends: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Trend, error) {
		var tr Trend
		var day time.Time
		err := r.Scan(append([]any{&day, &tr.Model}, usageDest(&tr.Usage)...)...)
		tr.Day = day.Format(time.DateOnly)
		return tr, err
	})
	if err != nil {
		return nil, fmt.Errorf("cost trends: %w", err)
	}
	if out == nil {
		out = []Trend{}
	}
	return out, nil
}
