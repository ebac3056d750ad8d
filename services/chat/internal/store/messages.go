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
	// Gap, set by an append only, is the gap notice stored with the
	// message, on the line before it: lines the log lost (see
	// AppendMessages) are a hole in the log, and the notice says so.
	Gap *Message
}

// SID is the stable id clients de-duplicate by: "{session_id}:{line}".
func (m Message) SID() string { return m.SessionID + ":" + strconv.FormatInt(m.Line, 10) }

// AppendMessage stores a message at the next line of the session's log
// and returns it. payload must be a JSON value (a JSON object, in
// practice). The line is allocated and the message inserted in one
// statement: concurrent appends get unique, gapless lines (it takes no
// Append.After nor Append.Key: the room's appends go through
// AppendMessages). A user prompt whose content is the text of a favorite
// prompt is stored as a favorite too (IsFavorite), so re-sending a
// favorite keeps it one.
func (s *Store) AppendMessage(ctx context.Context, id, kind string, payload json.RawMessage) (Message, error) {
	m := Message{SessionID: id, Kind: kind, Payload: payload}
	rows, err := s.appends.Query(ctx, appendSQL, id, kind, string(payload), false, 0, nil)
	if err == nil {
		err = scanAppended(rows, &m)
	}
	if err != nil {
		return Message{}, notFound(err, "append message to session", id)
	}
	return m, nil
}

// appendSQL is AppendMessage's statement (also queued by AppendMessages):
// $1 session id, $2 kind, $3 payload, $4 whether to lock the session's
// provider too, $5 a line the new one must come after (Append.After), $6
// the append's key (Append.Key) or NULL. It returns the rows of
// scanAppended: line, is_favorite, created_at, and the payload of a gap
// notice (NULL for the message itself).
//
// When a message with the key is in the log already (an earlier try was
// committed, its answer lost), the statement changes nothing and returns
// it. When the session's last line is before $5 (lines whose frames went
// out were lost in a crash of PostgreSQL: see Append.After), a gap notice
// takes the line after $5 and the message the next one.
var appendSQL = `WITH prior AS (
		SELECT line, is_favorite, created_at FROM session_messages
		WHERE $6::uuid IS NOT NULL AND session_id = $1 AND append_key = $6::uuid
	), cur AS (
		SELECT next_line FROM sessions WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM prior) FOR UPDATE
	), s AS (
		UPDATE sessions SET next_line = GREATEST(sessions.next_line, $5::bigint)
				+ CASE WHEN cur.next_line < $5::bigint THEN 2 ELSE 1 END,
			updated_at = now(), provider_locked = sessions.provider_locked OR $4::boolean
		FROM cur WHERE sessions.id = $1 RETURNING sessions.id, sessions.next_line, cur.next_line AS old
	), gap AS (
		INSERT INTO session_messages (session_id, line, kind, payload)
		SELECT s.id, $5::bigint + 1, 'notice', ` + gapNotice("s.old + 1", "$5::bigint") + `
		FROM s WHERE s.old < $5::bigint
		RETURNING line, created_at, payload
	), m AS (
		INSERT INTO session_messages (session_id, line, kind, payload, is_favorite, append_key)
		SELECT s.id, s.next_line, $2, $3, CASE WHEN $2 = 'user_prompt' THEN EXISTS (
				SELECT 1 FROM session_messages f WHERE f.is_favorite AND f.kind = 'user_prompt'
					AND f.payload ->> 'content' = $3::jsonb ->> 'content')
			ELSE false END, $6::uuid
		FROM s
		RETURNING line, is_favorite, created_at
	)
	SELECT line, is_favorite, created_at, NULL::jsonb FROM prior
	UNION ALL SELECT line, false, created_at, payload FROM gap
	UNION ALL SELECT line, is_favorite, created_at, NULL FROM m
	ORDER BY 1`

// gapNotice is the SQL expression of a gap notice's payload
// (protocol.StoredNotice with a Gap) for the lines from to to, two SQL
// expressions.
func gapNotice(from, to string) string {
	return `jsonb_build_object('role', 'notice', 'level', 'warning',
		'content', CASE WHEN ` + from + ` = ` + to + `
			THEN format('line %s was lost: the database crashed before it reached its disk', ` + to + `)
			ELSE format('lines %s to %s were lost: the database crashed before they reached its disk', ` + from + `, ` + to + `) END,
		'gap', jsonb_build_object('from_line', ` + from + `, 'to_line', ` + to + `))`
}

// scanAppended reads appendSQL's rows into m (its session, kind and
// payload set): its line, favorite flag and time, and its gap notice.
// pgx.ErrNoRows when the session does not exist.
func scanAppended(rows pgx.Rows, m *Message) error {
	defer rows.Close()
	found := false
	for rows.Next() {
		var line int64
		var fav bool
		var at time.Time
		var gap []byte
		if err := rows.Scan(&line, &fav, &at, &gap); err != nil {
			return err
		}
		if gap != nil {
			m.Gap = &Message{SessionID: m.SessionID, Line: line, Kind: KindNotice, Payload: gap, CreatedAt: at}
			continue
		}
		m.Line, m.IsFavorite, m.CreatedAt, found = line, fav, at, true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if !found {
		return pgx.ErrNoRows
	}
	return nil
}

// MaxLostLines bounds SkipLostLines: a crash of PostgreSQL loses at most
// about a second of a session's agent messages, far fewer lines than this.
const MaxLostLines = 10000

// SkipLostLines makes the session's next message get a line after line,
// and reports whether it did: when line is past the log's end by at most
// MaxLostLines and PostgreSQL started after the session's last write. A
// client that reconnects with such an after_line saw lines the log no
// longer holds (agent messages committed without waiting for the disk,
// lost in a crash of PostgreSQL and chat together): clients de-duplicate
// by line, so the next messages must not take those lines. A gap notice
// naming the lost lines takes the line after line, so that the client
// (and any reader of the log) sees the hole. Without a restart since, no
// line can have been lost, and a client's after_line past the end (a bug)
// moves nothing. It waits for the disk.
func (s *Store) SkipLostLines(ctx context.Context, id string, line int64) (bool, error) {
	var skipped bool
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = on`); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `WITH cur AS (
				SELECT next_line FROM sessions WHERE id = $1 AND next_line < $2::bigint
					AND $2::bigint - next_line <= $3 AND updated_at < pg_postmaster_start_time() FOR UPDATE
			), s AS (
				UPDATE sessions SET next_line = $2::bigint + 1, updated_at = now() FROM cur
				WHERE sessions.id = $1 RETURNING sessions.id, cur.next_line AS old
			)
			INSERT INTO session_messages (session_id, line, kind, payload)
			SELECT s.id, $2::bigint + 1, 'notice', `+gapNotice("s.old + 1", "$2::bigint")+` FROM s`, id, line, MaxLostLines)
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
