package project

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PGSessions reads the working directories of chat's sessions from chat's
// table sessions (id, cwd) in the shared database. When chat's migrations
// have not run in that database yet, it answers no directories.
type PGSessions struct {
	Pool *pgxpool.Pool
}

var _ SessionDirs = PGSessions{}

// undefinedTable is PostgreSQL's SQLSTATE for a missing relation.
const undefinedTable = "42P01"

// SessionCwds answers the distinct cwds of every session, archived ones too.
func (s PGSessions) SessionCwds(ctx context.Context) ([]string, error) {
	rows, err := s.Pool.Query(ctx, `SELECT DISTINCT cwd FROM sessions ORDER BY cwd`)
	if err != nil {
		return nil, missingTableOK(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var cwd string
		if err := rows.Scan(&cwd); err != nil {
			return nil, fmt.Errorf("scan session cwd: %w", err)
		}
		out = append(out, cwd)
	}
	if err := rows.Err(); err != nil {
		return nil, missingTableOK(err)
	}
	return out, nil
}

// SessionCwd answers the cwd of one session ("" and no error when unknown).
func (s PGSessions) SessionCwd(ctx context.Context, id string) (string, error) {
	var cwd string
	err := s.Pool.QueryRow(ctx, `SELECT cwd FROM sessions WHERE id = $1`, id).Scan(&cwd)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return "", nil
		}
		return "", missingTableOK(err)
	}
	return cwd, nil
}

func missingTableOK(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == undefinedTable {
		return nil
	}
	return fmt.Errorf("query chat sessions: %w", err)
}
