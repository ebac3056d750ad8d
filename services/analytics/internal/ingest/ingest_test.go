package ingest_test

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/turnsig"
	"github.com/svc-code/svc-code/services/analytics/internal/ingest"
	"github.com/svc-code/svc-code/services/analytics/internal/store"
	"github.com/svc-code/svc-code/services/analytics/internal/storetest"
)

// started and ended are turn events exactly as chat writes them
// (services/chat/internal/room/turns.go).
func started(session string, line, number int, at time.Time) map[string]any {
	return map[string]any{
		"event": "turn_started", "session_id": session, "turn_id": fmt.Sprintf("%s:%d", session, line),
		"prompt": "fix the tests", "cwd": "/home/u/proj/", "provider": "agent-sdk", "model": "claude-sonnet-4-5",
		"started_at": at.UTC().Format(time.RFC3339Nano), "turn_number": number,
	}
}

func ended(session string, line, number int, at time.Time) map[string]any {
	return map[string]any{
		"event": "turn_ended", "session_id": session, "turn_id": fmt.Sprintf("%s:%d", session, line),
		"prompt": "fix the tests", "model": "claude-sonnet-4-5-20250929", "cwd": "/home/u/proj/",
		"provider": "agent-sdk", "cost_usd": "0.0123", "input_tokens": 12, "output_tokens": 345,
		"cache_read_tokens": 1000, "cache_creation_tokens": 50, "duration_ms": 2500, "tool_calls": 2,
		"tools":    `[{"name":"Bash","duration_ms":120,"outcome":"ok"},{"name":"Edit","duration_ms":null,"outcome":"denied"}]`,
		"is_error": "false", "stop_reason": "end_turn", "ended_at": at.UTC().Format(time.RFC3339Nano),
		"turn_number": number,
	}
}

type env struct {
	t      *testing.T
	db     *pgxpool.Pool
	rdb    *redis.Client
	stream string
	st     *store.Store
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db, _ := storetest.MustDB(t)
	rdb, prefix := storetest.MustRedis(t)
	return &env{t: t, db: db, rdb: rdb, stream: prefix + "turns", st: store.New(db)}
}

func (e *env) add(values map[string]any) string {
	e.t.Helper()
	id, err := e.rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: e.stream, Values: values}).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// run starts a consumer named name on rec (the store when nil) and stops
// it when the test ends, or when the returned function is called.
func (e *env) run(name string, rec ingest.Recorder, claimIdle time.Duration) func() {
	e.t.Helper()
	return e.runLog(name, rec, claimIdle, slog.New(slog.DiscardHandler))
}

// runLog is run with the consumer's log going to log.
func (e *env) runLog(name string, rec ingest.Recorder, claimIdle time.Duration, log *slog.Logger) func() {
	e.t.Helper()
	if rec == nil {
		rec = e.st
	}
	c := ingest.New(ingest.Config{
		Redis: e.rdb, Stream: e.stream, Consumer: name, Recorder: rec, Block: 100 * time.Millisecond,
		ClaimIdle: claimIdle, ClaimEvery: 50 * time.Millisecond, Log: log,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Run(ctx); err != nil {
			e.t.Errorf("Run: %v", err)
		}
	}()
	stop := func() {
		cancel()
		<-done
	}
	e.t.Cleanup(stop)
	return stop
}

// waitFor polls cond until it holds, failing after 15 s.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// pending is the number of entries of the group not acknowledged; -1
// while the group does not exist.
func (e *env) pending() int64 {
	e.t.Helper()
	p, err := e.rdb.XPending(context.Background(), e.stream, ingest.DefaultGroup).Result()
	if err != nil && strings.HasPrefix(err.Error(), "NOGROUP") {
		return -1
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return p.Count
}

// endedTurns counts the turns whose end is recorded.
func (e *env) endedTurns() int {
	return e.count(`SELECT count(*) FROM turns WHERE ended_at IS NOT NULL`)
}

func TestIngestRecordsTurn(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 123456000, time.UTC)
	e.add(started("s1", 1, 1, t0))
	e.add(ended("s1", 1, 1, t0.Add(3*time.Second)))
	e.run("a", nil, 0)
	e.waitFor("the turn's end", func() bool { return e.endedTurns() == 1 })
	e.waitFor("acknowledgements", func() bool { return e.pending() == 0 })

	var (
		id, session, prompt, model, provider, cost, stop, project, cwd string
		number, tools                                                  int
		start, end                                                     time.Time
		dur, in, out, cr, cc                                           int64
		isErr                                                          bool
	)
	err := e.db.QueryRow(context.Background(), `SELECT id, session_id, turn_number, started_at, ended_at, duration_ms,
		user_prompt, model, provider, cost::text, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens,
		tool_calls, is_error, stop_reason, project, cwd FROM turns`).Scan(&id, &session, &number, &start, &end, &dur,
		&prompt, &model, &provider, &cost, &in, &out, &cr, &cc, &tools, &isErr, &stop, &project, &cwd)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(id, session, number, start.UTC(), end.UTC(), dur, prompt, model, provider, cost, in, out, cr, cc, tools, isErr, stop, project, cwd)
	want := fmt.Sprint("s1:1", "s1", 1, t0, t0.Add(3*time.Second), 2500, "fix the tests", "claude-sonnet-4-5-20250929",
		"agent-sdk", "0.0123000000", 12, 345, 1000, 50, 2, false, "end_turn", "/home/u/proj", "/home/u/proj/")
	if got != want {
		t.Errorf("turn row\n got %s\nwant %s", got, want)
	}
	rows, err := e.db.Query(context.Background(), `SELECT seq, name, coalesce(duration_ms, -1), outcome FROM turn_tools WHERE turn_id = 's1:1' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	var toolRows []string
	for rows.Next() {
		var seq int
		var name, outcome string
		var d int64
		if err := rows.Scan(&seq, &name, &d, &outcome); err != nil {
			t.Fatal(err)
		}
		toolRows = append(toolRows, fmt.Sprintf("%d %s %d %s", seq, name, d, outcome))
	}
	if got, want := strings.Join(toolRows, "|"), "1 Bash 120 ok|2 Edit -1 denied"; got != want {
		t.Errorf("turn_tools = %s, want %s", got, want)
	}
	// The cost view has the turn under its model.
	if n := e.count(`SELECT count(*) FROM turn_costs WHERE turn_id = 's1:1' AND model = 'claude-sonnet-4-5-20250929' AND cost = 0.0123 AND day = '2026-03-01'`); n != 1 {
		t.Errorf("turn_costs rows for the turn = %d, want 1", n)
	}
}

// TestIngestIdempotent: duplicates, an end before its start, and an end
// whose start never came give one row per turn, each right.
func TestIngestIdempotent(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for range 3 {
		e.add(started("s2", 1, 1, t0))
		e.add(ended("s2", 1, 1, t0.Add(4*time.Second)))
	}
	e.add(ended("s2", 5, 2, t0.Add(time.Minute)))      // end first
	e.add(started("s2", 5, 2, t0.Add(50*time.Second))) // its start after
	e.add(ended("s2", 9, 3, t0.Add(2*time.Minute)))    // no start at all
	e.run("a", nil, 0)
	e.waitFor("all entries acknowledged", func() bool { return e.pending() == 0 && e.endedTurns() == 3 })

	if n := e.count(`SELECT count(*) FROM turns`); n != 3 {
		t.Errorf("turns = %d, want 3", n)
	}
	if n := e.count(`SELECT count(*) FROM turn_tools WHERE turn_id = 's2:1'`); n != 2 {
		t.Errorf("tool rows of s2:1 = %d, want 2 (not duplicated)", n)
	}
	var start time.Time
	var model string
	if err := e.db.QueryRow(context.Background(), `SELECT started_at, model FROM turns WHERE id = 's2:5'`).Scan(&start, &model); err != nil {
		t.Fatal(err)
	}
	if !start.Equal(t0.Add(50*time.Second)) || model != "claude-sonnet-4-5-20250929" {
		t.Errorf("s2:5 started_at %v model %q: want the start event's time and the end's model", start, model)
	}
	if err := e.db.QueryRow(context.Background(), `SELECT started_at FROM turns WHERE id = 's2:9'`).Scan(&start); err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(2*time.Minute - 2500*time.Millisecond); !start.Equal(want) {
		t.Errorf("s2:9 (no start event) started_at %v, want ended_at - duration %v", start.UTC(), want)
	}
}

// TestIngestDeadLetters: malformed entries go to the dead-letter stream,
// acknowledged, and the good ones around them are recorded.
func TestIngestDeadLetters(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC)
	bad := map[string]map[string]any{
		"unknown event":   {"event": "turn_paused", "session_id": "s", "turn_id": "s:1"},
		"no turn_id":      {"event": "turn_started", "session_id": "s", "started_at": t0.Format(time.RFC3339)},
		"bad time":        {"event": "turn_started", "session_id": "s", "turn_id": "s:2", "started_at": "yesterday"},
		"negative cost":   with(ended("s", 3, 1, t0), "cost_usd", "-1"),
		"bad tokens":      with(ended("s", 4, 1, t0), "input_tokens", "12x"),
		"bad tools":       with(ended("s", 5, 1, t0), "tools", `[{"name":"Bash","outcome":"maybe"}]`),
		"tools not JSON":  with(ended("s", 6, 1, t0), "tools", `{`),
		"NUL in prompt":   with(started("s", 7, 1, t0), "prompt", "a\x00b"),
		"bad is_error":    with(ended("s", 8, 1, t0), "is_error", "yes"),
		"bad UTF-8 model": with(started("s", 9, 1, t0), "model", "\xff\xfe"),
	}
	e.add(started("good", 1, 1, t0))
	for _, v := range bad {
		e.add(v)
	}
	e.add(ended("good", 1, 1, t0.Add(time.Second)))
	e.run("a", nil, 0)
	e.waitFor("the good turn and every entry acknowledged", func() bool { return e.endedTurns() == 1 && e.pending() == 0 })

	if n := e.count(`SELECT count(*) FROM turns`); n != 1 {
		t.Errorf("turns = %d, want only the good one", n)
	}
	dead, err := e.rdb.XRange(context.Background(), ingest.DeadStream(e.stream), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != len(bad) {
		t.Fatalf("dead letters = %d, want %d", len(dead), len(bad))
	}
	for _, d := range dead {
		reason, _ := d.Values["dead_reason"].(string)
		if !strings.HasPrefix(reason, "malformed turn event: ") || d.Values["dead_entry_id"] == "" {
			t.Errorf("dead letter %v lacks its reason or original id", d.Values)
		}
	}
}

func with(v map[string]any, k string, val any) map[string]any {
	v[k] = val
	return v
}

// TestIngestCatchUp: entries added while no consumer runs are recorded
// when one starts; a consumer restarted under its name takes up what it
// had read but not acknowledged.
func TestIngestCatchUp(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)
	e.add(ended("c", 1, 1, t0))
	stop := e.run("a", nil, 0)
	e.waitFor("the first turn", func() bool { return e.endedTurns() == 1 })
	stop()

	// Down: entries pile up; one is even read by "a" and left pending, as a
	// crash between the read and the commit leaves it.
	e.add(ended("c", 2, 2, t0.Add(time.Minute)))
	if _, err := e.rdb.XReadGroup(context.Background(), &redis.XReadGroupArgs{
		Group: ingest.DefaultGroup, Consumer: "a", Streams: []string{e.stream, ">"}, Count: 1, Block: -1,
	}).Result(); err != nil {
		t.Fatal(err)
	}
	e.add(ended("c", 3, 3, t0.Add(2*time.Minute)))
	if e.pending() != 1 {
		t.Fatalf("pending = %d, want the one read by the crashed consumer", e.pending())
	}
	e.run("a", nil, time.Hour) // no claiming: only its own pending entries
	e.waitFor("all three turns", func() bool { return e.endedTurns() == 3 && e.pending() == 0 })
}

// TestIngestClaimsDeadConsumer: an entry pending on a consumer that is gone
// is claimed by another after ClaimIdle.
func TestIngestClaimsDeadConsumer(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 5, 9, 0, 0, 0, time.UTC)
	ctx := context.Background()
	if err := e.rdb.XGroupCreateMkStream(ctx, e.stream, ingest.DefaultGroup, "0").Err(); err != nil {
		t.Fatal(err)
	}
	e.add(ended("d", 1, 1, t0))
	if _, err := e.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: ingest.DefaultGroup, Consumer: "dead", Streams: []string{e.stream, ">"}, Count: 1, Block: -1,
	}).Result(); err != nil {
		t.Fatal(err)
	}
	e.run("alive", nil, 200*time.Millisecond)
	e.waitFor("the dead consumer's entry recorded", func() bool { return e.endedTurns() == 1 && e.pending() == 0 })
}

// flaky fails its first n calls as a database that is down would.
type flaky struct {
	ingest.Recorder
	fails atomic.Int32
	calls atomic.Int32
}

var errDown = errors.New("connection refused")

func (f *flaky) RecordEnd(ctx context.Context, t store.TurnEnd) error {
	f.calls.Add(1)
	if f.fails.Add(-1) >= 0 {
		return errDown
	}
	return f.Recorder.RecordEnd(ctx, t)
}

// TestIngestRetriesDatabaseFailures: while recording fails, the entry
// stays pending (not acknowledged, not dead-lettered), and it is recorded
// once the database answers again.
func TestIngestRetriesDatabaseFailures(t *testing.T) {
	e := newEnv(t)
	f := &flaky{Recorder: e.st}
	f.fails.Store(3)
	e.add(ended("f", 1, 1, time.Now()))
	e.add(ended("f", 2, 2, time.Now()))
	e.run("a", f, time.Hour)
	e.waitFor("both turns", func() bool { return e.endedTurns() == 2 && e.pending() == 0 })
	if c := f.calls.Load(); c < 5 {
		t.Errorf("RecordEnd calls = %d, want the 3 failures retried", c)
	}
	if n, _ := e.rdb.XLen(context.Background(), ingest.DeadStream(e.stream)).Result(); n != 0 {
		t.Errorf("dead letters = %d, want 0: a database failure is not a malformed event", n)
	}
}

// TestIngestStreamRecreated: when the stream (and so its group) is deleted
// and made again by the next XADD, the consumer recreates the group and
// records what follows.
func TestIngestStreamRecreated(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 6, 9, 0, 0, 0, time.UTC)
	e.add(ended("r", 1, 1, t0))
	e.run("a", nil, time.Hour)
	e.waitFor("the first turn", func() bool { return e.endedTurns() == 1 })
	if err := e.rdb.Del(context.Background(), e.stream).Err(); err != nil {
		t.Fatal(err)
	}
	e.add(ended("r", 2, 2, t0.Add(time.Minute)))
	e.waitFor("the turn after the stream was recreated", func() bool { return e.endedTurns() == 2 && e.pending() == 0 })
}

// TestIngestParksWhatPostgresCannotStore: a well-formed entry that
// PostgreSQL refuses every time (here a working directory too long for a
// btree index entry: program_limit_exceeded, class 54) is parked in the
// dead-letter stream, not retried forever in front of the entries after it.
func TestIngestParksWhatPostgresCannotStore(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 7, 9, 0, 0, 0, time.UTC)
	raw := make([]byte, 3000)
	_, _ = rand.Read(raw)
	long := "/" + base64.RawURLEncoding.EncodeToString(raw)[:3000] // incompressible, under the 4096-byte cwd limit
	e.add(with(ended("big", 1, 1, t0), "cwd", long))
	e.add(ended("after", 1, 1, t0.Add(time.Second)))
	e.run("a", nil, time.Hour)
	e.waitFor("the entry after the refused one", func() bool { return e.endedTurns() == 1 && e.pending() == 0 })
	dead, err := e.rdb.XRange(context.Background(), ingest.DeadStream(e.stream), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].Values["turn_id"] != "big:1" {
		t.Fatalf("dead letters = %v, want the refused entry alone", dead)
	}
}

// TestIngestConcurrentConsumers: three consumers at once, two of them
// under the same name (two instances on one host with the default name),
// record every turn exactly once with its tools, and park nothing.
func TestIngestConcurrentConsumers(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 8, 9, 0, 0, 0, time.UTC)
	const n = 150
	ctx := context.Background()
	if err := e.rdb.XGroupCreateMkStream(ctx, e.stream, ingest.DefaultGroup, "0").Err(); err != nil {
		t.Fatal(err)
	}
	e.run("host", nil, 50*time.Millisecond)
	e.run("host", nil, 50*time.Millisecond)
	e.run("other", nil, 50*time.Millisecond)
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Minute)
		// Each entry twice, as chat's retried XADD or a redelivery gives.
		for range 2 {
			e.add(started("k", i, i+1, at))
			e.add(ended("k", i, i+1, at.Add(time.Second)))
		}
	}
	e.waitFor("every turn", func() bool { return e.endedTurns() == n && e.pending() == 0 })
	if got := e.count(`SELECT count(*) FROM turns`); got != n {
		t.Errorf("turns = %d, want %d", got, n)
	}
	if got := e.count(`SELECT count(*) FROM turn_tools`); got != 2*n {
		t.Errorf("tool rows = %d, want %d", got, 2*n)
	}
	if got, _ := e.rdb.XLen(ctx, ingest.DeadStream(e.stream)).Result(); got != 0 {
		t.Errorf("dead letters = %d, want 0", got)
	}
}

// syncBuffer is a log destination the test reads while the consumer writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestIngestReportsTrimmedEntries: entries chat's MAXLEN trimming removed
// before analytics read them (it was down) are lost; the consumer says so
// once, with the ids, and records what is left.
func TestIngestReportsTrimmedEntries(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 9, 9, 0, 0, 0, time.UTC)
	ctx := context.Background()
	e.add(ended("x", 1, 1, t0))
	stop := e.run("a", nil, time.Hour)
	e.waitFor("the first turn", func() bool { return e.endedTurns() == 1 && e.pending() == 0 })
	stop()
	for i := 2; i <= 6; i++ {
		e.add(ended("x", i, i, t0.Add(time.Duration(i)*time.Minute)))
	}
	if err := e.rdb.XTrimMaxLen(ctx, e.stream, 2).Err(); err != nil { // 2, 3 and 4 lost unread
		t.Fatal(err)
	}
	var logs syncBuffer
	e.runLog("a", nil, time.Hour, slog.New(slog.NewTextHandler(&logs, nil)))
	e.waitFor("the turns left", func() bool { return e.endedTurns() == 3 && e.pending() == 0 })
	e.waitFor("the loss logged", func() bool { return strings.Contains(logs.String(), "trimmed from the stream") })
	if !strings.Contains(logs.String(), "lost=3 ") {
		t.Errorf("log does not count the 3 lost entries:\n%s", logs.String())
	}
	if got := strings.Count(logs.String(), "trimmed from the stream"); got != 1 {
		t.Errorf("loss logged %d times, want once:\n%s", got, logs.String())
	}
}

// TestIngestTokenCountsKeepSumsValid: a token count no turn can have is
// malformed, so that it cannot make the cost sums (bigint) overflow and
// every cost route fail from then on.
func TestIngestTokenCountsKeepSumsValid(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	for i := 1; i <= 5; i++ {
		e.add(with(ended("huge", i, i, t0.Add(time.Duration(i)*time.Minute)), "input_tokens", "2000000000000000000"))
	}
	e.add(ended("fine", 1, 1, t0))
	e.run("a", nil, time.Hour)
	e.waitFor("every entry handled", func() bool { return e.pending() == 0 && e.endedTurns() >= 1 })
	if _, err := e.st.Costs(context.Background(), store.Filter{}); err != nil {
		t.Fatalf("cost summary after absurd token counts: %v", err)
	}
	if n, _ := e.rdb.XLen(context.Background(), ingest.DeadStream(e.stream)).Result(); n != 5 {
		t.Errorf("dead letters = %d, want the 5 absurd entries", n)
	}
}

// TestIngestPendingEntryTrimmed: an entry read but not recorded before a
// crash, then trimmed from the stream while analytics was down, does not
// hold up the entries after it when the consumer comes back.
func TestIngestPendingEntryTrimmed(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 11, 9, 0, 0, 0, time.UTC)
	ctx := context.Background()
	if err := e.rdb.XGroupCreateMkStream(ctx, e.stream, ingest.DefaultGroup, "0").Err(); err != nil {
		t.Fatal(err)
	}
	e.add(ended("p", 1, 1, t0))
	if _, err := e.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: ingest.DefaultGroup, Consumer: "a", Streams: []string{e.stream, ">"}, Count: 1, Block: -1,
	}).Result(); err != nil {
		t.Fatal(err)
	}
	e.add(ended("p", 2, 2, t0.Add(time.Minute)))
	if err := e.rdb.XTrimMaxLen(ctx, e.stream, 1).Err(); err != nil { // the pending p:1 is gone
		t.Fatal(err)
	}
	var logs syncBuffer
	e.runLog("a", nil, time.Hour, slog.New(slog.NewTextHandler(&logs, nil)))
	e.waitFor("the turn after the trimmed one, and nothing pending", func() bool { return e.endedTurns() == 1 && e.pending() == 0 })
	if !strings.Contains(logs.String(), "trimmed from the stream before it was recorded") {
		t.Errorf("the lost pending entry is not logged as trimmed:\n%s", logs.String())
	}
	if n, _ := e.rdb.XLen(ctx, ingest.DeadStream(e.stream)).Result(); n != 0 {
		t.Errorf("dead letters = %d, want 0: a trimmed entry is not a malformed one", n)
	}
}

// TestIngestLargePrompts: a turn is recorded, with its cost, whatever its
// prompt's size: about 1 MB of distinct words (a tsvector past
// PostgreSQL's 1 MiB limit if the whole prompt were indexed) is stored
// whole and searchable by its start; a prompt past 1 MiB is stored cut at
// 1 MiB, on a character boundary.
func TestIngestLargePrompts(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 12, 9, 0, 0, 0, time.UTC)
	words := make([]string, 30000)
	for i := range words {
		words[i] = fmt.Sprintf("%x", md5.Sum([]byte(strconv.Itoa(i))))
	}
	big := "needle " + strings.Join(words, " ")
	huge := "a" + strings.Repeat("ä", 1<<20) // 2 MiB + 1, so the cut falls inside an ä
	e.add(with(started("L", 1, 1, t0), "prompt", big))
	e.add(with(ended("L", 1, 1, t0.Add(time.Second)), "prompt", big))
	e.add(with(ended("L", 2, 2, t0.Add(time.Minute)), "prompt", huge))
	e.run("a", nil, time.Hour)
	e.waitFor("both turns", func() bool { return e.pending() == 0 && e.endedTurns() == 2 })
	if n, _ := e.rdb.XLen(context.Background(), ingest.DeadStream(e.stream)).Result(); n != 0 {
		t.Errorf("dead letters = %d, want 0", n)
	}
	if n := e.count(`SELECT count(*) FROM turns WHERE id = 'L:1' AND user_prompt = $1 AND cost > 0
		AND prompt_tsv @@ websearch_to_tsquery('english', 'needle')`, big); n != 1 {
		t.Errorf("L:1 not stored whole, costed and searchable")
	}
	if n := e.count(`SELECT count(*) FROM turns WHERE id = 'L:2' AND octet_length(user_prompt) = (1 << 20) - 1 AND cost > 0`); n != 1 {
		t.Errorf("L:2 not stored cut at 1 MiB (a character boundary) with its cost")
	}
}

// TestIngestRecordsOnlySignedEntries: with Verify as analytics wires it,
// an entry written into Redis without chat's signature (or signed for
// another stream, or altered after signing) adds no turn and no cost; it
// is parked with its reason. Chat's signed entries are recorded.
func TestIngestRecordsOnlySignedEntries(t *testing.T) {
	e := newEnv(t)
	key := turnsig.New(internalauth.FromString("test-internal-secret-0123456789"))
	sign := func(stream string, v map[string]any) map[string]any {
		t.Helper()
		if err := key.Sign(stream, v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	t0 := time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC)
	altered := sign(e.stream, ended("forged-c", 1, 1, t0))
	altered["cost_usd"] = "1000"
	e.add(ended("forged-a", 1, 1, t0))
	e.add(sign("other:turns", ended("forged-b", 1, 1, t0)))
	e.add(altered)
	e.add(sign(e.stream, started("good", 1, 1, t0)))
	e.add(sign(e.stream, ended("good", 1, 1, t0.Add(time.Second))))
	c := ingest.New(ingest.Config{
		Redis: e.rdb, Stream: e.stream, Consumer: "a", Recorder: e.st, Block: 100 * time.Millisecond,
		Log: slog.New(slog.DiscardHandler), Verify: func(v map[string]any) bool { return key.Verify(e.stream, v) },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	e.waitFor("every entry acknowledged", func() bool { return e.endedTurns() == 1 && e.pending() == 0 })
	if n := e.count(`SELECT count(*) FROM turns WHERE session_id <> 'good'`); n != 0 {
		t.Errorf("%d forged turns recorded", n)
	}
	dead, err := e.rdb.XRange(context.Background(), ingest.DeadStream(e.stream), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 3 {
		t.Fatalf("dead letters = %d, want the 3 forged entries", len(dead))
	}
	for _, d := range dead {
		if reason, _ := d.Values["dead_reason"].(string); !strings.Contains(reason, "not signed by chat") {
			t.Errorf("dead letter reason %q", reason)
		}
	}
}
