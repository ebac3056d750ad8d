package sqlapi

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateAccepts(t *testing.T) {
	t.Parallel()
	for _, sql := range []string{
		"SELECT 1",
		"select 1;",
		"SELECT 1;;  -- trailing comment",
		"  /* leading */ SELECT count(*) FROM turns",
		"WITH t AS (SELECT * FROM turns) SELECT * FROM t",
		"WITH RECURSIVE r(n) AS (VALUES (1) UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r",
		"VALUES (1, 'a'), (2, 'b')",
		"TABLE turns",
		"EXPLAIN SELECT * FROM turns",
		"EXPLAIN (FORMAT JSON, COSTS OFF) SELECT 1",
		"SHOW TimeZone",
		"(SELECT 1) UNION (SELECT 2)",
		"SELECT 'DROP TABLE turns; INSERT' AS s",
		"SELECT 'it''s; delete' AS s",
		"SELECT E'a\\'; DELETE FROM x; --' AS s",
		"SELECT $$; DROP TABLE turns; $$ AS s",
		"SELECT $tag$ $$ ; update $tag$ AS s",
		`SELECT "delete", "insert;" FROM (SELECT 1 AS "delete", 2 AS "insert;") x`,
		"SELECT 1 /* ; DROP /* nested */ TABLE ; */",
		"SELECT 1 -- ; DROP TABLE turns",
		"SELECT substring('abc' FROM 1 FOR 2)",
		"SELECT * FROM turns ORDER BY started_at DESC FETCH FIRST 5 ROWS ONLY",
		"SELECT pg_sleep(0.1)",
		"SELECT x::text, y::numeric(10,2) FROM (VALUES (1, 2)) v(x, y)",
		"SELECT a$b FROM (SELECT 1 AS a$b) s",
		"SELECT 1.5e3, .5, 1e-3",
		"SELECT jsonb_set('{}'::jsonb, '{a}', '1')",
		"SELECT settings FROM (SELECT 1 AS settings) s",
		"SELECT current_setting('TimeZone')",
		"SELECT n'national', b'101', x'1F'",
	} {
		if err := Validate(sql); err != nil {
			t.Errorf("Validate(%q) = %v, want nil", sql, err)
		}
	}
}

func TestValidateRefuses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		sql, want string // want: a part of the refusal's reason
	}{
		{"", "no SQL statement"},
		{" ; ; ", "no SQL statement"},
		{"-- only a comment", "no SQL statement"},
		{"SELECT 1; SELECT 2", "only one statement"},
		{"SELECT 1; DROP TABLE turns", "only one statement"},
		{"SELECT 'a\\'; DROP TABLE turns; --'", "only one statement"}, // standard strings: 'a\' ends there
		{"SELECT 1 /* /* */ ; DROP TABLE turns", "unterminated /* comment"},
		{"SELECT 1 /* a */ ; DROP TABLE turns", "only one statement"},
		{"SELECT 1 --\n; DROP TABLE turns", "only one statement"},
		{"INSERT INTO turns VALUES (1)", "only read statements"},
		{"UPDATE turns SET cost = 0", "only read statements"},
		{"DELETE FROM turns", "only read statements"},
		{"DROP TABLE turns", "only read statements"},
		{"TRUNCATE turns", "only read statements"},
		{"SET ROLE postgres", "only read statements"},
		{"RESET ALL", "only read statements"},
		{"COPY turns TO STDOUT", "only read statements"},
		{"LISTEN x", "only read statements"},
		{"NOTIFY x", "only read statements"},
		{"UNLISTEN *", "only read statements"},
		{"DO $$ BEGIN END $$", "only read statements"},
		{"CALL p()", "only read statements"},
		{"PREPARE p AS SELECT 1", "only read statements"},
		{"EXECUTE p", "only read statements"},
		{"BEGIN", "only read statements"},
		{"START TRANSACTION READ WRITE", "only read statements"},
		{"DECLARE c CURSOR WITH HOLD FOR SELECT 1", "only read statements"},
		{"VACUUM turns", "only read statements"},
		{"LOCK TABLE turns", "only read statements"},
		{"ALTER ROLE current_user SET statement_timeout = 0", "only read statements"},
		{"GRANT SELECT ON turns TO public", "only read statements"},
		{"\"select\" 1", "only read statements"},
		{"WITH d AS (DELETE FROM turns RETURNING *) SELECT * FROM d", "DELETE"},
		{"WITH u AS (UPDATE turns SET cost = 0 RETURNING 1) SELECT 1", "UPDATE"},
		{"WITH i AS (INSERT INTO turns DEFAULT VALUES RETURNING 1) SELECT 1", "INSERT"},
		{"SELECT * INTO newtable FROM turns", "INTO"},
		{"SELECT * FROM turns FOR UPDATE", "UPDATE"},
		{"SELECT * FROM turns FOR NO KEY UPDATE", "row locking"},
		{"SELECT * FROM turns FOR SHARE", "row locking"},
		{"SELECT * FROM turns FOR KEY SHARE", "row locking"},
		{"EXPLAIN ANALYZE SELECT 1", "ANALYZE"},
		{"EXPLAIN (ANALYZE) SELECT 1", "ANALYZE"},
		{"EXPLAIN (ANALYSE true) SELECT 1", "ANALYZE"},
		{"SELECT set_config('role', 'postgres', false)", "set_config"},
		{"SELECT pg_catalog.set_config('search_path', 'x', false)", "set_config"},
		{`SELECT "set_config"('search_path', 'x', false)`, "set_config"},
		{`SELECT "SET_CONFIG"('search_path', 'x', false)`, "set_config"},
		{"SELECT pg_read_file('/etc/passwd')", "pg_read_file"},
		{"SELECT pg_read_binary_file('/etc/passwd')", "pg_read_binary_file"},
		{"SELECT * FROM pg_ls_dir('.')", "pg_ls_dir"},
		{"SELECT pg_stat_file('postgresql.conf')", "pg_stat_file"},
		{"SELECT lo_import('/etc/passwd')", "lo_import"},
		{"SELECT lo_export(1, '/tmp/x')", "lo_export"},
		{"SELECT lo_creat(-1)", "lo_creat"},
		{"SELECT loread(0, 1)", "loread"},
		{"SELECT * FROM dblink('dbname=postgres', 'DELETE FROM turns') AS t(x int)", "dblink"},
		{"SELECT dblink_exec('DROP TABLE turns')", "dblink_exec"},
		{"SELECT pg_advisory_lock(1)", "pg_advisory_lock"},
		{"SELECT pg_try_advisory_lock(1)", "pg_try_advisory_lock"},
		{"SELECT pg_advisory_xact_lock(1)", "pg_advisory_xact_lock"},
		{"SELECT pg_terminate_backend(pid) FROM pg_stat_activity", "pg_terminate_backend"},
		{"SELECT pg_cancel_backend(1)", "pg_cancel_backend"},
		{"SELECT pg_notify('x', 'y')", "pg_notify"},
		{"SELECT nextval('turns_id_seq')", "nextval"},
		{"SELECT setval('turns_id_seq', 1)", "setval"},
		{"SELECT pg_reload_conf()", "pg_reload_conf"},
		{"SELECT query_to_xml('DELETE FROM turns', true, true, '')", "query_to_xml"},
		{"SELECT ts_stat('SELECT 1')", "ts_stat"},
		{"SELECT pg_logical_emit_message(true, 'x', 'y')", "pg_logical_emit_message"},
		{"SELECT pg_stat_reset()", "pg_stat_reset"},
		{"SELECT txid_current()", "txid_current"},
		{"SELECT 'a", "unterminated string"},
		{"SELECT E'a\\'", "unterminated string"},
		{"SELECT $$a", "unterminated dollar-quoted"},
		{"SELECT \"a", "unterminated quoted identifier"},
		{"SELECT 1 /* open", "unterminated /* comment"},
		{"SELECT U&'\\0064rop'", "Unicode-escape"},
		{"SELECT U&\"\\0070g_read_file\"('x')", "Unicode-escape"},
		{"SELECT 1\x00; DROP TABLE turns", "NUL byte"},
		{"SELECT '\xff'", "not valid UTF-8"},
		{"SELECT 1update", "UPDATE"},
		{"SELECT 1 FROM turns WHERE $1 = 1; SELECT 2", "only one statement"},
		{"SELECT $ 1", "stray '$'"},
	} {
		err := Validate(tt.sql)
		var r *RefusedError
		if !errors.As(err, &r) {
			t.Errorf("Validate(%q) = %v, want a refusal", tt.sql, err)
			continue
		}
		if !strings.Contains(r.Reason, tt.want) {
			t.Errorf("Validate(%q) reason %q, want it to mention %q", tt.sql, r.Reason, tt.want)
		}
	}
}

func TestTokenize(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		sql  string
		want []string // kind:text
	}{
		{"SELECT 1", []string{"identifier:select", "number:1"}},
		{"select 'a''b' , E'c\\'d'", []string{"identifier:select", "string:'a''b'", "punctuation:,", "string:E'c\\'d'"}},
		{"/* x /* y */ z */ a -- b\nc", []string{"identifier:a", "identifier:c"}},
		{`"Quoted ""name"""`, []string{`quoted identifier:Quoted "name"`}},
		{"$a$ x $b$ $a$$$y$$", []string{"dollar-quoted string:$a$ x $b$ $a$", "dollar-quoted string:$$y$$"}},
		{"$1::int", []string{"parameter:$1", "punctuation:::", "identifier:int"}},
		{"a<>b", []string{"identifier:a", "operator:<>", "identifier:b"}},
		{"a*/*c*/b", []string{"identifier:a", "operator:*", "identifier:b"}},
		{"1e5x", []string{"number:1e5", "identifier:x"}},
		// Continuations: one literal across a newline; E'...' escapes go on.
		{"E'a'\n'\\'' x", []string{"string:E'a'\n'\\''", "identifier:x"}},
		{"'a' -- c\n 'b' 'c'", []string{"string:'a' -- c\n 'b'", "string:'c'"}},
		{"'a' 'b'", []string{"string:'a'", "string:'b'"}},
		{"'a'\n/* c */'b'", []string{"string:'a'", "string:'b'"}},
	} {
		toks, err := tokenize(tt.sql)
		if err != nil {
			t.Errorf("tokenize(%q): %v", tt.sql, err)
			continue
		}
		got := make([]string, len(toks))
		for i, tok := range toks {
			got[i] = tok.Kind.String() + ":" + tok.Text
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("tokenize(%q)\ngot  %q\nwant %q", tt.sql, got, tt.want)
		}
	}
}

// FuzzValidate: the validator never panics, and whatever it accepts is,
// by its own tokenizer, exactly one statement that starts with a read
// keyword and holds no denied keyword or function name.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		"SELECT 1", "SELECT 'a''b'; DROP", "SELECT $$x$$", "SELECT E'\\''", "/* /* */ */ SELECT 1",
		"WITH d AS (DELETE FROM t) SELECT 1", `SELECT "a""b"`, "SELECT 1 -- x\n;", "EXPLAIN SELECT 1",
		"SELECT $a$ $b$ $a$", "(SELECT 1)", "VALUES (1)", "TABLE t", "SELECT pg_read_file('x')",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		if Validate(sql) != nil {
			return
		}
		toks, err := tokenize(sql)
		if err != nil {
			t.Fatalf("accepted %q, which does not tokenize: %v", sql, err)
		}
		stmt, err := oneStatement(toks)
		if err != nil {
			t.Fatalf("accepted %q, which is not one statement: %v", sql, err)
		}
		first := stmt[0]
		if first.Kind == tokPunct && first.Text == "(" {
			first = firstAfterParens(stmt)
		}
		if first.Kind != tokIdent || !startKeywords[first.Text] {
			t.Fatalf("accepted %q, which starts with %q", sql, first.Text)
		}
		for _, tok := range stmt {
			switch tok.Kind {
			case tokIdent:
				if _, denied := deniedKeywords[tok.Text]; denied {
					t.Fatalf("accepted %q, which holds %q", sql, tok.Text)
				}
				if checkName(tok.Text) != nil {
					t.Fatalf("accepted %q, which names %q", sql, tok.Text)
				}
			case tokQuotedIdent:
				if checkName(strings.ToLower(tok.Text)) != nil {
					t.Fatalf("accepted %q, which names %q", sql, tok.Text)
				}
			case tokSemicolon:
				t.Fatalf("accepted %q, which has a ';' inside", sql)
			}
		}
	})
}
