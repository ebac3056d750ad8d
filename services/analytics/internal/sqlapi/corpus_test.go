package sqlapi

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// loadCorpus reads testdata/hostile.sql: statements separated by lines
// "-- ====", the file's leading comment skipped.
func loadCorpus(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("testdata/hostile.sql")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(raw), "\n-- ====\n")
	var out []string
	for _, p := range parts[1:] {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	if len(out) < 60 {
		t.Fatalf("the corpus has %d statements, want at least 60", len(out))
	}
	return out
}

// TestHostileCorpus runs every hostile statement through the endpoint
// with all three fences: each is refused, or runs with no lasting effect.
func TestHostileCorpus(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{timeout: 2 * time.Second})
	runCorpus(t, e)
}

// TestHostileCorpusWithoutValidator takes the first fence away: the role
// and the READ ONLY transaction (always rolled back, its connection reset
// after) must still leave nothing behind.
func TestHostileCorpusWithoutValidator(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{timeout: 2 * time.Second})
	e.h.validate = func(string) error { return nil }
	runCorpus(t, e)
}

func runCorpus(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	// A listener on the corpus' channel: at the end, the first
	// notification it gets must be the test's own.
	listener, err := pgx.Connect(ctx, e.admin.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN probe"); err != nil {
		t.Fatal(err)
	}

	outcomes := map[string]int{}
	for _, sql := range loadCorpus(t) {
		before := e.snapshot(t)
		resp := e.post(t, "text/plain", sql, "")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			if r, err := decodeJSONResult(body); err != nil || r.Error != "" {
				t.Errorf("%q: 200 with a bad or cut body: %v %s", sql, err, body)
			}
			outcomes["ran"]++
		case http.StatusBadRequest:
			r, err := decodeJSONResult(body)
			if err != nil {
				t.Errorf("%q: 400 without an envelope: %s", sql, body)
			}
			outcomes[r.Error]++
		default:
			t.Errorf("%q: status %d: %s", sql, resp.StatusCode, body)
		}
		e.waitIdle(t)
		e.assertUnchanged(t, before, "after", strconvQuote(sql))
	}
	t.Logf("outcomes: %v", outcomes)

	if _, err := e.admin.Exec(ctx, "NOTIFY probe, 'end'"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := listener.WaitForNotification(wctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Payload != "end" {
		t.Errorf("a hostile statement's notification got through: %q", n.Payload)
	}
}

// waitIdle waits until the role has no busy session: a statement
// cancelled at its deadline may take a moment to leave.
func (e *env) waitIdle(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		var n int
		err := e.admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE usename = $1 AND state IS DISTINCT FROM 'idle'`, e.role).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the role still has %d busy sessions", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func strconvQuote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return `"` + strings.ReplaceAll(s, "\n", `\n`) + `"`
}
