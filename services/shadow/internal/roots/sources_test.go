package roots_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/services/shadow/internal/project"
	"github.com/svc-code/svc-code/services/shadow/internal/roots"
)

func mustPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgmigratetest.MustSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestSessionDirsAndExtraDirs reads chat's tables: sessions' cwds and the
// extra_dirs setting are roots; before chat created them there are none.
func TestSessionDirsAndExtraDirs(t *testing.T) {
	ctx := context.Background()
	pool := mustPool(t)
	sess := roots.Projects(project.NewStore(t.TempDir(), project.PGSessions{Pool: pool}))
	extra := roots.ExtraDirs(pool, "/from/env")
	if got, err := sess(ctx); err != nil || len(got) != 0 {
		t.Fatalf("no sessions table: got %q, %v; want nothing, no error", got, err)
	}
	if got, err := extra(ctx); err != nil || !slices.Equal(got, []string{"/from/env"}) {
		t.Fatalf("no app_settings table: got %q, %v; want the env list", got, err)
	}

	for _, q := range []string{
		`CREATE TABLE sessions (id text PRIMARY KEY, cwd text NOT NULL)`,
		`CREATE TABLE app_settings (key text PRIMARY KEY, value jsonb NOT NULL)`,
		`INSERT INTO sessions VALUES ('a', '/p/one'), ('b', '/p/one'), ('c', '/p/two')`,
		`INSERT INTO app_settings VALUES ('config/extra_dirs', '["/x/extra"]'), ('extra_dirs', '["/not/this/key"]')`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	got, err := sess(ctx)
	slices.Sort(got)
	if err != nil || !slices.Equal(got, []string{"/p/one", "/p/two"}) {
		t.Errorf("Projects = %q, %v; want [/p/one /p/two]", got, err)
	}
	got, err = extra(ctx)
	if err != nil || !slices.Equal(got, []string{"/from/env", "/x/extra"}) {
		t.Errorf("ExtraDirs = %q, %v; want [/from/env /x/extra]", got, err)
	}

	// A session's directory becomes a root.
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/f", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := roots.New(0, sess)
	if _, err := r.Resolve(ctx, dir+"/f"); err == nil {
		t.Fatal("a directory of no session is allowed")
	}
	if _, err := pool.Exec(ctx, `INSERT INTO sessions VALUES ('d', $1)`, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Resolve(ctx, dir+"/f"); err != nil {
		t.Errorf("a session's directory is refused: %v", err)
	}
}
