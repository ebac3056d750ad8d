package app

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
)

// analyticsLine is what the test reads of analytics' JSON log.
type analyticsLine struct {
	Msg        string `json:"msg"`
	Addr       string `json:"addr"`
	SQLTimeout string `json:"sql_timeout"`
}

// startAnalytics builds the analytics service and runs it on c's database
// schema and Redis prefix, with a read-only role of its own, and returns
// its base URL and its log lines.
func startAnalytics(t *testing.T, c *chat) (string, <-chan analyticsLine) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "analytics")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/analytics")
	build.Dir = filepath.Join("..", "..", "..", "analytics")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build analytics: %v\n%s", err, out)
	}

	u, err := url.Parse(c.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	role := "ro_" + strings.ToLower(rand.Text()[:12])
	ctx := context.Background()
	for _, sql := range []string{
		"CREATE ROLE " + role + " LOGIN NOINHERIT",
		"GRANT USAGE ON SCHEMA " + schema + " TO " + role,
		"ALTER ROLE " + role + " SET default_transaction_read_only = on",
		"ALTER ROLE " + role + " SET statement_timeout = '30s'",
		"ALTER ROLE " + role + " SET temp_file_limit = '1GB'",
	} {
		if _, err := c.db.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	ro := *u
	ro.User = url.User(role)

	cmd := exec.CommandContext(t.Context(), bin)
	cmd.Env = append(os.Environ(),
		"ANALYTICS_ADDR=127.0.0.1:0", "LOG_FORMAT=json", "SVC_CODE_HOME="+t.TempDir(),
		"SVC_INTERNAL_SECRET="+testSecret, "SVC_INTERNAL_SECRET_FILE=",
		"REDIS_URL="+testRedisURL(), "REDIS_PREFIX=test:"+t.Name()+":",
		"DATABASE_URL="+c.dbURL, "READONLY_DATABASE_URL="+ro.String(),
	)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan analyticsLine, 100)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Logf("analytics: %s", sc.Text())
			var l analyticsLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				select {
				case lines <- l:
				default:
				}
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		ctx := context.Background()
		_, _ = c.db.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, role)
		for _, sql := range []string{"DROP OWNED BY " + role, "DROP ROLE " + role} {
			if _, err := c.db.Exec(ctx, sql); err != nil {
				t.Errorf("%s: %v", sql, err)
			}
		}
	})
	l := waitLine(t, lines, "listening", func(l analyticsLine) bool { return l.Msg == "listening" })
	return "http://" + l.Addr, lines
}

// waitLine waits up to 30 s for a log line that match accepts.
func waitLine(t *testing.T, lines <-chan analyticsLine, what string, match func(analyticsLine) bool) analyticsLine {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l := <-lines:
			if match(l) {
				return l
			}
		case <-deadline:
			t.Fatalf("analytics logged no %s within 30s", what)
		}
	}
}

// postSQL sends sql to analytics' SQL endpoint and decodes the answer.
func postSQL(t *testing.T, base, sql string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/api/shadow-db/sql", strings.NewReader(sql))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set(protocol.HeaderInternal, testSecret)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	return resp.StatusCode, body
}

// TestSQLTimeoutChangeAppliesAtOnce: a change of shadow_db.sql_timeout_s
// through chat's route reaches analytics over Redis, which re-reads it at
// once: its next query has the new deadline (issue 15: up to 5 s later).
func TestSQLTimeoutChangeAppliesAtOnce(t *testing.T) {
	c := startChat(t, notFound)
	base, lines := startAnalytics(t, c)
	// Subscribed: the first re-read, on the subscription.
	waitLine(t, lines, "re-read on subscribing", func(l analyticsLine) bool { return l.SQLTimeout == "30s" })
	// A query now reads the deadline (30 s) and would reuse it for 5 s.
	if status, body := postSQL(t, base, "SELECT 1 AS one"); status != http.StatusOK {
		t.Fatalf("first query: %d %v", status, body)
	}

	c.do(http.MethodPut, "/api/app/config", `{"shadow_db.sql_timeout_s": 1}`).want(t, http.StatusOK, "")
	waitLine(t, lines, "re-read on the change notice", func(l analyticsLine) bool { return l.SQLTimeout == "1s" })
	start := time.Now()
	status, body := postSQL(t, base, "SELECT pg_sleep(5)")
	if msg, _ := body["message"].(string); status != http.StatusBadRequest || body["error"] != "INTERRUPT" || !strings.Contains(msg, "deadline of 1s") {
		t.Errorf("the query after the change: %d %v, want INTERRUPT at the new 1 s deadline", status, body)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("the query took %v with a 1 s deadline", took)
	}
}
