package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svc-code/svc-code/libs/protocol"
)

// MaxQueued is how many prompts a session's queue holds.
const MaxQueued = 100

// ErrQueueFull refuses a prompt when the session's queue holds
// MaxQueued prompts.
var ErrQueueFull = errors.New("the prompt queue is full")

// Queued is a prompt waiting in a session's queue (table prompt_queue).
type Queued struct {
	ID        string
	SessionID string
	Content   string
	Images    []protocol.ImageBlock
	CreatedAt time.Time
}

// JSON is q as the queue frame carries it.
func (q Queued) JSON() protocol.QueuedPrompt {
	return protocol.QueuedPrompt{QueueID: q.ID, Content: q.Content, Images: q.Images, CreatedAt: q.CreatedAt.UTC()}
}

// Enqueue adds a prompt at the end of the session's queue; it waits for
// the disk, as a prompt's append does. ErrNotFound for an unknown session,
// ErrQueueFull when it holds MaxQueued prompts.
func (s *Store) Enqueue(ctx context.Context, sessionID, content string, images []protocol.ImageBlock) (Queued, error) {
	return s.EnqueueAs(ctx, NewID(), sessionID, content, images)
}

// EnqueueAs is Enqueue with the prompt's queue id chosen by the caller,
// which makes it safe to call again after a failure that does not say
// whether it committed (Unavailable): a prompt with that id in the queue
// already is returned as it is.
func (s *Store) EnqueueAs(ctx context.Context, id, sessionID, content string, images []protocol.ImageBlock) (Queued, error) {
	var imgs []byte
	if len(images) > 0 {
		var err error
		if imgs, err = json.Marshal(images); err != nil {
			return Queued{}, fmt.Errorf("enqueue a prompt of session %s: %w", sessionID, err)
		}
	}
	q := Queued{ID: id, SessionID: sessionID, Content: content, Images: images}
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = on`); err != nil {
			return err
		}
		// The session's row, locked: one writer at a time, so the cap
		// holds exactly (and a deleted session is noticed).
		if err := tx.QueryRow(ctx, `SELECT id FROM sessions WHERE id = $1 FOR UPDATE`, sessionID).Scan(new(string)); err != nil {
			return err
		}
		// Queued by an earlier try whose answer was lost.
		err := tx.QueryRow(ctx, `SELECT created_at FROM prompt_queue WHERE id = $1 AND session_id = $2`, id, sessionID).Scan(&q.CreatedAt)
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM prompt_queue WHERE session_id = $1`, sessionID).Scan(&n); err != nil {
			return err
		}
		if n >= MaxQueued {
			return ErrQueueFull
		}
		return tx.QueryRow(ctx, `INSERT INTO prompt_queue (id, session_id, position, content, images)
			VALUES ($1, $2, nextval('prompt_queue_position'), $3, $4) RETURNING created_at`,
			q.ID, sessionID, content, imgs).Scan(&q.CreatedAt)
	})
	if errors.Is(err, ErrQueueFull) {
		return Queued{}, fmt.Errorf("enqueue a prompt of session %s: %w", sessionID, err)
	}
	if err != nil {
		return Queued{}, notFound(err, "enqueue a prompt of session", sessionID)
	}
	return q, nil
}

const queueColumns = `id, session_id, content, images, created_at`

func scanQueued(row pgx.Row) (Queued, error) {
	var q Queued
	var imgs []byte
	if err := row.Scan(&q.ID, &q.SessionID, &q.Content, &imgs, &q.CreatedAt); err != nil {
		return Queued{}, err
	}
	if len(imgs) > 0 {
		if err := json.Unmarshal(imgs, &q.Images); err != nil {
			return Queued{}, fmt.Errorf("queued prompt %s: images: %w", q.ID, err)
		}
	}
	return q, nil
}

// Queue returns the session's queue, first to go first. An unknown
// session has an empty queue.
func (s *Store) Queue(ctx context.Context, sessionID string) ([]Queued, error) {
	rows, err := s.db.Query(ctx, `SELECT `+queueColumns+` FROM prompt_queue WHERE session_id = $1
		ORDER BY position, created_at`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("queue of session %s: %w", sessionID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Queued, error) { return scanQueued(row) })
	if err != nil {
		return nil, fmt.Errorf("queue of session %s: %w", sessionID, err)
	}
	return out, nil
}

// CancelQueued removes a prompt from the session's queue and reports
// whether it was there.
func (s *Store) CancelQueued(ctx context.Context, sessionID, queueID string) (bool, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM prompt_queue WHERE session_id = $1 AND id = $2`, sessionID, queueID)
	if err != nil {
		return false, fmt.Errorf("cancel queued prompt %s of session %s: %w", queueID, sessionID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// FrontQueued moves a prompt to the front of the session's queue and
// reports whether it was there.
func (s *Store) FrontQueued(ctx context.Context, sessionID, queueID string) (bool, error) {
	tag, err := s.db.Exec(ctx, `UPDATE prompt_queue SET position = (
			SELECT min(position) - 1 FROM prompt_queue WHERE session_id = $1)
		WHERE session_id = $1 AND id = $2`, sessionID, queueID)
	if err != nil {
		return false, fmt.Errorf("move queued prompt %s of session %s: %w", queueID, sessionID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// DequeueAppend takes the first prompt of the session's queue and appends
// it to the log as a user prompt ({role, content, images?}), in one
// transaction that waits for the disk: the prompt is in the queue or in
// the log, never both, never neither. lockProvider, after and key are as
// in Append. ok is false when the queue is empty. With a key, it is safe
// to call again after a failure that does not say whether it committed
// (Unavailable): when the prompt stored under key is in the log, it is
// returned (q with its content and images) and the queue is not touched.
func (s *Store) DequeueAppend(ctx context.Context, sessionID string, lockProvider bool, after int64, key string) (q Queued, m Message, ok bool, err error) {
	err = pgx.BeginFunc(ctx, s.appends, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = on`); err != nil {
			return err
		}
		if key != "" {
			m = Message{SessionID: sessionID, Kind: KindUserPrompt}
			var payload []byte
			err := tx.QueryRow(ctx, `SELECT line, payload, is_favorite, created_at FROM session_messages
				WHERE session_id = $1 AND append_key = $2`, sessionID, key).Scan(&m.Line, &payload, &m.IsFavorite, &m.CreatedAt)
			switch {
			case err == nil:
				m.Payload = payload
				var p protocol.StoredPrompt
				if err := json.Unmarshal(payload, &p); err != nil {
					return err
				}
				q = Queued{SessionID: sessionID, Content: p.Content, Images: p.Images}
				ok = true
				return nil
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			}
		}
		q, err = scanQueued(tx.QueryRow(ctx, `DELETE FROM prompt_queue WHERE id = (
				SELECT id FROM prompt_queue WHERE session_id = $1 ORDER BY position, created_at LIMIT 1 FOR UPDATE)
			RETURNING `+queueColumns, sessionID))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		payload, err := json.Marshal(protocol.StoredPrompt{Role: "user", Content: q.Content, Images: q.Images})
		if err != nil {
			return err
		}
		m = Message{SessionID: sessionID, Kind: KindUserPrompt, Payload: payload}
		var k any
		if key != "" {
			k = key
		}
		rows, err := tx.Query(ctx, appendSQL, sessionID, KindUserPrompt, string(payload), lockProvider, after, k)
		if err != nil {
			return err
		}
		if err := scanAppended(rows, &m); err != nil {
			return err
		}
		ok = true
		return nil
	})
	if err != nil {
		return Queued{}, Message{}, false, notFound(err, "dequeue a prompt of session", sessionID)
	}
	return q, m, ok, nil
}
