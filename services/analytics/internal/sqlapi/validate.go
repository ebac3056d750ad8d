package sqlapi

import (
	"fmt"
	"strings"
)

// RefusedError is the validator's verdict on a statement it does not run: the
// endpoint answers it 400 {"error":"forbidden","message":Reason}.
type RefusedError struct {
	Reason string
}

func (r *RefusedError) Error() string { return "refused: " + r.Reason }

func refuse(format string, args ...any) *RefusedError {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// startKeywords are the statements the endpoint runs: reads only.
var startKeywords = map[string]bool{
	"select": true, "with": true, "values": true, "table": true, "explain": true, "show": true,
}

// deniedKeywords are refused wherever they appear as unquoted words, even
// inside a read statement: data-modifying CTEs (WITH x AS (DELETE ...)),
// SELECT ... INTO (which creates a table), EXPLAIN ANALYZE (which runs the
// statement), and every statement keyword that changes something, so that
// no trick of nesting can reach one.
var deniedKeywords = map[string]string{
	"insert": "INSERT", "update": "UPDATE", "delete": "DELETE", "merge": "MERGE", "upsert": "UPSERT",
	"into": "INTO (SELECT ... INTO creates a table)", "returning": "RETURNING",
	"drop": "DROP", "create": "CREATE", "alter": "ALTER", "truncate": "TRUNCATE", "attach": "ATTACH",
	"detach": "DETACH", "rename": "RENAME", "comment": "COMMENT", "grant": "GRANT", "revoke": "REVOKE",
	"copy": "COPY", "set": "SET", "reset": "RESET", "discard": "DISCARD", "load": "LOAD",
	"listen": "LISTEN", "notify": "NOTIFY", "unlisten": "UNLISTEN", "lock": "LOCK",
	"vacuum": "VACUUM", "analyze": "ANALYZE", "analyse": "ANALYZE", "cluster": "CLUSTER",
	"reindex": "REINDEX", "refresh": "REFRESH", "checkpoint": "CHECKPOINT", "reassign": "REASSIGN",
	"security": "SECURITY LABEL", "import": "IMPORT",
	"execute": "EXECUTE", "prepare": "PREPARE", "deallocate": "DEALLOCATE", "do": "DO", "call": "CALL",
	"declare": "DECLARE", "begin": "BEGIN", "commit": "COMMIT", "rollback": "ROLLBACK",
	"savepoint": "SAVEPOINT", "abort": "ABORT",
}

// deniedFunctions are functions (and other names) refused wherever they
// appear, quoted or not, schema-qualified or not: they touch files or
// programs on the server, large objects, locks, other sessions, settings,
// sequences, replication or WAL, or run SQL given as text.
var deniedFunctions = map[string]string{
	"set_config":                     "changes a setting",
	"nextval":                        "advances a sequence",
	"setval":                         "sets a sequence",
	"pg_notify":                      "sends a notification",
	"pg_terminate_backend":           "ends another session",
	"pg_cancel_backend":              "cancels another session's query",
	"pg_reload_conf":                 "reloads the server configuration",
	"pg_rotate_logfile":              "rotates the server log",
	"pg_switch_wal":                  "switches the WAL file",
	"pg_promote":                     "promotes a standby",
	"pg_stat_file":                   "reads server file metadata",
	"pg_current_logfile":             "reads server file names",
	"pg_import_system_collations":    "creates collations",
	"pg_log_backend_memory_contexts": "writes to the server log",
	"pg_current_xact_id":             "assigns a transaction id",
	"txid_current":                   "assigns a transaction id",
	"pg_export_snapshot":             "exports a snapshot",
	"pg_truncate_visibility_map":     "changes a table",
	"brin_summarize_new_values":      "changes an index",
	"brin_summarize_range":           "changes an index",
	"brin_desummarize_range":         "changes an index",
	"gin_clean_pending_list":         "changes an index",
	"loread":                         "reads a large object",
	"lowrite":                        "writes a large object",
	"ts_stat":                        "runs SQL given as text",
	"ts_rewrite":                     "may run SQL given as text",
	"pg_prewarm":                     "loads relations into memory",
	"pg_nextoid":                     "assigns an OID",
	"pg_wal_replay_pause":            "pauses WAL replay",
	"pg_wal_replay_resume":           "resumes WAL replay",
}

// deniedPrefixes are refused like deniedFunctions, by name prefix.
var deniedPrefixes = []struct{ prefix, why string }{
	{"pg_read_", "reads server files"},
	{"pg_ls_", "lists server directories"},
	{"pg_file_", "writes server files"},
	{"pg_logdir_", "lists server directories"},
	{"lo_", "touches large objects"},
	{"dblink", "opens another database session"},
	{"pg_advisory", "takes advisory locks"},
	{"pg_try_advisory", "takes advisory locks"},
	{"pg_stat_reset", "resets statistics"},
	{"pg_stat_statements_reset", "resets statistics"},
	{"pg_replication_", "changes replication state"},
	{"pg_logical_", "touches logical replication or WAL"},
	{"pg_create_", "creates server objects"},
	{"pg_drop_", "drops server objects"},
	{"pg_copy_", "copies replication slots"},
	{"pg_backup_", "controls backups"},
	{"pg_start_backup", "controls backups"},
	{"pg_stop_backup", "controls backups"},
	{"binary_upgrade_", "internal upgrade functions"},
	{"query_to_xml", "runs SQL given as text"},
	{"cursor_to_xml", "reads cursors"},
	{"pg_sequence_", "touches sequences"},
}

// Validate is the first fence: it accepts exactly one read statement
// (SELECT, WITH, VALUES, TABLE, SHOW, EXPLAIN without ANALYZE) and refuses,
// with a *RefusedError, anything else: several statements, mutation and
// statement keywords anywhere outside strings and quoted identifiers
// (data-modifying CTEs, SELECT INTO, FOR UPDATE/SHARE), denied functions
// (files, programs, large objects, advisory locks, dblink, signalling other
// sessions, set_config, sequences, SQL run from text), and input it cannot
// tokenize exactly as PostgreSQL does. It is not the only fence: the role
// and the READ ONLY transaction hold even where it lets something through.
func Validate(sql string) error {
	toks, err := tokenize(sql)
	if err != nil {
		return refuse("%v", strings.TrimPrefix(err.Error(), errLex.Error()+": "))
	}
	stmt, err := oneStatement(toks)
	if err != nil {
		return err
	}
	first := stmt[0]
	if first.Kind == tokPunct && first.Text == "(" {
		// A parenthesized query: (SELECT ...) UNION (SELECT ...).
		first = firstAfterParens(stmt)
	}
	if first.Kind != tokIdent || !startKeywords[first.Text] {
		return refuse("only read statements run here (SELECT, WITH, VALUES, TABLE, SHOW, EXPLAIN); got %q", first.Text)
	}
	for i, t := range stmt {
		switch t.Kind {
		case tokIdent:
			if what, ok := deniedKeywords[t.Text]; ok {
				return refuse("%s is not allowed", what)
			}
			if err := checkName(t.Text); err != nil {
				return err
			}
			if t.Text == "for" && i+1 < len(stmt) && stmt[i+1].Kind == tokIdent {
				switch stmt[i+1].Text {
				case "share", "key", "no":
					return refuse("row locking (FOR UPDATE/SHARE) is not allowed")
				}
			}
		case tokQuotedIdent:
			if err := checkName(strings.ToLower(t.Text)); err != nil {
				return err
			}
		}
	}
	return nil
}

// oneStatement returns the tokens of the only statement in toks (without
// a trailing semicolon), or refuses an empty input or several statements.
func oneStatement(toks []token) ([]token, error) {
	end := len(toks)
	for end > 0 && toks[end-1].Kind == tokSemicolon {
		end--
	}
	if end == 0 {
		return nil, refuse("no SQL statement in the body")
	}
	for _, t := range toks[:end] {
		if t.Kind == tokSemicolon {
			return nil, refuse("only one statement per request (found a ';' at offset %d)", t.Pos)
		}
	}
	return toks[:end], nil
}

// firstAfterParens returns the first token after the opening parentheses.
func firstAfterParens(stmt []token) token {
	for _, t := range stmt {
		if t.Kind != tokPunct || t.Text != "(" {
			return t
		}
	}
	return stmt[len(stmt)-1]
}

// checkName refuses a denied function name (lowercase).
func checkName(name string) error {
	if why, ok := deniedFunctions[name]; ok {
		if why == "" {
			return refuse("%s is not allowed", name)
		}
		return refuse("%s is not allowed (%s)", name, why)
	}
	for _, p := range deniedPrefixes {
		if strings.HasPrefix(name, p.prefix) {
			return refuse("%s is not allowed (%s)", name, p.why)
		}
	}
	return nil
}
