package store

import (
	"context"
	"fmt"
)

// Thread is a session of a conversation family, with where it stands
// relative to the session asked about.
type Thread struct {
	Session
	// Depth is the generation relative to the session asked about:
	// negative for its ancestors, 0 for itself, positive for the sessions
	// forked or archived from it (and from those).
	Depth int
}

// maxThreadDepth bounds the walk in both directions (a defence against a
// cycle, which parent links cannot form through this package).
const maxThreadDepth = 100

// Threads returns the family of session id: its ancestors through
// parent_id, itself, and every session descended from it (forks and the
// archives of clear_session), oldest first.
func (s *Store) Threads(ctx context.Context, id string) ([]Thread, error) {
	rows, err := s.db.Query(ctx, `
		WITH RECURSIVE up(id, parent_id, depth) AS (
			SELECT id, parent_id, 0 FROM sessions WHERE id = $1
			UNION ALL
			SELECT p.id, p.parent_id, up.depth - 1 FROM sessions p JOIN up ON p.id = up.parent_id
			WHERE up.depth > -$2::int
		), down(id, depth) AS (
			SELECT id, 0 FROM sessions WHERE id = $1
			UNION ALL
			SELECT c.id, down.depth + 1 FROM sessions c JOIN down ON c.parent_id = down.id
			WHERE down.depth < $2::int
		), family(id, depth) AS (
			SELECT id, depth FROM up UNION SELECT id, depth FROM down
		)
		SELECT `+sessionColumns+`, family.depth
		FROM family JOIN sessions USING (id)
		ORDER BY created_at, id`, id, maxThreadDepth)
	if err != nil {
		return nil, fmt.Errorf("threads of %s: %w", id, err)
	}
	defer rows.Close()
	var out []Thread
	for rows.Next() {
		var t Thread
		if err := rows.Scan(&t.ID, &t.Title, &t.Cwd, &t.Provider, &t.ProviderLocked, &t.PermissionMode, &t.Model,
			&t.Archived, &t.ParentID, &t.ProviderSessionID, &t.CostUSD, &t.Turns, &t.LastLine,
			&t.CreatedAt, &t.UpdatedAt, &t.CLISessionID, &t.Depth); err != nil {
			return nil, fmt.Errorf("threads of %s: %w", id, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("threads of %s: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("threads of %s: %w", id, ErrNotFound)
	}
	return out, nil
}
