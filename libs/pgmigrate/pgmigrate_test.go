package pgmigrate

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
)

// mustPool returns a pool whose search_path is a new schema of its own,
// dropped when the test ends.
func mustPool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	pool, err := pgxpool.New(context.Background(), pgmigratetest.MustSchema(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close) // runs before the schema is dropped
	return pool
}

func sqlFile(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

type record struct {
	component, name string
	version         int
}

// records lists schema_migrations, or nil when the table does not exist.
func records(t *testing.T, pool *pgxpool.Pool) []record {
	t.Helper()
	var exists bool
	if err := pool.QueryRow(context.Background(), `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if !exists {
		return nil
	}
	rows, err := pool.Query(context.Background(), `SELECT component, version, name FROM schema_migrations ORDER BY component, version`)
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	defer rows.Close()
	var got []record
	for rows.Next() {
		var r record
		if err := rows.Scan(&r.component, &r.version, &r.name); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func equalRecords(a, b []record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestApplyInOrderOnce(t *testing.T) {
	ctx := context.Background()
	pool := mustPool(t)
	fsys := fstest.MapFS{
		"README.md":         sqlFile("later issues add files here"),
		"0002_add_note.sql": sqlFile("ALTER TABLE items ADD COLUMN note text;\nINSERT INTO items (id, note) VALUES (1, 'two statements');"),
		"0001_items.sql":    sqlFile("CREATE TABLE items (id int PRIMARY KEY)"),
		"sub/0003_x.sql":    sqlFile("this directory is ignored"),
	}
	for i := range 2 { // the second run finds nothing to do: CREATE TABLE would fail if rerun
		if err := Apply(ctx, pool, "chat", fsys); err != nil {
			t.Fatalf("Apply #%d: %v", i+1, err)
		}
	}
	want := []record{{"chat", "0001_items.sql", 1}, {"chat", "0002_add_note.sql", 2}}
	if got := records(t, pool); !equalRecords(got, want) {
		t.Errorf("schema_migrations = %v, want %v", got, want)
	}
	var note string
	if err := pool.QueryRow(ctx, `SELECT note FROM items WHERE id = 1`).Scan(&note); err != nil || note != "two statements" {
		t.Errorf("items row: %q, %v", note, err)
	}

	fsys["0003_more.sql"] = sqlFile("CREATE TABLE more (id int)")
	if err := Apply(ctx, pool, "chat", fsys); err != nil {
		t.Fatalf("Apply with a new file: %v", err)
	}
	if got := len(records(t, pool)); got != 3 {
		t.Errorf("got %d records after adding 0003, want 3", got)
	}
}

func TestApplyEmptyDirectory(t *testing.T) {
	pool := mustPool(t)
	if err := Apply(context.Background(), pool, "analytics", fstest.MapFS{"README.md": sqlFile("x")}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got := records(t, pool); len(got) != 0 {
		t.Errorf("schema_migrations = %v, want empty", got)
	}
}

func TestComponentsAreIndependent(t *testing.T) {
	ctx := context.Background()
	pool := mustPool(t)
	if err := Apply(ctx, pool, "chat", fstest.MapFS{"0001_a.sql": sqlFile("CREATE TABLE a (id int)")}); err != nil {
		t.Fatal(err)
	}
	if err := Apply(ctx, pool, "analytics", fstest.MapFS{"0001_b.sql": sqlFile("CREATE TABLE b (id int)")}); err != nil {
		t.Fatal(err)
	}
	want := []record{{"analytics", "0001_b.sql", 1}, {"chat", "0001_a.sql", 1}}
	if got := records(t, pool); !equalRecords(got, want) {
		t.Errorf("schema_migrations = %v, want %v", got, want)
	}
}

func TestFailingMigrationIsRolledBack(t *testing.T) {
	ctx := context.Background()
	pool := mustPool(t)
	fsys := fstest.MapFS{
		"0001_ok.sql":     sqlFile("CREATE TABLE ok (id int)"),
		"0002_broken.sql": sqlFile("CREATE TABLE half (id int); SELECT * FROM no_such_table"),
	}
	err := Apply(ctx, pool, "chat", fsys)
	if err == nil || !strings.Contains(err.Error(), "0002_broken.sql") || !strings.Contains(err.Error(), "no_such_table") {
		t.Fatalf("Apply = %v, want an error naming 0002_broken.sql and no_such_table", err)
	}
	if got, want := records(t, pool), []record{{"chat", "0001_ok.sql", 1}}; !equalRecords(got, want) {
		t.Errorf("schema_migrations = %v, want %v", got, want)
	}
	var half *string
	if err := pool.QueryRow(ctx, `SELECT to_regclass('half')::text`).Scan(&half); err != nil || half != nil {
		t.Errorf("table half exists after a failed migration (%v)", err)
	}
}

func TestApplyRefuses(t *testing.T) {
	tests := []struct {
		name    string
		before  fstest.MapFS // applied first, successfully
		fsys    fstest.MapFS
		wantErr string
	}{
		{
			name:    "gap",
			fsys:    fstest.MapFS{"0001_a.sql": sqlFile("SELECT 1"), "0003_c.sql": sqlFile("SELECT 1")},
			wantErr: "version 2 expected",
		},
		{
			name:    "not starting at 0001",
			fsys:    fstest.MapFS{"0002_b.sql": sqlFile("SELECT 1")},
			wantErr: "version 1 expected",
		},
		{
			name:    "duplicate version",
			fsys:    fstest.MapFS{"0001_a.sql": sqlFile("SELECT 1"), "0001_b.sql": sqlFile("SELECT 1")},
			wantErr: "version 1 is used by both",
		},
		{
			name:    "badly named file",
			fsys:    fstest.MapFS{"1_a.sql": sqlFile("SELECT 1")},
			wantErr: "1_a.sql: want a name like",
		},
		{
			name:    "recorded version whose file is gone",
			before:  fstest.MapFS{"0001_a.sql": sqlFile("SELECT 1"), "0002_b.sql": sqlFile("SELECT 1")},
			fsys:    fstest.MapFS{"0001_a.sql": sqlFile("SELECT 1")},
			wantErr: "version 2 (0002_b.sql) is recorded as applied but its file is gone",
		},
		{
			name:    "recorded file renamed",
			before:  fstest.MapFS{"0001_a.sql": sqlFile("SELECT 1")},
			fsys:    fstest.MapFS{"0001_renamed.sql": sqlFile("SELECT 1")},
			wantErr: "version 1 is recorded as 0001_a.sql but the file is now 0001_renamed.sql",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			pool := mustPool(t)
			if tt.before != nil {
				if err := Apply(ctx, pool, "chat", tt.before); err != nil {
					t.Fatalf("first Apply: %v", err)
				}
			}
			before := records(t, pool)
			err := Apply(ctx, pool, "chat", tt.fsys)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Apply = %v, want an error containing %q", err, tt.wantErr)
			}
			if got := records(t, pool); !equalRecords(got, before) {
				t.Errorf("schema_migrations changed from %v to %v", before, got)
			}
		})
	}
}

func TestRecordedButNotAppliedInOrder(t *testing.T) {
	ctx := context.Background()
	pool := mustPool(t)
	fsys := fstest.MapFS{"0001_a.sql": sqlFile("SELECT 1"), "0002_b.sql": sqlFile("SELECT 1")}
	if err := Apply(ctx, pool, "chat", fsys); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM schema_migrations WHERE version = 1`); err != nil {
		t.Fatal(err)
	}
	err := Apply(ctx, pool, "chat", fsys)
	if err == nil || !strings.Contains(err.Error(), "0001_a.sql is not applied but the later 0002_b.sql is") {
		t.Errorf("Apply = %v, want a refusal to apply 0001 after 0002", err)
	}
}

func TestConcurrentApplyRunsEachMigrationOnce(t *testing.T) {
	ctx := context.Background()
	pool := mustPool(t)
	fsys := fstest.MapFS{
		"0001_counter.sql": sqlFile("CREATE TABLE runs (n int); INSERT INTO runs VALUES (1)"),
		"0002_again.sql":   sqlFile("INSERT INTO runs VALUES (2)"),
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = Apply(ctx, pool, "chat", fsys) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Apply #%d: %v", i, err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM runs`).Scan(&n); err != nil || n != 2 {
		t.Errorf("runs has %d rows (%v), want 2: each migration once", n, err)
	}
}

func TestEmptyComponent(t *testing.T) {
	if err := Apply(context.Background(), nil, "", fstest.MapFS{}); err == nil {
		t.Error("Apply with an empty component succeeded")
	}
}
