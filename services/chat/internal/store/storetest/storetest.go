// Package storetest gives tests a chat Store on a PostgreSQL schema of
// their own, with chat's migrations applied.
package storetest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/libs/pgmigrate"
	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// New returns a Store on a schema of the test's own (dropped when the test
// ends), with chat's migrations applied, and the schema's URL for more
// connections.
func New(t testing.TB) (*store.Store, string) {
	t.Helper()
	ctx := context.Background()
	dbURL := pgmigratetest.MustSchema(t)
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := pgmigrate.Apply(ctx, db, "chat", os.DirFS(migrationsDir(t))); err != nil {
		t.Fatalf("apply migrations: %v", err)
	}
	return store.New(db), dbURL
}

// Pool opens another pool on the schema at dbURL, set up by each of
// configure first, and closes it when the test ends.
func Pool(t testing.TB, dbURL string, configure ...func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range configure {
		c(cfg)
	}
	db, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// LoseTail makes session id's log look as it does after a crash of
// PostgreSQL lost its commits after line keep: the lines after it gone,
// next_line back at keep, and the session last written before
// PostgreSQL started.
func LoseTail(t testing.TB, db *pgxpool.Pool, id string, keep int64) {
	t.Helper()
	for _, q := range []string{
		`DELETE FROM session_messages WHERE session_id = $1 AND line > $2`,
		`UPDATE sessions SET next_line = $2, updated_at = pg_postmaster_start_time() - interval '1 second' WHERE id = $1`,
	} {
		if _, err := db.Exec(context.Background(), q, id, keep); err != nil {
			t.Fatalf("lose the tail of session %s: %v", id, err)
		}
	}
}

// migrationsDir is chat's migrations directory, found from this file's
// place in the source tree.
func migrationsDir(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("storetest: cannot tell where its source is")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "app", "migrations")
}
