package sqlapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
)

// TestUnsafeRoleDisablesSQL: for each way the read-only role can reach
// beyond SELECT on the analytics tables, the endpoint answers 503 naming
// the problem, and the rest of the service (here its health route) still
// serves.
func TestUnsafeRoleDisablesSQL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, grant, want string // grant: %r is the role, %s the schema
	}{
		{"pg_read_server_files", "GRANT pg_read_server_files TO %r", "member of role pg_read_server_files (reads server files)"},
		{"pg_write_server_files", "GRANT pg_write_server_files TO %r", "member of role pg_write_server_files"},
		{"pg_execute_server_program", "GRANT pg_execute_server_program TO %r", "member of role pg_execute_server_program"},
		{"pg_signal_backend", "GRANT pg_signal_backend TO %r", "member of role pg_signal_backend"},
		{"pg_read_all_data", "GRANT pg_read_all_data TO %r", "member of role pg_read_all_data"},
		{"superuser", "ALTER ROLE %r SUPERUSER", "has SUPERUSER"},
		{"createrole", "ALTER ROLE %r CREATEROLE", "has CREATEROLE"},
		{"createdb", "ALTER ROLE %r CREATEDB", "has CREATEDB"},
		{"bypassrls", "ALTER ROLE %r BYPASSRLS", "has BYPASSRLS"},
		{"insert", "GRANT INSERT ON probe_tags TO %r", "may INSERT %s.probe_tags"},
		{"column update", "GRANT UPDATE (note) ON probe_turns TO %r", "may UPDATE %s.probe_turns"},
		{"truncate", "GRANT TRUNCATE ON probe_tags TO %r", "may TRUNCATE %s.probe_tags"},
		{"select outside the analytics tables", "GRANT SELECT ON probe_secret TO %r", "may SELECT %s.probe_secret"},
		{"create in schema", "GRANT CREATE ON SCHEMA %s TO %r", "may CREATE in schema %s"},
		{"sequence", "GRANT USAGE ON SEQUENCE probe_turns_id_seq TO %r", "may use sequence %s.probe_turns_id_seq"},
		{"owner", "ALTER TABLE probe_tags OWNER TO %r", "owns %s.probe_tags"},
		{"file function", "GRANT EXECUTE ON FUNCTION pg_read_file(text) TO %r", "may EXECUTE pg_read_file(text)"},
		{"large object import", "GRANT EXECUTE ON FUNCTION lo_import(text) TO %r", "may EXECUTE lo_import(text)"},
		{"no read-only default", "ALTER ROLE %r RESET default_transaction_read_only", "setting default_transaction_read_only is off: ALTER ROLE %r SET default_transaction_read_only = on"},
		{"read-only default off", "ALTER ROLE %r SET default_transaction_read_only = off", "setting default_transaction_read_only is off"},
		{"no statement_timeout", "ALTER ROLE %r RESET statement_timeout", "setting statement_timeout is 0 (no deadline): ALTER ROLE %r SET statement_timeout = '30s'"},
		{"no temp_file_limit", "ALTER ROLE %r RESET temp_file_limit", "setting temp_file_limit is -1 (no bound): ALTER ROLE %r SET temp_file_limit = '1GB'"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var sql string
			e := newEnv(t, envOptions{beforeHandler: func(t *testing.T, e *env) {
				sql = strings.NewReplacer("%r", e.role, "%s", e.schema).Replace(tt.grant)
				mustExec(t, e.admin, sql)
			}})
			want := strings.NewReplacer("%s", e.schema, "%r", e.role).Replace(tt.want)
			status, body := e.postError(t, "text/plain", "SELECT 1", "")
			if status != http.StatusServiceUnavailable || body.Error != "unavailable" ||
				!strings.Contains(body.Message, "the SQL endpoint is disabled") || !strings.Contains(body.Message, want) {
				t.Errorf("after %s: got %d %+v, want 503 unavailable naming %q", sql, status, body, want)
			}
			req, _ := http.NewRequest(http.MethodGet, e.baseURL+"/api/health/analytics", nil)
			req.Header.Set(protocol.HeaderInternal, testSecret)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("health route answers %d while SQL is disabled, want 200", resp.StatusCode)
			}
		})
	}
}

// TestRoleFixedIsRechecked: once the grant is gone, the next request
// after the re-check interval serves again.
func TestRoleFixedIsRechecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{beforeHandler: func(t *testing.T, e *env) {
		mustExec(t, e.admin, "GRANT INSERT ON probe_tags TO "+e.role)
	}})
	if status, _ := e.postError(t, "text/plain", "SELECT 1", ""); status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", status)
	}
	mustExec(t, e.admin, "REVOKE INSERT ON probe_tags FROM "+e.role)
	e.h.roleMu.Lock()
	e.h.checkedAt = time.Now().Add(-recheckEvery)
	e.h.roleMu.Unlock()
	if r := e.query(t, "SELECT 1 AS fixed"); len(r.Rows) != 1 {
		t.Errorf("after the fix: %+v", r)
	}
}

// TestReadOnlyRoleRefusesWrites: the role and the READ ONLY transaction
// refuse writes on their own, without the validator.
func TestReadOnlyRoleRefusesWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.h.validate = func(string) error { return nil }
	for sql, want := range map[string]string{
		"INSERT INTO probe_tags VALUES (1, 'x')":                  "cannot execute INSERT in a read-only transaction",
		"SELECT nextval('probe_turns_id_seq')":                    "permission denied for sequence probe_turns_id_seq",
		"SELECT * FROM probe_secret":                              "permission denied for table probe_secret",
		"SELECT pg_read_file('/etc/passwd')":                      "permission denied for function pg_read_file",
		"SELECT 1; SELECT 2":                                      "cannot insert multiple commands into a prepared statement",
		"SELECT set_config('transaction_read_only', 'off', true)": "transaction read-write mode must be set before any query",
	} {
		status, body := e.postError(t, "text/plain", sql, "")
		if status != http.StatusBadRequest || body.Error != "sql_error" || !strings.Contains(body.Message, want) {
			t.Errorf("%s: got %d %+v, want sql_error %q", sql, status, body, want)
		}
	}
}

func TestSettingTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	if got := SettingTimeout(e.admin, log).Timeout()(ctx); got != DefaultTimeout {
		t.Errorf("without app_settings: %v, want %v", got, DefaultTimeout)
	}
	mustExec(t, e.admin, `CREATE TABLE app_settings (key text PRIMARY KEY, value jsonb NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())`)
	if got := SettingTimeout(e.admin, log).Timeout()(ctx); got != DefaultTimeout {
		t.Errorf("key unset: %v, want %v", got, DefaultTimeout)
	}
	for value, want := range map[string]time.Duration{
		`1`: time.Second, `2.5`: 2500 * time.Millisecond, `"7"`: 7 * time.Second, `3600`: time.Hour,
		`0`: DefaultTimeout, `-1`: DefaultTimeout, `3601`: DefaultTimeout, `"soon"`: DefaultTimeout,
		`{"s": 1}`: DefaultTimeout, `null`: DefaultTimeout, `true`: DefaultTimeout,
	} {
		mustExec(t, e.admin, `INSERT INTO app_settings (key, value) VALUES ($1, $2)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, timeoutRow, value)
		if got := SettingTimeout(e.admin, log).Timeout()(ctx); got != want {
			t.Errorf("%s = %s: %v, want %v", TimeoutKey, value, got, want)
		}
	}

	// End to end: the configured deadline interrupts a query.
	mustExec(t, e.admin, `UPDATE app_settings SET value = '1' WHERE key = $1`, timeoutRow)
	e.h.timeout = SettingTimeout(e.admin, log).Timeout()
	start := time.Now()
	status, body := e.postError(t, "text/plain", "SELECT pg_sleep(10)", "")
	if status != http.StatusBadRequest || body.Error != "INTERRUPT" || !strings.Contains(body.Message, "deadline of 1s") {
		t.Errorf("got %d %+v, want INTERRUPT after the configured 1 s", status, body)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %v with a 1 s deadline", took)
	}
}
