package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// OpenTurn is a turn running now (the open_turns table): which instance
// runs it and where, so that a turn whose instance died is closed by the
// next one to look (internal/room recover.go).
type OpenTurn struct {
	TurnID     string
	SessionID  string
	PromptLine int64
	Instance   string
	// Host, PID and PIDStart say where the instance runs: a host
	// identity, its process id and that process's start time.
	Host      string
	PID       int
	PIDStart  int64
	StartedAt time.Time
	// Started holds the turn's turn_started fields.
	Started json.RawMessage
}

// OpenTurn records t as running. Recording it again changes nothing.
//
// OpenTurn and CloseTurn run at every turn's start and end, in the way of
// the turn's first and next frames: they are committed without waiting for
// the disk (as agent messages are, see AppendMessages). A crash of
// PostgreSQL can lose the last moment's rows: a turn then stays open
// (closed as interrupted when its instance is gone) or is not closed when
// its chat dies too.
func (s *Store) OpenTurn(ctx context.Context, t OpenTurn) error {
	_, err := s.execLazy(ctx, `INSERT INTO open_turns
		(turn_id, session_id, prompt_line, instance, host, pid, pid_start, started_at, started)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (turn_id) DO NOTHING`,
		t.TurnID, t.SessionID, t.PromptLine, t.Instance, t.Host, t.PID, t.PIDStart, t.StartedAt, string(t.Started))
	if err != nil {
		return fmt.Errorf("record open turn %s: %w", t.TurnID, err)
	}
	return nil
}

// CloseTurn forgets the open turn turnID of instance, and reports whether
// it was there: false when another instance closed it already (it took the
// instance for dead), or it was never recorded.
func (s *Store) CloseTurn(ctx context.Context, turnID, instance string) (bool, error) {
	n, err := s.execLazy(ctx, `DELETE FROM open_turns WHERE turn_id = $1 AND instance = $2`, turnID, instance)
	if err != nil {
		return false, fmt.Errorf("close open turn %s: %w", turnID, err)
	}
	return n == 1, nil
}

// execLazy runs one statement, committed without waiting for the disk,
// in one round trip, and returns the rows it affected.
func (s *Store) execLazy(ctx context.Context, sql string, args ...any) (int64, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	b.Queue(sql, args...)
	br := s.db.SendBatch(ctx, b)
	_, err := br.Exec()
	var n int64
	if err == nil {
		var tag pgconn.CommandTag
		tag, err = br.Exec()
		n = tag.RowsAffected()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// OpenTurns lists the open turns of the instances other than instance,
// oldest first.
func (s *Store) OpenTurns(ctx context.Context, instance string) ([]OpenTurn, error) {
	rows, err := s.db.Query(ctx, `SELECT turn_id, session_id, prompt_line, instance, host, pid, pid_start,
		started_at, started FROM open_turns WHERE instance <> $1 ORDER BY started_at, turn_id`, instance)
	if err != nil {
		return nil, fmt.Errorf("read open turns: %w", err)
	}
	ts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OpenTurn, error) {
		var t OpenTurn
		var started []byte
		err := row.Scan(&t.TurnID, &t.SessionID, &t.PromptLine, &t.Instance, &t.Host, &t.PID, &t.PIDStart,
			&t.StartedAt, &started)
		t.Started = started
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("read open turns: %w", err)
	}
	return ts, nil
}

// interruptNoticeSQL appends the notice $2 at the next line of session
// $1's log, as AppendMessage does a notice (its own statement: the log's
// appends carry more than a notice needs).
const interruptNoticeSQL = `WITH s AS (
		UPDATE sessions SET next_line = next_line + 1, updated_at = now() WHERE id = $1 RETURNING id, next_line
	)
	INSERT INTO session_messages (session_id, line, kind, payload)
	SELECT s.id, s.next_line, 'notice', $2 FROM s
	RETURNING line, created_at`

// InterruptTurn closes the open turn t of a dead instance: in one
// transaction, which waits for the disk, it deletes t's row and appends
// notice (a KindNotice payload) to its session's log. ok is false, and
// nothing is changed, when the row is gone (closed by its own instance, or
// by another that got there first): a turn is closed once.
func (s *Store) InterruptTurn(ctx context.Context, t OpenTurn, notice json.RawMessage) (msg Message, ok bool, err error) {
	err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM open_turns WHERE turn_id = $1 AND instance = $2`, t.TurnID, t.Instance)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		msg = Message{SessionID: t.SessionID, Kind: KindNotice, Payload: notice}
		err = tx.QueryRow(ctx, interruptNoticeSQL, t.SessionID, string(notice)).Scan(&msg.Line, &msg.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // the session is gone: the row went with it
		}
		ok = err == nil
		return err
	})
	if err != nil {
		return Message{}, false, fmt.Errorf("interrupt turn %s: %w", t.TurnID, err)
	}
	return msg, ok, nil
}
