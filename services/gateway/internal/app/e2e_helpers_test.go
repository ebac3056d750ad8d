package app

import (
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// readonlyURL makes a login role with USAGE on the schema of schemaURL and
// nothing else, as provisioning makes svc_readonly, and returns schemaURL
// as that role. analytics grants it SELECT on its tables when it starts.
func readonlyURL(t *testing.T, schemaURL string) string {
	t.Helper()
	u, err := url.Parse(schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	admin := *u
	q := admin.Query()
	q.Del("search_path")
	admin.RawQuery = q.Encode()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	role, password := "ro_"+randomHex(6), randomHex(16)
	for _, stmt := range []string{
		"CREATE ROLE " + role + " LOGIN NOINHERIT PASSWORD '" + password + "'",
		"GRANT USAGE ON SCHEMA " + schema + " TO " + role,
		// The settings provision.sh gives svc_readonly; analytics checks them.
		"ALTER ROLE " + role + " SET default_transaction_read_only = on",
		"ALTER ROLE " + role + " SET statement_timeout = '30s'",
		"ALTER ROLE " + role + " SET temp_file_limit = '1GB'",
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin.String())
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		// The schema goes first (testSchemaURL's cleanup runs after this
		// one), so drop what the role owns or was granted, then the role.
		_, _ = c.Exec(context.Background(), "DROP OWNED BY "+role+" CASCADE")
		_, _ = c.Exec(context.Background(), "DROP ROLE "+role)
	})
	u.User = url.UserPassword(role, password)
	return u.String()
}

// TestShadowQueryThroughTheStack runs the real shadow-query script against
// the gateway and the real analytics, whose SQL endpoint runs as a real
// read-only role: TSV and JSON answers, SQL from stdin, a refused
// statement, and the token taken from the config file.
func TestShadowQueryThroughTheStack(t *testing.T) {
	root := repoRoot(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./services/analytics/cmd/analytics")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dbURL := testSchemaURL(t)
	prefix := "test:" + randomHex(6) + ":"
	addr := freeAddr(t)
	startProc(t, filepath.Join(bin, "analytics"), append(os.Environ(),
		"SVC_CODE_HOME="+t.TempDir(), "SVC_INTERNAL_SECRET="+testSecret, "SVC_INTERNAL_SECRET_FILE=",
		"REDIS_URL="+redisURL(), "REDIS_PREFIX="+prefix, "LOG_FORMAT=json",
		"DATABASE_URL="+dbURL, "READONLY_DATABASE_URL="+readonlyURL(t, dbURL), "ANALYTICS_ADDR="+addr,
	))
	g := startGateway(t, func(env map[string]string, _ *Config) {
		env[EnvAnalyticsURL] = "http://" + addr
		env["REDIS_PREFIX"] = prefix
	})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO turns (id, session_id, turn_number, started_at, ended_at, user_prompt, model, provider, cost, cwd, project)
		VALUES ('s1:1', 's1', 1, now(), now(), 'fix the tab'||chr(9)||'bug', 'claude-sonnet-4-5', 'agent-sdk', 0.25, '/p', '/p')`); err != nil {
		t.Fatal(err)
	}

	query := func(env []string, stdin string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, "deploy", "helpers", "shadow-query"), args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "SVC_URL=" + g.base}, env...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	withToken := []string{"SVC_TOKEN=" + g.token(), "HOME=" + t.TempDir()}

	out, stderr, code := query(withToken, "", "SELECT user_prompt, cost, model FROM turns")
	if code != 0 || out != "user_prompt\tcost\tmodel\nfix the tab\\tbug\t0.2500000000\tclaude-sonnet-4-5\n" {
		t.Errorf("TSV: code %d out %q stderr %q", code, out, stderr)
	}
	out, _, code = query(withToken, "SELECT count(*) AS n FROM turns\n", "--format=json", "-")
	if code != 0 || !strings.Contains(out, `"columns":["n"]`) || !strings.Contains(out, `"rows":[["1"]]`) {
		t.Errorf("JSON from stdin: code %d out %q", code, out)
	}
	_, stderr, code = query(withToken, "", "DELETE FROM turns")
	if code != 1 || !strings.Contains(stderr, "forbidden") {
		t.Errorf("refused statement: code %d stderr %q", code, stderr)
	}
	// The token from the config file, as a user's script would.
	home := t.TempDir()
	cfg := filepath.Join(home, ".config", "svc-code", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("api_token: "+g.token()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := query([]string{"HOME=" + home}, "", "--json", "SELECT 1 AS one"); code != 0 || !strings.Contains(out, `"rows":[["1"]]`) {
		t.Errorf("token from the config file: code %d out %q stderr %q", code, out, stderr)
	}
	if _, _, code := query([]string{"HOME=" + home, "SVC_TOKEN=svct_0_wrong"}, "", "SELECT 1"); code != 1 {
		t.Errorf("a wrong token: code %d, want 1", code)
	}
}
