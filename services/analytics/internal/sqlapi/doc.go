// Package sqlapi is analytics' read-only SQL endpoint, POST
// /api/shadow-db/sql: it takes raw SQL (or JSON {"sql": ...}), runs it as
// the read-only role and streams the result as JSON {columns, rows, count}
// or TSV, every value a string in a canonical form (see docs/api.md).
//
// Three fences stand between a query and the data: Validate (a tokenizer
// that reads SQL as PostgreSQL does, and accepts one read statement only),
// the role (CheckRole refuses to serve when svc_readonly could do more than
// SELECT the analytics tables), and a READ ONLY transaction with LOCAL
// statement, lock and idle timeouts, always rolled back, on a bounded
// number of the read-only pool's connections, each reset (DISCARD ALL)
// before it is reused. The deadline (shadow_db.sql_timeout_s, 30 s by
// default) cancels the statement inside PostgreSQL and answers INTERRUPT.
// A result row larger than MaxRowBytes (16 MiB as PostgreSQL sends it) is
// never read into memory: the query fails, or its result is cut, with
// sql_error. An answer is at most Config.MaxResponseBytes (256 MiB by
// default): a result that would pass it is cut with payload_too_large. The
// SQL itself is at most MaxSQLBytes (1 MiB; 413 past it). CheckRole also
// wants the role's sessions to start read-only, with a statement_timeout
// and a temp_file_limit.
package sqlapi
