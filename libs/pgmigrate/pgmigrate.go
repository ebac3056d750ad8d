// Package pgmigrate brings a service's PostgreSQL up at start-up: Connect
// opens the pool (on a URL from the environment or the data home) and
// checks that the server answers, and Apply applies the component's SQL
// migrations. Migrations are files NNNN_name.sql (version 0001, 0002, ...
// with no gap), each applied once, in order, in its own transaction, and
// recorded in the table schema_migrations (component, version, name,
// applied_at) in the first schema of the search_path. Processes starting
// together are serialised with a transaction-level advisory lock, so
// running Apply again, or from many instances at once, is safe.
//
// This package (with its test kit, pgmigratetest) is the one place in libs
// that imports pgx, the deliberate exception to "pgx stays out of libs":
// chat and analytics need the identical runner and connection, and a copied
// locking routine is the kind of copy that drifts.
package pgmigrate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// lockKey is the pg_advisory_xact_lock key taken by every migration
// transaction (the bytes of "pgmigrat").
const lockKey int64 = 0x70676d6967726174

const createTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	component  text        NOT NULL,
	version    integer     NOT NULL,
	name       text        NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (component, version)
)`

var fileName = regexp.MustCompile(`^([0-9]{4})_([A-Za-z0-9_-]+)\.sql$`)

// migration is one file: its version, its whole name (0001_init.sql) and its SQL.
type migration struct {
	version int
	name    string
	sql     string
}

// Apply applies every migration in the top directory of fsys that is not
// yet recorded for component. Files not ending in .sql (a README) are
// ignored. It refuses, changing nothing, a .sql file not named NNNN_name.sql,
// a duplicate version, a gap in the versions, and a recorded version whose
// file is gone or renamed.
func Apply(ctx context.Context, pool *pgxpool.Pool, component string, fsys fs.FS) error {
	if component == "" {
		return errors.New("pgmigrate: empty component")
	}
	migrations, err := load(fsys)
	if err != nil {
		return fmt.Errorf("load %s migrations: %w", component, err)
	}
	var pending []migration
	err = inLockedTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, createTable); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		applied, err := recorded(ctx, tx, component)
		if err != nil {
			return err
		}
		pending, err = unapplied(migrations, applied)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s migrations: %w", component, err)
	}
	for _, m := range pending {
		if err := inLockedTx(ctx, pool, func(tx pgx.Tx) error { return applyOne(ctx, tx, component, m) }); err != nil {
			return fmt.Errorf("apply %s migration %s: %w", component, m.name, err)
		}
	}
	return nil
}

func applyOne(ctx context.Context, tx pgx.Tx, component string, m migration) error {
	var done bool
	err := tx.QueryRow(ctx,
		`SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE component = $1 AND version = $2)`,
		component, m.version).Scan(&done)
	if err != nil {
		return fmt.Errorf("check schema_migrations: %w", err)
	}
	if done { // another process applied it since we looked
		return nil
	}
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return err
	}
	_, err = tx.Exec(ctx,
		`INSERT INTO schema_migrations (component, version, name) VALUES ($1, $2, $3)`,
		component, m.version, m.name)
	if err != nil {
		return fmt.Errorf("record in schema_migrations: %w", err)
	}
	return nil
}

// inLockedTx runs fn in a transaction that first takes the migration lock;
// the lock is released when the transaction ends, however it ends.
func inLockedTx(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
		return fn(tx)
	})
}

// recorded returns the applied versions of component and their file names.
func recorded(ctx context.Context, tx pgx.Tx, component string) (map[int]string, error) {
	rows, err := tx.Query(ctx, `SELECT version, name FROM schema_migrations WHERE component = $1`, component)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	applied := map[int]string{}
	var (
		version int
		name    string
	)
	_, err = pgx.ForEachRow(rows, []any{&version, &name}, func() error {
		applied[version] = name
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	return applied, nil
}

// unapplied checks the recorded versions against the files and returns the
// migrations still to apply, in order.
func unapplied(migrations []migration, applied map[int]string) ([]migration, error) {
	for v, name := range applied {
		if v < 1 || v > len(migrations) {
			return nil, fmt.Errorf("version %d (%s) is recorded as applied but its file is gone", v, name)
		}
		if m := migrations[v-1]; m.name != name {
			return nil, fmt.Errorf("version %d is recorded as %s but the file is now %s", v, name, m.name)
		}
	}
	var pending []migration
	for _, m := range migrations {
		if _, ok := applied[m.version]; ok {
			if len(pending) > 0 {
				return nil, fmt.Errorf("%s is not applied but the later %s is", pending[0].name, m.name)
			}
			continue
		}
		pending = append(pending, m)
	}
	return pending, nil
}

// load reads the migrations of fsys's top directory, sorted, and checks
// that their versions run 1, 2, 3, ... without a gap or duplicate.
func load(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var migrations []migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		match := fileName.FindStringSubmatch(e.Name())
		if match == nil {
			return nil, fmt.Errorf("%s: want a name like 0001_create_sessions.sql", e.Name())
		}
		version, _ := strconv.Atoi(match[1]) // four digits: always a number
		sql, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		migrations = append(migrations, migration{version: version, name: e.Name(), sql: string(sql)})
	}
	sort.Slice(migrations, func(i, j int) bool { return migrations[i].version < migrations[j].version })
	for i, m := range migrations {
		switch want := i + 1; {
		case i > 0 && m.version == migrations[i-1].version:
			return nil, fmt.Errorf("version %d is used by both %s and %s", m.version, migrations[i-1].name, m.name)
		case m.version != want:
			return nil, fmt.Errorf("%s: version %d expected (versions start at 0001 and have no gap)", m.name, want)
		}
	}
	return migrations, nil
}
