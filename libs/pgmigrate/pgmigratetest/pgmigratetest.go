// Package pgmigratetest gives each test a PostgreSQL schema of its own in
// the test database: MustSchema creates it and returns a URL whose
// search_path is that schema, and Recorded reads what pgmigrate.Apply
// recorded there. PostgreSQL must be reachable at TEST_DATABASE_URL: a test
// fails, never skips, when it is not. It sits under pgmigrate because pgx
// stays in that package and its test kit.
package pgmigratetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultURL is the test database when TEST_DATABASE_URL is not set: the
// compose PostgreSQL.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// URL is TEST_DATABASE_URL, else DefaultURL.
func URL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9]+`)

// MustSchema creates a schema named after the test and returns the test
// database's URL with search_path set to it; the schema is dropped, with
// all it holds, when the test ends.
func MustSchema(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgxpool.New(ctx, URL())
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		tb.Fatalf("PostgreSQL must be reachable at TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres): %v", err)
	}
	tb.Cleanup(admin.Close)

	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name := strings.ToLower(unsafeChars.ReplaceAllString(tb.Name(), "_"))
	schema := "t_" + name[:min(len(name), 40)] + "_" + hex.EncodeToString(suffix)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("create schema %s: %v", schema, err)
	}
	tb.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(URL())
	if err != nil {
		tb.Fatalf("TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Recorded counts the migrations of component recorded in the
// schema_migrations table that dbURL's search_path leads to. It fails when
// there is no such table: pgmigrate.Apply has not run there.
func Recorded(ctx context.Context, dbURL, component string) (int, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE component = $1`, component).Scan(&n)
	return n, err
}
