package journal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TurnRow is one row of shadow_turns.
type TurnRow struct {
	TurnID       string
	SessionID    string
	Project      string
	Cwd          string
	TurnNumber   int
	BaseCommit   string
	EndCommit    string
	ChangedFiles int
	Started      bool
	Ended        bool
}

// Turns is the shadow_turns table: which turns the journal has handled.
type Turns struct {
	pool *pgxpool.Pool
}

// NewTurns returns the table over pool.
func NewTurns(pool *pgxpool.Pool) *Turns { return &Turns{pool: pool} }

const turnColumns = `turn_id, session_id, project, cwd, turn_number, COALESCE(base_commit, ''),
	COALESCE(end_commit, ''), COALESCE(changed_files, 0), started_at IS NOT NULL, ended_at IS NOT NULL`

func scanTurn(row pgx.Row) (TurnRow, error) {
	var t TurnRow
	err := row.Scan(&t.TurnID, &t.SessionID, &t.Project, &t.Cwd, &t.TurnNumber, &t.BaseCommit,
		&t.EndCommit, &t.ChangedFiles, &t.Started, &t.Ended)
	return t, err
}

// Get answers a turn's row; ok is false when there is none.
func (s *Turns) Get(ctx context.Context, turnID string) (TurnRow, bool, error) {
	t, err := scanTurn(s.pool.QueryRow(ctx, `SELECT `+turnColumns+` FROM shadow_turns WHERE turn_id = $1`, turnID))
	if errors.Is(err, pgx.ErrNoRows) {
		return TurnRow{}, false, nil
	}
	if err != nil {
		return TurnRow{}, false, fmt.Errorf("read shadow turn %s: %w", turnID, err)
	}
	return t, true, nil
}

// NextNumber answers the number the session's next turn gets when the
// event does not carry one: one more than the highest recorded.
func (s *Turns) NextNumber(ctx context.Context, session string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx,
		`SELECT COALESCE(MAX(turn_number), 0) + 1 FROM shadow_turns WHERE session_id = $1`, session).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("next turn number of %s: %w", session, err)
	}
	return n, nil
}

// MarkStarted records that a turn's start was journaled.
func (s *Turns) MarkStarted(ctx context.Context, t TurnRow, at time.Time) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO shadow_turns (turn_id, session_id, project, cwd, turn_number, base_commit, started_at)
		VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), $7)
		ON CONFLICT (turn_id) DO UPDATE SET base_commit = EXCLUDED.base_commit, started_at = EXCLUDED.started_at`,
		t.TurnID, t.SessionID, t.Project, t.Cwd, t.TurnNumber, t.BaseCommit, at)
	if err != nil {
		return fmt.Errorf("record turn start %s: %w", t.TurnID, err)
	}
	return nil
}

// MarkEnded records that a turn's end was journaled.
func (s *Turns) MarkEnded(ctx context.Context, t TurnRow, at time.Time) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO shadow_turns (turn_id, session_id, project, cwd, turn_number, end_commit, changed_files, ended_at)
		VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), $7, $8)
		ON CONFLICT (turn_id) DO UPDATE SET end_commit = EXCLUDED.end_commit, turn_number = EXCLUDED.turn_number,
			changed_files = EXCLUDED.changed_files, ended_at = EXCLUDED.ended_at`,
		t.TurnID, t.SessionID, t.Project, t.Cwd, t.TurnNumber, t.EndCommit, t.ChangedFiles, at)
	if err != nil {
		return fmt.Errorf("record turn end %s: %w", t.TurnID, err)
	}
	return nil
}

// Session answers a session's turns in order.
func (s *Turns) Session(ctx context.Context, session string) ([]TurnRow, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT `+turnColumns+` FROM shadow_turns WHERE session_id = $1 ORDER BY turn_number, turn_id`, session)
	if err != nil {
		return nil, fmt.Errorf("read turns of %s: %w", session, err)
	}
	defer rows.Close()
	var out []TurnRow
	for rows.Next() {
		t, err := scanTurn(rows)
		if err != nil {
			return nil, fmt.Errorf("read turns of %s: %w", session, err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
