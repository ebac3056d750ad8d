package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/services/chat/internal/store"
	"github.com/svc-code/svc-code/services/chat/internal/store/storetest"
)

// A batch of two sessions' messages, interleaved, gets each session's next
// lines in the order given; a message of a missing session is refused
// alone.
func TestAppendMessages(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	a := mustCreate(t, s, store.NewSession{})
	b := mustCreate(t, s, store.NewSession{})
	mustAppend(t, s, a.ID, store.KindUserPrompt, `{"content":"first"}`)

	payload := func(n int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)) }
	in := []store.Append{
		{SessionID: b.ID, Kind: store.KindAgent, Payload: payload(0)},
		{SessionID: a.ID, Kind: store.KindAgent, Payload: payload(1)},
		{SessionID: "no-such-session", Kind: store.KindAgent, Payload: payload(2)},
		{SessionID: b.ID, Kind: store.KindAgent, Payload: payload(3)},
		{SessionID: a.ID, Kind: store.KindAgent, Payload: payload(4)},
	}
	out, errs, err := s.AppendMessages(ctx, in)
	if err != nil {
		t.Fatalf("AppendMessages: %v", err)
	}
	wantLines := []int64{1, 2, 0, 2, 3}
	for i, m := range out {
		if i == 2 {
			if !errors.Is(errs[i], store.ErrNotFound) {
				t.Errorf("message of a missing session: err %v, want ErrNotFound", errs[i])
			}
			continue
		}
		if errs[i] != nil {
			t.Errorf("message %d: %v", i, errs[i])
		}
		if m.Line != wantLines[i] || m.SessionID != in[i].SessionID || string(m.Payload) != string(in[i].Payload) {
			t.Errorf("message %d: got %s line %d %s, want %s line %d %s", i, m.SessionID, m.Line, m.Payload, in[i].SessionID, wantLines[i], in[i].Payload)
		}
	}
	for _, c := range []struct {
		id   string
		want []string
	}{{a.ID, []string{`{"content": "first"}`, `{"n": 1}`, `{"n": 4}`}}, {b.ID, []string{`{"n": 0}`, `{"n": 3}`}}} {
		msgs, err := s.Messages(ctx, c.id, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != len(c.want) {
			t.Fatalf("session %s: %d messages stored, want %d", c.id, len(msgs), len(c.want))
		}
		for i, m := range msgs {
			if m.Line != int64(i+1) || string(m.Payload) != c.want[i] {
				t.Errorf("session %s: line %d %s, want line %d %s", c.id, m.Line, m.Payload, i+1, c.want[i])
			}
		}
	}
	if sess, err := s.Get(ctx, a.ID); err != nil || sess.LastLine != 3 {
		t.Errorf("session a: last line %d (%v), want 3", sess.LastLine, err)
	}
}

// A statement that fails rolls the whole batch back.
func TestAppendMessagesAllOrNothing(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	a := mustCreate(t, s, store.NewSession{})
	_, _, err := s.AppendMessages(ctx, []store.Append{
		{SessionID: a.ID, Kind: store.KindAgent, Payload: json.RawMessage(`{"ok":true}`)},
		{SessionID: a.ID, Kind: store.KindAgent, Payload: json.RawMessage(`not json`)},
	})
	if err == nil {
		t.Fatal("a batch with a payload that is not JSON was accepted")
	}
	msgs, err := s.Messages(ctx, a.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 0 {
		t.Errorf("%d messages stored after the failed batch, want 0", len(msgs))
	}
	if m := mustAppend(t, s, a.ID, store.KindAgent, `{"after":true}`); m.Line != 1 {
		t.Errorf("next append got line %d, want 1 (the failed batch used no line)", m.Line)
	}
}

// An append with LockProvider locks its session's provider in the same
// statement; the other appends leave the lock as it is.
func TestAppendMessagesLockProvider(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	a := mustCreate(t, s, store.NewSession{})
	b := mustCreate(t, s, store.NewSession{})
	mustAppend(t, s, a.ID, store.KindUserPrompt, `{"content":"plain"}`)
	if sess, err := s.Get(ctx, a.ID); err != nil || sess.ProviderLocked {
		t.Fatalf("after a plain append: provider_locked %v (%v), want false", sess.ProviderLocked, err)
	}
	_, errs, err := s.AppendMessages(ctx, []store.Append{
		{SessionID: a.ID, Kind: store.KindUserPrompt, Payload: json.RawMessage(`{"content":"go"}`), LockProvider: true},
		{SessionID: b.ID, Kind: store.KindAgent, Payload: json.RawMessage(`{"n":1}`)},
	})
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("AppendMessages: %v %v", err, errs)
	}
	for _, c := range []struct {
		id       string
		locked   bool
		lastLine int64
		whichOne string
	}{{a.ID, true, 2, "a (locking append)"}, {b.ID, false, 1, "b (plain append)"}} {
		sess, err := s.Get(ctx, c.id)
		if err != nil || sess.ProviderLocked != c.locked || sess.LastLine != c.lastLine {
			t.Errorf("session %s: provider_locked %v, last line %d (%v); want %v, %d", c.whichOne, sess.ProviderLocked, sess.LastLine, err, c.locked, c.lastLine)
		}
	}
	// A lock is kept by the appends that do not ask for it.
	mustAppend(t, s, a.ID, store.KindAgent, `{"n":2}`)
	if sess, err := s.Get(ctx, a.ID); err != nil || !sess.ProviderLocked {
		t.Errorf("after a plain append to a locked session: provider_locked %v (%v), want true", sess.ProviderLocked, err)
	}
}

// A batch that cannot finish before its deadline (its session's row held
// by another transaction) is ended by the server before the caller gives
// up: it fails with PostgreSQL's error (query_canceled), and once the row
// is free nothing of it was stored (the caller, told it failed, could
// otherwise find it committed after all).
func TestAppendMessagesServerTimesOutFirst(t *testing.T) {
	s, dbURL := mustStoreURL(t)
	ctx := context.Background()
	a := mustCreate(t, s, store.NewSession{})
	locker := storetest.Pool(t, dbURL)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, a.ID); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	_, _, err = s.AppendMessages(actx, []store.Append{{SessionID: a.ID, Kind: store.KindAgent, Payload: json.RawMessage(`{"n":1}`)}})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Fatalf("append with its row held: %v; want PostgreSQL's query_canceled (57014) before the deadline", err)
	}
	if actx.Err() != nil {
		t.Error("the caller's deadline passed before the server gave up")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Messages(ctx, a.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 0 {
		t.Errorf("%d messages stored by the batch that failed", len(msgs))
	}
	// The timeout was the batch's own: the connection serves the next
	// append without it.
	if m := mustAppend(t, s, a.ID, store.KindAgent, `{"n":2}`); m.Line != 1 {
		t.Errorf("next append: line %d, want 1", m.Line)
	}
}

// A batch of agent messages alone is committed with synchronous_commit
// off; one with a user's prompt or a provider lock in it, or any batch of
// a Store made with SyncAgentMessages, waits for the disk; the setting
// ends with its transaction (the next one on the same connection is
// synchronous again).
func TestAppendMessagesCommitMode(t *testing.T) {
	_, dbURL := storetest.New(t)
	ctx := context.Background()
	open := func(opts ...store.Option) *store.Store {
		return store.New(storetest.Pool(t, dbURL, func(cfg *pgxpool.Config) {
			cfg.MaxConns = 1 // every call on the same connection
			// The baseline, whatever the server's default.
			cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
		}), opts...)
	}
	s, strict := open(), open(store.SyncAgentMessages(true))
	// A trigger notes each inserted message's commit mode.
	db := storetest.Pool(t, dbURL)
	if _, err := db.Exec(ctx, `CREATE TABLE commit_modes (n serial, payload text, mode text);
		CREATE FUNCTION note_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO commit_modes (payload, mode) VALUES (NEW.payload::text, current_setting('synchronous_commit'));
			RETURN NULL;
		END $$;
		CREATE TRIGGER note_commit_mode AFTER INSERT ON session_messages
			FOR EACH ROW EXECUTE FUNCTION note_commit_mode();`); err != nil {
		t.Fatal(err)
	}
	a := mustCreate(t, s, store.NewSession{})
	b := mustCreate(t, s, store.NewSession{})
	agent := func(id string, n int) store.Append {
		return store.Append{SessionID: id, Kind: store.KindAgent, Payload: json.RawMessage(fmt.Sprintf(`{"n": %d}`, n))}
	}
	batches := []struct {
		s    *store.Store
		in   []store.Append
		want string
	}{
		{s, []store.Append{agent(a.ID, 1), agent(b.ID, 2)}, "off"},
		{s, []store.Append{agent(a.ID, 3), {SessionID: b.ID, Kind: store.KindUserPrompt, Payload: json.RawMessage(`{"n": 4}`)}}, "on"},
		{s, []store.Append{{SessionID: a.ID, Kind: store.KindAgent, Payload: json.RawMessage(`{"n": 5}`), LockProvider: true}}, "on"},
		{s, []store.Append{agent(a.ID, 6)}, "off"},
		{strict, []store.Append{agent(a.ID, 7), agent(b.ID, 8)}, "on"},
	}
	want := map[string]string{}
	for i, bt := range batches {
		// Without a deadline too: the setting must not depend on the
		// statement timeout's statement.
		bctx, cancel := ctx, context.CancelFunc(func() {})
		if i%2 == 0 {
			bctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		}
		_, errs, err := bt.s.AppendMessages(bctx, bt.in)
		cancel()
		if err != nil || errors.Join(errs...) != nil {
			t.Fatalf("batch %d: %v %v", i, err, errs)
		}
		for _, m := range bt.in {
			want[string(m.Payload)] = bt.want
		}
	}
	// A lone append on the connection that just ran an asynchronous
	// batch is synchronous.
	mustAppend(t, s, b.ID, store.KindAgent, `{"n": 9}`)
	want[`{"n": 9}`] = "on"

	rows, err := db.Query(ctx, `SELECT payload, mode FROM commit_modes ORDER BY n`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var p, m string
		if err := rows.Scan(&p, &m); err != nil {
			t.Fatal(err)
		}
		got[p] = m
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d messages noted, want %d: %v", len(got), len(want), got)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("message %s committed with synchronous_commit %q, want %q", p, got[p], w)
		}
	}
}

// With an append pool, appends do not wait for a connection of the main
// pool: every connection of it held (by turn records, lists, replays),
// an append still goes through at once, on its own pool.
func TestAppendPoolIsTheAppendsOwn(t *testing.T) {
	_, dbURL := storetest.New(t)
	ctx := context.Background()
	one := func(cfg *pgxpool.Config) { cfg.MaxConns = 1 }
	main, appends := storetest.Pool(t, dbURL, one), storetest.Pool(t, dbURL, one)
	s := store.New(main, store.AppendPool(appends))
	shared := store.New(main)
	a := mustCreate(t, s, store.NewSession{})
	held, err := main.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()

	in := []store.Append{{SessionID: a.ID, Kind: store.KindAgent, Payload: json.RawMessage(`{"n":1}`)}}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	msgs, errs, err := s.AppendMessages(actx, in)
	if err != nil || errs[0] != nil || msgs[0].Line != 1 {
		t.Fatalf("append with the main pool held: %+v, %v, %v", msgs, errs, err)
	}
	m, err := s.AppendMessage(actx, a.ID, store.KindAgent, json.RawMessage(`{"n":2}`))
	if err != nil || m.Line != 2 {
		t.Fatalf("lone append with the main pool held: %+v, %v", m, err)
	}
	// Without one, the append waits for the main pool (here until its
	// deadline): what the append pool is for.
	sctx, scancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer scancel()
	if _, _, err := shared.AppendMessages(sctx, in); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("append on the held main pool: %v, want the deadline", err)
	}
}

// A message's line comes after Append.After: when a crash of PostgreSQL
// lost the last commits (here: next_line set back, their rows gone), lines
// already sent are not given again; the lost ones are a gap, and a gap
// notice on the line after them says so. An After below the log's end
// changes nothing.
func TestAppendAfterLostLines(t *testing.T) {
	s, dbURL := storetest.New(t)
	ctx := context.Background()
	a := mustCreate(t, s, store.NewSession{})
	for range 5 {
		mustAppend(t, s, a.ID, store.KindAgent, `{"n": 0}`)
	}
	storetest.LoseTail(t, storetest.Pool(t, dbURL), a.ID, 3) // lines 4 and 5 were sent, then lost
	ag := func(n int, after int64) store.Append {
		return store.Append{SessionID: a.ID, Kind: store.KindAgent, Payload: json.RawMessage(fmt.Sprintf(`{"n": %d}`, n)), After: after}
	}
	msgs, errs, err := s.AppendMessages(ctx, []store.Append{ag(1, 5), ag(2, 5)})
	if err != nil || errors.Join(errs...) != nil {
		t.Fatal(err, errs)
	}
	if msgs[0].Line != 7 || msgs[1].Line != 8 {
		t.Fatalf("after a lost tail (sent up to 5): lines %d and %d, want 7 and 8", msgs[0].Line, msgs[1].Line)
	}
	if g := msgs[0].Gap; g == nil || g.Line != 6 || g.Kind != store.KindNotice ||
		string(g.Payload) != `{"gap": {"to_line": 5, "from_line": 4}, "role": "notice", "level": "warning", "content": "lines 4 to 5 were lost: the database crashed before they reached its disk"}` {
		t.Fatalf("gap notice = %+v, want one for lines 4 to 5 on line 6", g)
	}
	if msgs[1].Gap != nil {
		t.Errorf("the second message has a gap notice too: %+v", msgs[1].Gap)
	}
	msgs, errs, err = s.AppendMessages(ctx, []store.Append{ag(3, 2)})
	if err != nil || errs[0] != nil || msgs[0].Line != 9 || msgs[0].Gap != nil {
		t.Fatalf("After below the log's end: %+v, %v, %v; want line 9", msgs, errs, err)
	}
	got, err := s.Messages(ctx, a.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int64
	for _, m := range got {
		lines = append(lines, m.Line)
	}
	if fmt.Sprint(lines) != "[1 2 3 6 7 8 9]" {
		t.Errorf("log lines %v, want [1 2 3 6 7 8 9]", lines)
	}
}

// SkipLostLines moves the session's next line past a client's after_line
// only when PostgreSQL started after the session's last write (lines can
// have been lost) and by at most MaxLostLines, once.
func TestSkipLostLines(t *testing.T) {
	s, dbURL := storetest.New(t)
	ctx := context.Background()
	a := mustCreate(t, s, store.NewSession{})
	for range 3 {
		mustAppend(t, s, a.ID, store.KindAgent, `{}`)
	}
	db := storetest.Pool(t, dbURL)
	last := func() int64 {
		t.Helper()
		sess, err := s.Get(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		return sess.LastLine
	}
	skip := func(line int64, want bool, wantLast int64) {
		t.Helper()
		got, err := s.SkipLostLines(ctx, a.ID, line)
		if err != nil || got != want || last() != wantLast {
			t.Fatalf("SkipLostLines(%d) = %v, %v, last line %d; want %v, last line %d", line, got, err, last(), want, wantLast)
		}
	}
	skip(10, false, 3)                     // written since PostgreSQL started: nothing was lost
	storetest.LoseTail(t, db, a.ID, 3)     // written before it started (no line lost here)
	skip(2, false, 3)                      // not past the end
	skip(3+store.MaxLostLines+1, false, 3) // too far to be a lost tail
	skip(10, true, 11)                     // lines 4 to 10 lost; a gap notice on 11 says so
	skip(20, false, 11)                    // once: the skip is the session's last write now
	if m := mustAppend(t, s, a.ID, store.KindAgent, `{}`); m.Line != 12 {
		t.Errorf("next message after the skip: line %d, want 12", m.Line)
	}
	msgs, err := s.Messages(ctx, a.ID, 3, 10)
	if err != nil || len(msgs) != 2 || msgs[0].Line != 11 || msgs[0].Kind != store.KindNotice ||
		string(msgs[0].Payload) != `{"gap": {"to_line": 10, "from_line": 4}, "role": "notice", "level": "warning", "content": "lines 4 to 10 were lost: the database crashed before they reached its disk"}` {
		t.Errorf("the log after line 3: %+v, %v; want the gap notice on 11, then 12", msgs, err)
	}
}

// An append sent again with its key (the first try committed, its answer
// lost) returns the stored message and stores nothing more.
func TestAppendKeyIsIdempotent(t *testing.T) {
	s, _ := storetest.New(t)
	ctx := context.Background()
	a := mustCreate(t, s, store.NewSession{})
	key := store.NewAppendKey()
	in := []store.Append{
		{SessionID: a.ID, Kind: store.KindAgent, Payload: json.RawMessage(`{"n": 1}`), Key: key},
		{SessionID: a.ID, Kind: store.KindAgent, Payload: json.RawMessage(`{"n": 2}`), Key: store.NewAppendKey()},
	}
	first, errs, err := s.AppendMessages(ctx, in)
	if err != nil || errors.Join(errs...) != nil {
		t.Fatal(err, errs)
	}
	again, errs, err := s.AppendMessages(ctx, in)
	if err != nil || errors.Join(errs...) != nil {
		t.Fatal(err, errs)
	}
	for i := range in {
		if again[i].Line != first[i].Line || !again[i].CreatedAt.Equal(first[i].CreatedAt) {
			t.Errorf("message %d sent again: line %d at %v, want line %d at %v", i, again[i].Line, again[i].CreatedAt, first[i].Line, first[i].CreatedAt)
		}
	}
	m, err := s.AppendMessage(ctx, a.ID, store.KindAgent, json.RawMessage(`{"n": 3}`))
	if err != nil || m.Line != 3 {
		t.Fatalf("next append: %+v, %v; want line 3", m, err)
	}
	// The same key in another session is another message.
	b := mustCreate(t, s, store.NewSession{})
	other, errs, err := s.AppendMessages(ctx, []store.Append{{SessionID: b.ID, Kind: store.KindAgent, Payload: json.RawMessage(`{}`), Key: key}})
	if err != nil || errs[0] != nil || other[0].Line != 1 {
		t.Fatalf("the key in another session: %+v, %v, %v", other, errs, err)
	}
}
