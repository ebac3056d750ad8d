package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// List limits.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// ListQuery selects a page of sessions, newest first.
type ListQuery struct {
	// Cwd, when set, keeps the sessions of that working directory only.
	Cwd string
	// Archived, when set, keeps the archived (true) or the live (false)
	// sessions only; nil keeps both.
	Archived *bool
	// Limit is the page size: 0 means DefaultLimit; it is capped at MaxLimit.
	Limit int
	// Cursor is a Page.NextCursor of the same query, or "" for the first page.
	Cursor string
}

// Page is one page of List.
type Page struct {
	Sessions []Session
	// NextCursor fetches the next page; "" on the last one.
	NextCursor string
}

// List returns a page of sessions, newest first (created_at, then id).
// A cursor this package did not produce fails with ErrBadCursor.
func (s *Store) List(ctx context.Context, q ListQuery) (Page, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	where := []string{"true"}
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.Cwd != "" {
		where = append(where, "cwd = "+arg(q.Cwd))
	}
	if q.Archived != nil {
		where = append(where, "archived = "+arg(*q.Archived))
	}
	if q.Cursor != "" {
		at, id, err := DecodeCursor(q.Cursor)
		if err != nil {
			return Page{}, err
		}
		where = append(where, "(created_at, id) < ("+arg(at)+", "+arg(id)+")")
	}
	sql := `SELECT ` + sessionColumns + ` FROM sessions WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY created_at DESC, id DESC LIMIT ` + arg(limit+1)
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return Page{}, fmt.Errorf("list sessions: %w", err)
	}
	sessions, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Session, error) { return scanSession(row) })
	if err != nil {
		return Page{}, fmt.Errorf("list sessions: %w", err)
	}
	page := Page{Sessions: sessions}
	if len(sessions) > limit {
		page.Sessions = sessions[:limit]
		last := page.Sessions[limit-1]
		page.NextCursor = EncodeCursor(last.CreatedAt, last.ID)
	}
	return page, nil
}

// EncodeCursor makes the opaque cursor of the position (createdAt, id):
// base64url of "<unix microseconds>:<id>". Clients must not rely on its
// form.
func EncodeCursor(createdAt time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(createdAt.UnixMicro(), 10) + ":" + id))
}

// DecodeCursor reads a cursor of EncodeCursor; anything else fails with
// ErrBadCursor.
func DecodeCursor(cursor string) (time.Time, string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return time.Time{}, "", ErrBadCursor
	}
	micros, id, ok := strings.Cut(string(raw), ":")
	if !ok || id == "" || micros == "" || micros[0] == '+' {
		return time.Time{}, "", ErrBadCursor
	}
	n, err := strconv.ParseInt(micros, 10, 64)
	if err != nil {
		return time.Time{}, "", ErrBadCursor
	}
	return time.UnixMicro(n), id, nil
}
