package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// List limits.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Turn is a row of turns, with its tool calls and tags when read alone.
type Turn struct {
	ID                  string     `json:"id"`
	SessionID           string     `json:"session_id"`
	TurnNumber          *int       `json:"turn_number"`
	StartedAt           time.Time  `json:"started_at"`
	EndedAt             *time.Time `json:"ended_at"`
	DurationMS          *int64     `json:"duration_ms"`
	UserPrompt          string     `json:"user_prompt"`
	Model               string     `json:"model"`
	Provider            string     `json:"provider"`
	Cost                float64    `json:"cost"`
	InputTokens         int64      `json:"input_tokens"`
	OutputTokens        int64      `json:"output_tokens"`
	CacheReadTokens     int64      `json:"cache_read_tokens"`
	CacheCreationTokens int64      `json:"cache_creation_tokens"`
	ToolCalls           int        `json:"tool_calls"`
	IsError             bool       `json:"is_error"`
	StopReason          string     `json:"stop_reason"`
	Project             string     `json:"project"`
	Cwd                 string     `json:"cwd"`
	// Tools, Tags and SessionTags are filled by GetTurn only.
	Tools       []Tool   `json:"tools,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	SessionTags []string `json:"session_tags,omitempty"`
}

const turnColumns = `id, session_id, turn_number, started_at, ended_at, duration_ms, user_prompt, model, provider,
	cost::float8, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, tool_calls, is_error,
	stop_reason, project, cwd`

func scanTurn(row pgx.Row) (Turn, error) {
	var t Turn
	err := row.Scan(&t.ID, &t.SessionID, &t.TurnNumber, &t.StartedAt, &t.EndedAt, &t.DurationMS, &t.UserPrompt,
		&t.Model, &t.Provider, &t.Cost, &t.InputTokens, &t.OutputTokens, &t.CacheReadTokens,
		&t.CacheCreationTokens, &t.ToolCalls, &t.IsError, &t.StopReason, &t.Project, &t.Cwd)
	t.StartedAt = t.StartedAt.UTC()
	if t.EndedAt != nil {
		e := t.EndedAt.UTC()
		t.EndedAt = &e
	}
	return t, err
}

// Filter selects turns; zero fields select everything.
type Filter struct {
	Session, Project, Model string
	// Tag keeps the turns tagged so, or whose session is.
	Tag string
	// Since (inclusive) and Until (exclusive) bound started_at.
	Since, Until time.Time
}

// query builds a WHERE clause and its arguments.
type query struct {
	where []string
	args  []any
}

func (q *query) arg(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

func (q *query) add(cond string) { q.where = append(q.where, cond) }

// filter adds f's conditions on the turns alias t.
func (q *query) filter(f Filter, t string) {
	if f.Session != "" {
		q.add(t + ".session_id = " + q.arg(f.Session))
	}
	if f.Project != "" {
		q.add(t + ".project = " + q.arg(f.Project))
	}
	if f.Model != "" {
		q.add(t + ".model = " + q.arg(f.Model))
	}
	if f.Tag != "" {
		a := q.arg(f.Tag)
		q.add(`(EXISTS (SELECT 1 FROM turn_tags g WHERE g.turn_id = ` + t + `.id AND g.tag = ` + a + `)
			OR EXISTS (SELECT 1 FROM session_tags g WHERE g.session_id = ` + t + `.session_id AND g.tag = ` + a + `))`)
	}
	if !f.Since.IsZero() {
		q.add(t + ".started_at >= " + q.arg(f.Since))
	}
	if !f.Until.IsZero() {
		q.add(t + ".started_at < " + q.arg(f.Until))
	}
}

func (q *query) whereSQL() string {
	if len(q.where) == 0 {
		return "true"
	}
	return strings.Join(q.where, " AND ")
}

// clampLimit maps 0 to DefaultLimit and caps at MaxLimit.
func clampLimit(n int) int {
	if n <= 0 {
		return DefaultLimit
	}
	return min(n, MaxLimit)
}

// encodeCursor and decodeCursor: the position after (started_at, id).
func encodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMicro(), 10) + "|" + id))
}

func decodeCursor(s string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return time.Time{}, "", ErrBadCursor
	}
	micros, id, ok := strings.Cut(string(b), "|")
	n, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil || id == "" || !utf8.ValidString(id) || strings.IndexByte(id, 0) >= 0 ||
		n < minCursorMicros || n > maxCursorMicros {
		return time.Time{}, "", ErrBadCursor
	}
	return time.UnixMicro(n).UTC(), id, nil
}

// A cursor's time is within years -4000 to 9999, as every started_at is
// (events carry RFC 3339 times): out of that, pgx's encoding overflows or
// PostgreSQL refuses the time.
var (
	minCursorMicros = time.Date(-4000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	maxCursorMicros = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()
)

// ListTurns returns a page of the turns f selects, newest first
// (started_at, then id), and the cursor of the next page ("" on the last).
func (s *Store) ListTurns(ctx context.Context, f Filter, limit int, cursor string) ([]Turn, string, error) {
	limit = clampLimit(limit)
	q := &query{}
	q.filter(f, "t")
	if cursor != "" {
		at, id, err := decodeCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		q.add("(t.started_at, t.id) < (" + q.arg(at) + ", " + q.arg(id) + ")")
	}
	sql := `SELECT ` + prefixed(turnColumns, "t.") + ` FROM turns t WHERE ` + q.whereSQL() +
		` ORDER BY t.started_at DESC, t.id DESC LIMIT ` + q.arg(limit+1)
	rows, err := s.db.Query(ctx, sql, q.args...)
	if err != nil {
		return nil, "", fmt.Errorf("list turns: %w", err)
	}
	turns, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Turn, error) { return scanTurn(r) })
	if err != nil {
		return nil, "", fmt.Errorf("list turns: %w", err)
	}
	next := ""
	if len(turns) > limit {
		turns = turns[:limit]
		last := turns[limit-1]
		next = encodeCursor(last.StartedAt, last.ID)
	}
	return turns, next, nil
}

// prefixed qualifies each comma-separated column of cols with p.
func prefixed(cols, p string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// GetTurn returns one turn with its tool calls, its tags and its session's
// tags.
func (s *Store) GetTurn(ctx context.Context, id string) (Turn, error) {
	t, err := scanTurn(s.db.QueryRow(ctx, `SELECT `+turnColumns+` FROM turns WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Turn{}, fmt.Errorf("turn %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Turn{}, fmt.Errorf("get turn %s: %w", id, err)
	}
	rows, err := s.db.Query(ctx, `SELECT name, duration_ms, outcome FROM turn_tools WHERE turn_id = $1 ORDER BY seq`, id)
	if err != nil {
		return Turn{}, fmt.Errorf("tools of turn %s: %w", id, err)
	}
	t.Tools, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Tool, error) {
		var tool Tool
		err := r.Scan(&tool.Name, &tool.DurationMS, &tool.Outcome)
		return tool, err
	})
	if err != nil {
		return Turn{}, fmt.Errorf("tools of turn %s: %w", id, err)
	}
	if t.Tags, err = s.tags(ctx, `SELECT tag FROM turn_tags WHERE turn_id = $1 ORDER BY tag`, id); err != nil {
		return Turn{}, err
	}
	if t.SessionTags, err = s.tags(ctx, `SELECT tag FROM session_tags WHERE session_id = $1 ORDER BY tag`, t.SessionID); err != nil {
		return Turn{}, err
	}
	return t, nil
}
