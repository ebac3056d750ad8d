package sqlapi

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// dangerousRoles are the predefined roles that reach beyond reading the
// analytics tables. Any membership is refused (see CheckRole); these get a
// reason in the report.
var dangerousRoles = map[string]string{
	"pg_read_server_files":      "reads server files",
	"pg_write_server_files":     "writes server files",
	"pg_execute_server_program": "runs programs on the server",
	"pg_signal_backend":         "cancels and ends other sessions",
	"pg_read_all_data":          "reads every table",
	"pg_write_all_data":         "writes every table",
	"pg_checkpoint":             "runs CHECKPOINT",
	"pg_monitor":                "reads every session's queries",
	"pg_read_all_settings":      "reads every setting",
	"pg_read_all_stats":         "reads every session's queries",
	"pg_database_owner":         "owns the database",
}

// dangerousFunctionPatterns are functions the role must not be able to
// execute (PostgreSQL revokes them from PUBLIC; a GRANT would bring them
// back): file and program access, large-object import/export, dblink,
// server control. LIKE patterns: \_ is a literal underscore.
// pg_read_file_old is left out: PUBLIC may call it, and it refuses
// everyone but superusers itself.
var dangerousFunctionPatterns = []string{
	`pg\_read\_%`, `pg\_ls\_%`, `pg\_stat\_file`, `pg\_file\_%`, `pg\_logdir\_ls`, `lo\_import`, `lo\_export`,
	`dblink%`, `pg\_reload\_conf`, `pg\_rotate\_logfile`, `pg\_current\_logfile`, `pg\_switch\_wal`,
	`pg\_promote`, `pg\_create\_restore\_point`, `pg\_backup\_%`, `pg\_start\_backup`, `pg\_stop\_backup`,
}

// roleChecks are the queries CheckRole runs as the role itself; each
// returns one text column, a problem per row. $1 is the allowed tables
// (in the role's current schema), $2 the function patterns.
var roleChecks = []string{
	// Attributes of the role and of every role it belongs to, directly or not.
	`WITH RECURSIVE r(oid) AS (
		SELECT oid FROM pg_roles WHERE rolname = current_user
		UNION SELECT m.roleid FROM pg_auth_members m JOIN r ON m.member = r.oid)
	SELECT format('role %I has %s', rolname, a)
	FROM pg_roles, r, LATERAL (VALUES
		(CASE WHEN rolsuper THEN 'SUPERUSER' END), (CASE WHEN rolcreaterole THEN 'CREATEROLE' END),
		(CASE WHEN rolcreatedb THEN 'CREATEDB' END), (CASE WHEN rolbypassrls THEN 'BYPASSRLS' END),
		(CASE WHEN rolreplication THEN 'REPLICATION' END)) AS f(a)
	WHERE pg_roles.oid = r.oid AND a IS NOT NULL`,
	// Memberships: none at all (a NOINHERIT role can still SET ROLE to them).
	`WITH RECURSIVE r(oid) AS (
		SELECT oid FROM pg_roles WHERE rolname = current_user
		UNION SELECT m.roleid FROM pg_auth_members m JOIN r ON m.member = r.oid)
	SELECT format('member of role %I', rolname) FROM pg_roles JOIN r USING (oid)
	WHERE rolname <> current_user`,
	// Ownership of the database or of any schema or relation.
	`SELECT format('owns database %I', datname) FROM pg_database
	WHERE datname = current_database() AND datdba = (SELECT oid FROM pg_roles WHERE rolname = current_user)
	UNION ALL
	SELECT format('owns schema %I', nspname) FROM pg_namespace
	WHERE nspowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
	UNION ALL
	SELECT format('owns %I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user) AND n.nspname NOT LIKE 'pg\_toast%'`,
	// CREATE on the database or on any schema.
	`SELECT 'may CREATE in database ' || quote_ident(current_database())
	WHERE has_database_privilege(current_database(), 'CREATE')
	UNION ALL
	SELECT format('may CREATE in schema %I', nspname) FROM pg_namespace
	WHERE has_schema_privilege(oid, 'CREATE')`,
	// Any write privilege on any relation, and SELECT outside the analytics tables.
	`SELECT format('may %s %I.%I', p, n.nspname, c.relname)
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace,
		LATERAL (VALUES ('INSERT'), ('UPDATE'), ('DELETE'), ('TRUNCATE'), ('REFERENCES'), ('TRIGGER'), ('SELECT')) AS v(p)
	WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f')
		AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%'
		AND CASE WHEN c.relkind NOT IN ('r', 'v', 'm', 'p', 'f') THEN false
			WHEN p IN ('SELECT', 'INSERT', 'UPDATE', 'REFERENCES') THEN has_any_column_privilege(c.oid, p)
			ELSE has_table_privilege(c.oid, p) END
		AND NOT (p = 'SELECT' AND n.nspname = current_schema() AND c.relname = ANY($1::text[]))
	UNION ALL
	SELECT format('may use sequence %I.%I', n.nspname, c.relname)
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
		AND CASE WHEN c.relkind = 'S' THEN has_sequence_privilege(c.oid, 'USAGE, UPDATE') ELSE false END`,
	// The role's settings, as a session of it starts (ALTER ROLE ... SET,
	// or the server's): read-only transactions, a statement deadline and a
	// bound on temporary files, so that a query that got past every other
	// fence (a connection used outside this endpoint's transaction, a
	// statement_timeout the endpoint failed to set) still ends and cannot
	// fill the disk with a huge sort or aggregate.
	`SELECT p FROM (VALUES
		(CASE WHEN current_setting('default_transaction_read_only') <> 'on' THEN
			format('setting default_transaction_read_only is off: ALTER ROLE %I SET default_transaction_read_only = on', current_user) END),
		(CASE WHEN current_setting('statement_timeout') = '0' THEN
			format('setting statement_timeout is 0 (no deadline): ALTER ROLE %I SET statement_timeout = ''30s''', current_user) END),
		(CASE WHEN current_setting('temp_file_limit') = '-1' THEN
			format('setting temp_file_limit is -1 (no bound): ALTER ROLE %I SET temp_file_limit = ''1GB''', current_user) END)
	) AS v(p) WHERE p IS NOT NULL`,
	// EXECUTE on file, program and server-control functions.
	`SELECT format('may EXECUTE %s', p.oid::regprocedure) FROM pg_proc p
	WHERE p.proname LIKE ANY($2::text[]) AND p.proname <> 'pg_read_file_old'
		AND has_function_privilege(p.oid, 'EXECUTE')
		AND $1::text[] IS NOT NULL`,
}

// CheckRole is the startup check of the second fence: it connects through
// pool (the read-only role's) and lists what makes the role unsafe for the
// SQL endpoint: SUPERUSER, CREATEROLE, CREATEDB, BYPASSRLS or REPLICATION;
// membership in any role (pg_read_server_files, pg_execute_server_program,
// pg_signal_backend, pg_read_all_data and the like, or any other); owning
// the database, a schema or a relation; CREATE anywhere; any privilege but
// SELECT on any relation, or SELECT on one that is not among tables (in
// the role's current schema); a sequence it may advance; EXECUTE on file,
// program or server-control functions; sessions that start without
// default_transaction_read_only on, without a statement_timeout or
// without a temp_file_limit (deploy/scripts/provision.sh sets the three
// on the role). An empty list means safe.
func CheckRole(ctx context.Context, pool *pgxpool.Pool, tables []string) ([]string, error) {
	if tables == nil {
		tables = []string{}
	}
	var problems []string
	for _, q := range roleChecks {
		args := []any{pgx.QueryExecModeExec}
		switch {
		case strings.Contains(q, "$2"):
			args = append(args, tables, dangerousFunctionPatterns)
		case strings.Contains(q, "$1"):
			args = append(args, tables)
		}
		rows, err := pool.Query(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("check the read-only role: %w", err)
		}
		found, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, fmt.Errorf("check the read-only role: %w", err)
		}
		problems = append(problems, found...)
	}
	for i, p := range problems {
		for name, why := range dangerousRoles {
			if p == "member of role "+name {
				problems[i] = p + " (" + why + ")"
			}
		}
	}
	return problems, nil
}

// roleProblem formats CheckRole's list for the 503 answer.
func roleProblem(role string, problems []string) string {
	return fmt.Sprintf("the SQL endpoint is disabled: the read-only role %s is unsafe: %s; "+
		"fix its grants and settings (deploy/scripts/provision.sh does) and restart analytics",
		role, strings.Join(problems, "; "))
}
