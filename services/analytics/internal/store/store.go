// Package store is analytics' PostgreSQL: it records turns from chat's turn
// events (idempotently, by turn id), keeps the tags on turns and sessions,
// and answers the read queries of the routes (turn lists, costs, prompts,
// stats). It works on the owner role's pool; the read-only SQL endpoint has
// a pool of its own. Grant gives the read-only role SELECT on exactly the
// tables and views of internal/schema.
package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/services/analytics/internal/schema"
)

// Errors the routes map to the error envelope.
var (
	// ErrNotFound: no such turn, session or tag.
	ErrNotFound = errors.New("not found")
	// ErrBadCursor: a cursor this package did not produce.
	ErrBadCursor = errors.New("malformed cursor")
)

// Store is analytics' PostgreSQL.
type Store struct {
	db *pgxpool.Pool
}

// New returns a Store on db, whose schema the migrations have made.
func New(db *pgxpool.Pool) *Store { return &Store{db: db} }

// Grant gives role SELECT on exactly schema.Tables, in the schema the
// migrations used (the first of the search_path), and USAGE on that schema.
// role "" or a role that does not exist is skipped (reported false).
func Grant(ctx context.Context, db *pgxpool.Pool, role string) (bool, error) {
	if role == "" {
		return false, nil
	}
	var exists bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, role).Scan(&exists); err != nil {
		return false, fmt.Errorf("look up role %s: %w", role, err)
	}
	if !exists {
		return false, nil
	}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var sch string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&sch); err != nil {
			return fmt.Errorf("current schema: %w", err)
		}
		r := pgx.Identifier{role}.Sanitize()
		if _, err := tx.Exec(ctx, `GRANT USAGE ON SCHEMA `+pgx.Identifier{sch}.Sanitize()+` TO `+r); err != nil {
			return fmt.Errorf("grant usage on schema %s: %w", sch, err)
		}
		for _, t := range schema.Tables {
			if _, err := tx.Exec(ctx, `GRANT SELECT ON `+pgx.Identifier{sch, t}.Sanitize()+` TO `+r); err != nil {
				return fmt.Errorf("grant select on %s: %w", t, err)
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("grant to %s: %w", role, err)
	}
	return true, nil
}
