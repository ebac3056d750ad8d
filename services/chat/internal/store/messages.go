package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Kinds of message in a session's log.
const (
	KindUserPrompt = "user_prompt" // a prompt a user sent
	KindAgent      = "agent"       // an agent message, its JSON unchanged
	KindNotice     = "notice"      // a server notice shown in the conversation
)

// Message is one line of a session's log.
type Message struct {
	SessionID  string
	Line       int64
	Kind       string
	Payload    json.RawMessage
	IsFavorite bool
	CreatedAt  time.Time
}

// SID is the stable id clients de-duplicate by: "{session_id}:{line}".
func (m Message) SID() string { return m.SessionID + ":" + strconv.FormatInt(m.Line, 10) }

// AppendMessage stores a message at the next line of the session's log
// and returns it. payload must be a JSON value (a JSON object, in
// practice). The line is allocated and the message inserted in one
// statement: concurrent appends get unique, gapless lines (it takes no
// Append.After: the room's appends go through AppendMessages). A user prompt
// whose content is the text of a favorite prompt is stored as a favorite
// too (IsFavorite), so re-sending a favorite keeps it one.
func (s *Store) AppendMessage(ctx context.Context, id, kind string, payload json.RawMessage) (Message, error) {
	m := Message{SessionID: id, Kind: kind, Payload: payload}
	err := s.appends.QueryRow(ctx, appendSQL, id, kind, string(payload), false, 0).Scan(&m.Line, &m.IsFavorite, &m.CreatedAt)
	if err != nil {
		return Message{}, notFound(err, "append message to session", id)
	}
	return m, nil
}

// appendSQL is AppendMessage's statement (also queued by AppendMessages):
// $1 session id, $2 kind, $3 payload, $4 whether to lock the session's
// provider too, $5 a line the new one must come after (Append.After); it
// returns line, is_favorite, created_at.
const appendSQL = `WITH s AS (
		UPDATE sessions SET next_line = GREATEST(next_line, $5::bigint) + 1, updated_at = now(),
			provider_locked = provider_locked OR $4::boolean
		WHERE id = $1 RETURNING id, next_line
	)
	INSERT INTO session_messages (session_id, line, kind, payload, is_favorite)
	SELECT s.id, s.next_line, $2, $3, CASE WHEN $2 = 'user_prompt' THEN EXISTS (
			SELECT 1 FROM session_messages f WHERE f.is_favorite AND f.kind = 'user_prompt'
				AND f.payload ->> 'content' = $3::jsonb ->> 'content')
		ELSE false END
	FROM s
	RETURNING line, is_favorite, created_at`

// MaxLostLines bounds SkipLostLines: a crash of PostgreSQL loses at most
// about a second of a session's agent messages, far fewer lines than this.
const MaxLostLines = 10000

// SkipLostLines makes the session's next message get a line after line,
// and reports whether it did: when line is past the log's end by at most
// MaxLostLines and PostgreSQL started after the session's last write. A
// client that reconnects with such an after_line saw lines the log no
// longer holds (agent messages committed without waiting for the disk,
// lost in a crash of PostgreSQL and chat together): clients de-duplicate
// by line, so the next messages must not take those lines. Without a
// restart since, no line can have been lost, and a client's after_line
// past the end (a bug) moves nothing. It waits for the disk.
func (s *Store) SkipLostLines(ctx context.Context, id string, line int64) (bool, error) {
	var skipped bool
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = on`); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE sessions SET next_line = $2, updated_at = now()
			WHERE id = $1 AND next_line < $2 AND $2 - next_line <= $3
				AND updated_at < pg_postmaster_start_time()`, id, line, MaxLostLines)
		skipped = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("skip the lost lines of session %s: %w", id, err)
	}
	return skipped, nil
}

// Messages returns up to limit messages of the session's log whose line is
// after since, in line order. It does not check that the session exists:
// an unknown one has no messages.
func (s *Store) Messages(ctx context.Context, id string, since int64, limit int) ([]Message, error) {
	rows, err := s.db.Query(ctx, `SELECT session_id, line, kind, payload, is_favorite, created_at
		FROM session_messages WHERE session_id = $1 AND line > $2 ORDER BY line LIMIT $3`, id, since, limit)
	if err != nil {
		return nil, fmt.Errorf("read messages of session %s: %w", id, err)
	}
	msgs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Message, error) {
		var m Message
		var payload []byte
		err := row.Scan(&m.SessionID, &m.Line, &m.Kind, &payload, &m.IsFavorite, &m.CreatedAt)
		m.Payload = payload
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("read messages of session %s: %w", id, err)
	}
	return msgs, nil
}
