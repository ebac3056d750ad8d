package sqlapi

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// snapshot is everything a hostile statement could leave behind, as
// name → value: the test tables (row count and checksum), sequences,
// objects in the schema and objects owned by the role anywhere, grants,
// large objects, locks, sessions and the role's settings, both stored
// (pg_db_role_setting, the role's attributes) and live on its pooled
// connections (pg_settings, listened channels, prepared statements,
// cursors).
type snapshot map[string]string

// adminProbes run as the superuser; $1 is the role, $2 the schema.
var adminProbes = map[string]string{
	"sequences": `SELECT string_agg(format('%s=%s/%s', schemaname || '.' || sequencename, last_value, increment_by), ',' ORDER BY sequencename)
		FROM pg_sequences WHERE schemaname = $2 AND $1::text IS NOT NULL`,
	"schema objects": `SELECT string_agg(format('%s:%s:%s', relname, relkind, relacl), ',' ORDER BY relname)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $2 AND $1::text IS NOT NULL`,
	"schema functions": `SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = $2 AND $1::text IS NOT NULL`,
	"schema acl": `SELECT nspacl::text FROM pg_namespace WHERE nspname = $2 AND $1::text IS NOT NULL`,
	"owned by role": `SELECT (SELECT count(*) FROM pg_class WHERE relowner = r.oid) || '/' ||
			(SELECT count(*) FROM pg_proc WHERE proowner = r.oid) || '/' ||
			(SELECT count(*) FROM pg_namespace WHERE nspowner = r.oid) || '/' ||
			(SELECT count(*) FROM pg_type WHERE typowner = r.oid)
		FROM pg_roles r WHERE rolname = $1 AND $2::text IS NOT NULL`,
	"large objects": `SELECT count(*) FROM pg_largeobject_metadata
		WHERE lomowner = (SELECT oid FROM pg_roles WHERE rolname = $1) AND $2::text IS NOT NULL`,
	"locks": `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
		WHERE a.usename = $1 AND $2::text IS NOT NULL`,
	"advisory locks": `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
		AND pid IN (SELECT pid FROM pg_stat_activity WHERE usename = $1) AND $2::text IS NOT NULL`,
	"busy sessions": `SELECT count(*) FROM pg_stat_activity
		WHERE usename = $1 AND state IS DISTINCT FROM 'idle' AND $2::text IS NOT NULL`,
	"other sessions of the role's making": `SELECT count(*) FROM pg_stat_activity
		WHERE application_name ILIKE '%dblink%' AND $1::text IS NOT NULL AND $2::text IS NOT NULL`,
	"role": `SELECT format('%s %s %s %s %s %s %s', rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolbypassrls, rolconfig)
		FROM pg_roles WHERE rolname = $1 AND $2::text IS NOT NULL`,
	"memberships": `SELECT count(*) FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member OR r.oid = m.roleid
		WHERE r.rolname = $1 AND $2::text IS NOT NULL`,
	"stored settings": `SELECT coalesce(string_agg(s.setconfig::text, ',' ORDER BY s.setconfig::text), '')
		FROM pg_db_role_setting s
		WHERE (s.setrole = (SELECT oid FROM pg_roles WHERE rolname = $1) OR s.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database()))
			AND $2::text IS NOT NULL`,
	"prepared transactions": `SELECT count(*) FROM pg_prepared_xacts WHERE owner = $1 AND $2::text IS NOT NULL`,
}

// sessionProbe runs on each of the role's pooled connections, over the
// simple protocol so that it leaves no prepared statement itself. Settings
// of libraries (names with a dot) are left out of the checksum: a DO block
// loads plpgsql, which registers its settings at their defaults for the
// rest of the session; any of them set to another value is counted.
const sessionProbe = `SELECT md5(string_agg(name || '=' || setting, ',' ORDER BY name) FILTER (WHERE name NOT LIKE '%.%'))
	|| ' custom=' || count(*) FILTER (WHERE name LIKE '%.%' AND source <> 'default')
	|| ' listen=' || (SELECT count(*) FROM pg_listening_channels())
	|| ' prepared=' || (SELECT count(*) FROM pg_prepared_statements)
	|| ' cursors=' || (SELECT count(*) FROM pg_cursors)
	|| ' temp=' || (SELECT count(*) FROM pg_class WHERE relpersistence = 't')
	|| ' locks=' || (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory')
	FROM pg_settings`

func (e *env) snapshot(t testing.TB) snapshot {
	t.Helper()
	ctx := context.Background()
	s := snapshot{}
	for name, q := range adminProbes {
		var v *string
		if err := e.admin.QueryRow(ctx, q, e.role, e.schema).Scan(&v); err != nil {
			t.Fatalf("snapshot %s: %v", name, err)
		}
		if v != nil {
			s[name] = *v
		}
	}
	rows, err := e.admin.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'm') ORDER BY 1`, e.schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		var v string
		q := `SELECT count(*) || ':' || coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') FROM ` +
			pgx.Identifier{e.schema, table}.Sanitize() + ` t`
		if err := e.admin.QueryRow(ctx, q).Scan(&v); err != nil {
			t.Fatalf("snapshot table %s: %v", table, err)
		}
		s["table "+table] = v
	}
	// Every idle pooled connection of the role, each once.
	conns := e.ro.AcquireAllIdle(ctx)
	var live []string
	for _, c := range conns {
		var v string
		if err := c.QueryRow(ctx, sessionProbe, pgx.QueryExecModeSimpleProtocol).Scan(&v); err != nil {
			t.Errorf("snapshot of a pooled connection: %v", err)
		}
		live = append(live, v)
		c.Release()
	}
	// Pooled connections come and go (a cancelled one is closed): compare
	// the distinct states, which must all be a fresh session's.
	sort.Strings(live)
	s["pooled sessions"] = strings.Join(uniq(live), ";")
	return s
}

func uniq(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// assertUnchanged fails the test if anything in the snapshot moved.
func (e *env) assertUnchanged(t testing.TB, before snapshot, context ...string) {
	t.Helper()
	after := e.snapshot(t)
	for k, b := range before {
		a := after[k]
		if k == "pooled sessions" && (a == "" || b == "") {
			continue // no idle connection at one of the two moments
		}
		if a != b {
			t.Errorf("%s: %s changed:\nbefore %s\nafter  %s", strings.Join(context, " "), k, b, a)
		}
	}
	for k, a := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: %s appeared: %s", strings.Join(context, " "), k, a)
		}
	}
}

// recorder is a testing.TB that records Errorf instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// TestSnapshotSeesChanges: each kind of lasting change the corpus tests
// look for is seen by the snapshot (so that their passing means something).
func TestSnapshotSeesChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, e *env)
		want   string
	}{
		{"row", func(t *testing.T, e *env) { mustExec(t, e.admin, "INSERT INTO probe_tags VALUES (7, 'new')") }, "table probe_tags"},
		{"value", func(t *testing.T, e *env) { mustExec(t, e.admin, "UPDATE probe_turns SET note = 'x' WHERE id = 3") }, "table probe_turns"},
		{"sequence", func(t *testing.T, e *env) { mustExec(t, e.admin, "SELECT nextval('probe_turns_id_seq')") }, "sequences"},
		{"table", func(t *testing.T, e *env) { mustExec(t, e.admin, "CREATE TABLE pwned (x int)") }, "schema objects"},
		{"grant", func(t *testing.T, e *env) {
			// To a role of its own, not PUBLIC: a PUBLIC grant would make
			// the read-only role of every test running beside this one
			// unsafe (its startup check reads every schema).
			other := e.role + "_other"
			mustExec(t, e.admin, "CREATE ROLE "+other)
			t.Cleanup(func() {
				_, _ = e.admin.Exec(context.Background(), "DROP OWNED BY "+other)
				_, _ = e.admin.Exec(context.Background(), "DROP ROLE "+other)
			})
			mustExec(t, e.admin, "GRANT SELECT ON probe_secret TO "+other)
		}, "schema objects"},
		{"large object", func(t *testing.T, e *env) {
			mustExec(t, e.admin, "SELECT lo_create(0)")
			mustExec(t, e.admin, "DO $$ BEGIN EXECUTE format('ALTER LARGE OBJECT %s OWNER TO "+e.role+"', (SELECT max(oid) FROM pg_largeobject_metadata)); END $$")
		}, "large objects"},
		{"stored setting", func(t *testing.T, e *env) { mustExec(t, e.admin, "ALTER ROLE "+e.role+" SET work_mem = '8MB'") }, "stored settings"},
		{"role attribute", func(t *testing.T, e *env) { mustExec(t, e.admin, "ALTER ROLE "+e.role+" CREATEDB") }, "role"},
		{"session setting", func(t *testing.T, e *env) { holdOnRO(t, e, "SET work_mem = '9MB'") }, "pooled sessions"},
		{"listen", func(t *testing.T, e *env) { holdOnRO(t, e, "LISTEN probe") }, "pooled sessions"},
		{"advisory lock", func(t *testing.T, e *env) { holdOnRO(t, e, "SELECT pg_advisory_lock(99)") }, "advisory locks"},
		{"busy session", func(t *testing.T, e *env) {
			c, err := e.ro.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Exec(ctx, "BEGIN"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Conn().Close(ctx); c.Release() })
		}, "busy sessions"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{})
			e.query(t, "SELECT 1") // a pooled connection to look at
			before := e.snapshot(t)
			tt.change(t, e)
			r := &recorder{TB: t}
			e.assertUnchanged(r, before)
			if !strings.Contains(strings.Join(r.errors, "\n"), tt.want) {
				t.Errorf("the snapshot missed the change; want a report on %q, got %q", tt.want, r.errors)
			}
		})
	}
}

// holdOnRO runs sql on one of the role's pooled connections and gives it
// back as it is.
func holdOnRO(t *testing.T, e *env, sql string) {
	t.Helper()
	c, err := e.ro.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if _, err := c.Exec(context.Background(), sql, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
}
