package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Tag limits: 1 to MaxTagLen characters each, MaxTags per turn or session.
const (
	MaxTagLen = 64
	MaxTags   = 100
)

// ErrTooManyTags is returned when adding would pass MaxTags.
var ErrTooManyTags = fmt.Errorf("more than %d tags", MaxTags)

func (s *Store) tags(ctx context.Context, sql string, id string) ([]string, error) {
	rows, err := s.db.Query(ctx, sql, id)
	if err != nil {
		return nil, fmt.Errorf("tags of %s: %w", id, err)
	}
	tags, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("tags of %s: %w", id, err)
	}
	if tags == nil {
		tags = []string{}
	}
	return tags, nil
}

// tagTarget is a turn or a session, as the tag queries address it.
type tagTarget struct {
	kind   string // "turn" or "session", for errors
	exists string // SQL: does $1 exist
	table  string // turn_tags or session_tags
	column string // turn_id or session_id
}

var (
	turnTarget    = tagTarget{"turn", `SELECT EXISTS (SELECT 1 FROM turns WHERE id = $1)`, "turn_tags", "turn_id"}
	sessionTarget = tagTarget{"session", `SELECT EXISTS (SELECT 1 FROM turns WHERE session_id = $1)`, "session_tags", "session_id"}
)

func (s *Store) listTags(ctx context.Context, tt tagTarget, id string) ([]string, error) {
	var ok bool
	if err := s.db.QueryRow(ctx, tt.exists, id).Scan(&ok); err != nil {
		return nil, fmt.Errorf("look up %s %s: %w", tt.kind, id, err)
	}
	if !ok {
		return nil, fmt.Errorf("%s %s: %w", tt.kind, id, ErrNotFound)
	}
	return s.tags(ctx, `SELECT tag FROM `+tt.table+` WHERE `+tt.column+` = $1 ORDER BY tag`, id)
}

func (s *Store) addTags(ctx context.Context, tt tagTarget, id string, tags []string) ([]string, error) {
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		var ok bool
		if err := tx.QueryRow(ctx, tt.exists, id).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s %s: %w", tt.kind, id, ErrNotFound)
		}
		// Serialise concurrent additions to one target, for the count.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, tt.table+":"+id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+tt.table+` (`+tt.column+`, tag) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`, id, tags); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+tt.table+` WHERE `+tt.column+` = $1`, id).Scan(&n); err != nil {
			return err
		}
		if n > MaxTags {
			return ErrTooManyTags
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tag %s %s: %w", tt.kind, id, err)
	}
	return s.tags(ctx, `SELECT tag FROM `+tt.table+` WHERE `+tt.column+` = $1 ORDER BY tag`, id)
}

func (s *Store) removeTag(ctx context.Context, tt tagTarget, id, tag string) ([]string, error) {
	ct, err := s.db.Exec(ctx, `DELETE FROM `+tt.table+` WHERE `+tt.column+` = $1 AND tag = $2`, id, tag)
	if err != nil {
		return nil, fmt.Errorf("untag %s %s: %w", tt.kind, id, err)
	}
	if ct.RowsAffected() == 0 {
		return nil, fmt.Errorf("tag %q on %s %s: %w", tag, tt.kind, id, ErrNotFound)
	}
	return s.tags(ctx, `SELECT tag FROM `+tt.table+` WHERE `+tt.column+` = $1 ORDER BY tag`, id)
}

// TurnTags lists a turn's tags; ErrNotFound when there is no such turn.
func (s *Store) TurnTags(ctx context.Context, id string) ([]string, error) {
	return s.listTags(ctx, turnTarget, id)
}

// AddTurnTags adds tags to a turn (those it has are kept) and returns all
// its tags.
func (s *Store) AddTurnTags(ctx context.Context, id string, tags []string) ([]string, error) {
	return s.addTags(ctx, turnTarget, id, tags)
}

// RemoveTurnTag removes one tag; ErrNotFound when the turn does not have it.
func (s *Store) RemoveTurnTag(ctx context.Context, id, tag string) ([]string, error) {
	return s.removeTag(ctx, turnTarget, id, tag)
}

// SessionTags lists a session's tags; ErrNotFound when no turn of it is
// recorded.
func (s *Store) SessionTags(ctx context.Context, id string) ([]string, error) {
	return s.listTags(ctx, sessionTarget, id)
}

// AddSessionTags adds tags to a session that has recorded turns.
func (s *Store) AddSessionTags(ctx context.Context, id string, tags []string) ([]string, error) {
	return s.addTags(ctx, sessionTarget, id, tags)
}

// RemoveSessionTag removes one tag of a session.
func (s *Store) RemoveSessionTag(ctx context.Context, id, tag string) ([]string, error) {
	return s.removeTag(ctx, sessionTarget, id, tag)
}

// TagCount is a tag in use and how many turns and sessions carry it.
type TagCount struct {
	Tag      string `json:"tag"`
	Turns    int64  `json:"turns"`
	Sessions int64  `json:"sessions"`
}

// AllTags lists every tag in use, by name.
func (s *Store) AllTags(ctx context.Context) ([]TagCount, error) {
	rows, err := s.db.Query(ctx, `
SELECT tag, sum(turns)::bigint, sum(sessions)::bigint FROM (
	SELECT tag, count(*) AS turns, 0 AS sessions FROM turn_tags GROUP BY tag
	UNION ALL
	SELECT tag, 0, count(*) FROM session_tags GROUP BY tag
) x GROUP BY tag ORDER BY tag`)
	if err != nil {
		return nil, fmt.Errorf("list tags: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[TagCount])
	if err != nil {
		return nil, fmt.Errorf("list tags: %w", err)
	}
	if out == nil {
		out = []TagCount{}
	}
	return out, nil
}
