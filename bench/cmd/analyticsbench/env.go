package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/bench/internal/chatproc"
	"github.com/svc-code/svc-code/bench/internal/proc"
	"github.com/svc-code/svc-code/bench/internal/stats"
	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/pgmigrate"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/turnsig"
)

// env is a running analytics on a throwaway schema, read-only role and
// Redis prefix.
type env struct {
	addr, secret string
	prefix       string
	schema       *chatproc.Schema
	role         string
	admin        *pgxpool.Pool // the schema's owner (superuser)
	readonly     *pgxpool.Pool // as the read-only role, for the direct floor
	rdb          *redis.Client
	analytics    *proc.Process
	client       *http.Client
}

// newEnv makes the schema and the role, starts analytics and checks that
// its SQL endpoint serves.
func newEnv(ctx context.Context, binary, home string) (e *env, err error) {
	e = &env{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 5 * time.Minute}}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.close())
		}
	}()
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		base = chatproc.DefaultDatabaseURL
	}
	if e.schema, err = chatproc.NewSchema(ctx, base); err != nil {
		return e, err
	}
	if e.admin, err = pgmigrate.Connect(ctx, "", "TEST_DATABASE_URL", e.schema.URL); err != nil {
		return e, err
	}
	suffix, err := proc.RandomHex(6)
	if err != nil {
		return e, err
	}
	role := "analyticsbench_ro_" + suffix
	if _, err := e.admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN NOINHERIT"); err != nil {
		return e, fmt.Errorf("create the read-only role: %w", err)
	}
	e.role = role
	if _, err := e.admin.Exec(ctx, "GRANT USAGE ON SCHEMA "+e.schema.Name+" TO "+role); err != nil {
		return e, err
	}
	// The settings provision.sh gives svc_readonly; analytics checks them.
	for _, set := range []string{"default_transaction_read_only = on", "statement_timeout = '30s'", "temp_file_limit = '1GB'"} {
		if _, err := e.admin.Exec(ctx, "ALTER ROLE "+role+" SET "+set); err != nil {
			return e, fmt.Errorf("set the read-only role's %s: %w", set, err)
		}
	}
	u, err := url.Parse(e.schema.URL)
	if err != nil {
		return e, err
	}
	u.User = url.User(role)
	roURL := u.String()

	e.prefix = "analyticsbench:" + suffix + ":"
	opts, err := redis.ParseURL(proc.RedisURL())
	if err != nil {
		return e, err
	}
	e.rdb = redis.NewClient(opts)
	if e.secret, err = proc.RandomHex(24); err != nil {
		return e, err
	}
	if e.addr, err = proc.FreeAddr(ctx); err != nil {
		return e, err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return e, err
	}
	e.analytics, err = proc.Start(ctx, proc.Config{
		Name: "analytics", Path: binary, StopTimeout: 40 * time.Second, Group: true, LogLimit: 1 << 20,
		Env: []string{
			"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SVC_CODE_HOME=" + home,
			"ANALYTICS_ADDR=" + e.addr, "ANALYTICS_CONSUMER=bench",
			"DATABASE_URL=" + e.schema.URL, "READONLY_DATABASE_URL=" + roURL,
			"REDIS_URL=" + proc.RedisURL(), "REDIS_PREFIX=" + e.prefix,
			"SVC_INTERNAL_SECRET=" + e.secret, "LOG_FORMAT=json", "LOG_LEVEL=warn",
		},
	})
	if err != nil {
		return e, err
	}
	health := proc.GetOK("http://"+e.addr+"/api/health/analytics", http.Header{protocol.HeaderInternal: []string{e.secret}})
	if err := e.analytics.WaitReady(ctx, 60*time.Second, health); err != nil {
		return e, err
	}
	if e.readonly, err = pgmigrate.Connect(ctx, "", "READONLY_DATABASE_URL", roURL); err != nil {
		return e, err
	}
	if _, err := e.postSQL(ctx, "SELECT count(*) FROM turns"); err != nil {
		return e, fmt.Errorf("the SQL endpoint does not serve: %w\n%s", err, e.analytics.Log())
	}
	return e, nil
}

// close stops analytics and removes the role, the schema and the keys.
func (e *env) close() error {
	var errs []error
	if e.analytics != nil {
		errs = append(errs, e.analytics.Stop())
	}
	if e.readonly != nil {
		e.readonly.Close()
	}
	if e.admin != nil && e.role != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, _ = e.admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, e.role)
		for _, sql := range []string{"DROP OWNED BY " + e.role, "DROP ROLE " + e.role} {
			if _, err := e.admin.Exec(ctx, sql); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", sql, err))
			}
		}
		cancel()
	}
	if e.admin != nil {
		e.admin.Close()
	}
	if e.schema != nil {
		errs = append(errs, e.schema.Drop())
	}
	if e.rdb != nil {
		errs = append(errs, proc.DeleteKeys(proc.RedisURL(), e.prefix), e.rdb.Close())
	}
	return errors.Join(errs...)
}

// generate inserts n ended turns over 10000 sessions, 100 projects, four
// models and a year, as the owner, then analyses the table.
func (e *env) generate(ctx context.Context, n int) error {
	_, err := e.admin.Exec(ctx, `
INSERT INTO turns (id, session_id, turn_number, started_at, ended_at, duration_ms, user_prompt, model, provider,
	cost, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, tool_calls, is_error, stop_reason,
	project, cwd)
SELECT 'gen' || (i % 10000) || ':' || i, 'gen' || (i % 10000), i / 10000 + 1,
	timestamptz '2026-01-01 00:00:00+00' + i * (interval '365 days' / $1),
	timestamptz '2026-01-01 00:00:00+00' + i * (interval '365 days' / $1) + interval '20 seconds', 20000,
	(ARRAY['fix the failing tests in the parser', 'explain the parser module', 'run the tests again',
		'refactor the session store', 'why does the build fail', 'add a benchmark for ingest',
		'review this diff', 'write the docs for the API'])[1 + i % 8] || ' #' || (i % 997),
	(ARRAY['claude-opus-4-1', 'claude-sonnet-4-5', 'claude-haiku-4-5', 'gpt-5-codex'])[1 + i % 4],
	CASE WHEN i % 4 = 3 THEN 'app-server' ELSE 'agent-sdk' END,
	(i % 1000) / 10000.0, 10 + i % 100, 200 + i % 2000, 30000 + i % 5000, i % 300, i % 5, i % 50 = 0, 'end_turn',
	'/home/bench/project' || (i % 100), '/home/bench/project' || (i % 100)
FROM generate_series(0, $1::int - 1) AS i`, n)
	if err != nil {
		return fmt.Errorf("generate turns: %w", err)
	}
	if _, err := e.admin.Exec(ctx, `ANALYZE turns`); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}

// postSQL sends one query to the SQL endpoint and returns the body; a
// non-200 answer is an error.
func (e *env) postSQL(ctx context.Context, sql string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+e.addr+"/api/shadow-db/sql", strings.NewReader(sql))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set(protocol.HeaderInternal, e.secret)
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("POST /api/shadow-db/sql: %d %s", resp.StatusCode, body)
	}
	return io.Copy(io.Discard, resp.Body)
}

// get sends a GET to analytics and discards the answer.
func (e *env) get(ctx context.Context, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.addr+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set(protocol.HeaderInternal, e.secret)
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// directSQL runs the query on PostgreSQL as the read-only role, in a READ
// ONLY transaction: the floor under the endpoint.
func (e *env) directSQL(ctx context.Context, sql string) (int64, error) {
	tx, err := e.readonly.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SET TRANSACTION READ ONLY"); err != nil {
		return 0, err
	}
	rows, err := tx.Query(ctx, sql)
	if err != nil {
		return 0, err
	}
	var n int64
	for rows.Next() {
		n += int64(len(rows.RawValues()))
	}
	rows.Close()
	return n, rows.Err()
}

// smallQuery is the query of the throughput load: one session's last ten
// turns.
func smallQuery(r *rand.Rand) string {
	return fmt.Sprintf("SELECT id, model, cost, started_at FROM turns WHERE session_id = 'gen%d' ORDER BY started_at DESC LIMIT 10", r.IntN(10000))
}

// smallQueries runs a closed loop of conns clients for d.
func (e *env) smallQueries(ctx context.Context, conns int, d time.Duration, do func(context.Context, string) (int64, error)) (stats.Summary, error) {
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs []error
		wg   sync.WaitGroup
	)
	deadline := time.Now().Add(d)
	start := time.Now()
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 42)) //nolint:gosec // G404: picking sessions, not secrets
			var mine []time.Duration
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				if _, err := do(ctx, smallQuery(r)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return stats.Summary{}, errors.Join(errs...)
	}
	return stats.Summarize(lat, time.Since(start)), nil
}

// aggregateQuery is a timed aggregate: through /sql or a route.
type aggregateQuery struct {
	Name string
	SQL  string // POST /api/shadow-db/sql, or
	Path string // GET
}

var aggregates = []aggregateQuery{
	{Name: "`/sql`: turns, cost and output tokens per model and month", SQL: `SELECT model, to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM') AS month,
	count(*), sum(cost), sum(output_tokens) FROM turns GROUP BY 1, 2 ORDER BY 1, 2`},
	{Name: "`/sql`: the 20 costliest sessions", SQL: `SELECT session_id, count(*), sum(cost) FROM turn_costs GROUP BY 1 ORDER BY 3 DESC LIMIT 20`},
	{Name: "`GET /api/costs` (summary and per model)", Path: "/api/costs"},
	{Name: "`GET /api/costs/trends` (a year, per day and model)", Path: "/api/costs/trends?since=2026-01-01"},
	{Name: "`GET /api/prompts/search?q=parser+tests` (ranked, top 50)", Path: "/api/prompts/search?q=parser+tests"},
	{Name: "`GET /api/shadow-db` (exact row counts, sizes)", Path: "/api/shadow-db"},
}

// aggregateRow is one aggregate's timings.
type aggregateRow struct {
	Name          string
	P50, Min, Max time.Duration
}

func (e *env) aggregate(ctx context.Context, a aggregateQuery, runs int) (aggregateRow, error) {
	var lat []time.Duration
	for range runs {
		t0 := time.Now()
		var err error
		if a.SQL != "" {
			_, err = e.postSQL(ctx, a.SQL)
		} else {
			err = e.get(ctx, a.Path)
		}
		if err != nil {
			return aggregateRow{}, fmt.Errorf("%s: %w", a.Name, err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	row := aggregateRow{Name: a.Name, P50: stats.Percentile(lat, 50), Min: lat[0], Max: lat[len(lat)-1]}
	fmt.Fprintf(os.Stderr, "%-70s p50 %s\n", a.Name, ms(row.P50))
	return row, nil
}

// ingest adds n turn_ended events one after the other, each timed from
// its XADD to its row being visible (committed) in PostgreSQL.
func (e *env) ingest(ctx context.Context, tag string, n int) (stats.Summary, error) {
	stream := e.prefix + "turns"
	lat := make([]time.Duration, 0, n)
	start := time.Now()
	for i := range n {
		id := fmt.Sprintf("ingest-%s:%d", tag, i)
		now := time.Now().UTC()
		t0 := time.Now()
		values := map[string]any{
			"event": "turn_ended", "session_id": "ingest-" + tag, "turn_id": id, "turn_number": i + 1,
			"prompt": "run the tests again", "model": "claude-sonnet-4-5", "cwd": "/home/bench/ingest",
			"provider": "agent-sdk", "cost_usd": "0.0123", "input_tokens": 12, "output_tokens": 345,
			"cache_read_tokens": 1000, "cache_creation_tokens": 50, "duration_ms": 2500, "tool_calls": 1,
			"tools":    `[{"name":"Bash","duration_ms":120,"outcome":"ok"}]`,
			"is_error": "false", "stop_reason": "end_turn", "ended_at": now.Format(time.RFC3339Nano),
		}
		// Signed as chat signs them: analytics records nothing else.
		if err := turnsig.New(internalauth.FromString(e.secret)).Sign(stream, values); err != nil {
			return stats.Summary{}, err
		}
		err := e.rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: values}).Err()
		if err != nil {
			return stats.Summary{}, fmt.Errorf("XADD: %w", err)
		}
		for {
			var ok bool
			if err := e.admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM turns WHERE id = $1)`, id).Scan(&ok); err != nil {
				return stats.Summary{}, err
			}
			if ok {
				break
			}
			if time.Since(t0) > time.Minute {
				return stats.Summary{}, fmt.Errorf("turn %s not recorded within a minute\n%s", id, e.analytics.Log())
			}
			time.Sleep(200 * time.Microsecond)
		}
		lat = append(lat, time.Since(t0))
	}
	s := stats.Summarize(lat, time.Since(start))
	fmt.Fprintf(os.Stderr, "ingest %-8s p50 %s p99 %s\n", tag, ms(s.P50), ms(s.P99))
	return s, nil
}

// hostileQueries are what the hostile clients send, in turn: a CPU-bound
// join that runs until the deadline, a sorted dump of every turn, a huge
// string aggregate and a join of every project's turns with each other.
var hostileQueries = []string{
	`SELECT count(*) FROM turns a, turns b WHERE a.cost + b.cost > 1000`,
	`SELECT * FROM turns ORDER BY md5(user_prompt || id)`,
	`SELECT length(string_agg(user_prompt || cwd, ',')) FROM turns`,
	`SELECT count(*) FROM turns a JOIN turns b ON a.project = b.project WHERE a.cost > b.cost`,
}

// activeHostile counts the read-only role's statements running in
// PostgreSQL (client backends: their parallel workers are not counted).
func (e *env) activeHostile(ctx context.Context) (int, error) {
	var n int
	err := e.admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE usename = $1 AND state = 'active' AND backend_type = 'client backend'`, e.role).Scan(&n)
	return n, err
}

// ingestUnderLoad runs the ingest measure while hostile clients keep the
// SQL endpoint busy; it reports how many hostile queries finished and
// their answers' status codes.
func (e *env) ingestUnderLoad(ctx context.Context, tag string, n, hostile int) (s stats.Summary, done int, codes map[string]int, active [2]int, err error) {
	hctx, stop := context.WithCancel(ctx)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	codes = map[string]int{}
	for i := range hostile {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := i; hctx.Err() == nil; k++ {
				_, err := e.postSQL(hctx, hostileQueries[k%len(hostileQueries)])
				if hctx.Err() != nil {
					return
				}
				mu.Lock()
				done++
				code := "200"
				if err != nil {
					code = err.Error()
					if i := strings.Index(code, ": "); i >= 0 && len(code) > i+5 {
						code = code[i+2 : i+5] // the status
					}
				}
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	// Let the hostile queries get going before the first event.
	select {
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
	}
	if active[0], err = e.activeHostile(ctx); err == nil {
		s, err = e.ingest(ctx, tag, n)
	}
	if err == nil {
		active[1], err = e.activeHostile(ctx)
	}
	stop()
	wg.Wait()
	return s, done, codes, active, err
}

// drain waits until the read-only role runs no statement (the hostile
// clients are gone but their statements may still run in PostgreSQL), so
// that a baseline is not measured under their load; it returns how long
// that took.
func (e *env) drain(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	for {
		n, err := e.activeHostile(ctx)
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return time.Since(start), nil
		}
		if time.Since(start) > 2*time.Minute {
			return 0, fmt.Errorf("%d read-only statements still run 2 min after their clients left", n)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// deadLetters is the length of the dead-letter stream (0 expected).
func (e *env) deadLetters(ctx context.Context) (int64, error) {
	return e.rdb.XLen(ctx, e.prefix+"turns:dead").Result()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
