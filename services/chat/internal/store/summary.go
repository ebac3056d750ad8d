package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Summary is a session with what a session list shows beside it: whether
// it is a favorite and how many prompts wait in its queue.
type Summary struct {
	Session
	IsFavorite bool
	Queued     int
}

// summaryColumns are sessionColumns of the sessions s, then the favorite
// flag and the queue's length.
const summaryColumns = sessionColumns + `,
	EXISTS (SELECT 1 FROM session_favorites f WHERE f.session_id = s.id),
	(SELECT count(*) FROM prompt_queue q WHERE q.session_id = s.id)::int`

func scanSummary(row pgx.Row) (Summary, error) {
	var s Summary
	err := row.Scan(&s.ID, &s.Title, &s.Cwd, &s.Provider, &s.ProviderLocked, &s.PermissionMode, &s.Model,
		&s.Archived, &s.ParentID, &s.ProviderSessionID, &s.CostUSD, &s.Turns, &s.LastLine,
		&s.CreatedAt, &s.UpdatedAt, &s.CLISessionID, &s.IsFavorite, &s.Queued)
	return s, err
}

// RecentSummaries returns the sessions that are not archived, most
// recently updated first, at most limit.
func (s *Store) RecentSummaries(ctx context.Context, limit int) ([]Summary, error) {
	rows, err := s.db.Query(ctx, `SELECT `+summaryColumns+` FROM sessions s
		WHERE NOT s.archived ORDER BY s.updated_at DESC, s.id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("recent sessions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Summary, error) { return scanSummary(row) })
	if err != nil {
		return nil, fmt.Errorf("recent sessions: %w", err)
	}
	return out, nil
}

// Summaries returns the sessions of ids that exist, in no order.
func (s *Store) Summaries(ctx context.Context, ids []string) ([]Summary, error) {
	rows, err := s.db.Query(ctx, `SELECT `+summaryColumns+` FROM sessions s WHERE s.id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("session summaries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Summary, error) { return scanSummary(row) })
	if err != nil {
		return nil, fmt.Errorf("session summaries: %w", err)
	}
	return out, nil
}
