package room

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/cutproxy"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/store"
	"github.com/svc-code/svc-code/services/chat/internal/store/storetest"
)

func mustStore(t *testing.T) *store.Store {
	t.Helper()
	st, _ := mustStoreURL(t)
	return st
}

// mustStoreURL is mustStore, and the URL of its schema.
func mustStoreURL(t *testing.T) (*store.Store, string) {
	t.Helper()
	return storetest.New(t)
}

// mustSessions creates n sessions and returns their ids.
func mustSessions(t *testing.T, st *store.Store, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		s, err := st.Create(context.Background(), store.NewSession{Cwd: "/tmp", Provider: "agent-sdk"})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = s.ID
	}
	return ids
}

// TestAppenderBadMessage: a message PostgreSQL refuses (a NUL in JSON)
// fails alone: the others of its batch are stored, each session's in
// order with no line skipped or reused, and each caller gets its own
// result.
func TestAppenderBadMessage(t *testing.T) {
	st := mustStore(t)
	ctx := context.Background()
	ids := mustSessions(t, st, 2)
	var bg bgGroup
	a := newAppender(st, &bg)
	var wg sync.WaitGroup
	var resA []appendRes
	var resB appendRes
	wg.Add(2)
	go func() {
		defer wg.Done()
		resA = a.appendPayloads(ids[0], store.KindAgent, 0, []json.RawMessage{
			json.RawMessage(`{"n":1}`), json.RawMessage(`{"n":"\u0000"}`), json.RawMessage(`{"n":3}`),
		})
	}()
	go func() {
		defer wg.Done()
		m, err := a.append(ids[1], store.KindAgent, json.RawMessage(`{"n":"b"}`))
		resB = appendRes{msg: m, err: err}
	}()
	wg.Wait()
	bg.Wait()
	if resA[1].err == nil {
		t.Errorf("the message with a NUL was stored at line %d", resA[1].msg.Line)
	}
	for i, want := range map[int]int64{0: 1, 2: 2} {
		if resA[i].err != nil || resA[i].msg.Line != want || resA[i].msg.SessionID != ids[0] {
			t.Errorf("A's message %d: %+v, want line %d", i, resA[i], want)
		}
	}
	if resB.err != nil || resB.msg.Line != 1 || resB.msg.SessionID != ids[1] {
		t.Errorf("B's message: %+v, want line 1", resB)
	}
	msgs, err := st.Messages(ctx, ids[0], 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Line != 1 || msgs[1].Line != 2 || string(msgs[1].Payload) != `{"n": 3}` {
		t.Errorf("A's log: %+v", msgs)
	}
	// The next append takes the next line: none was used by the refusal.
	m, err := a.append(ids[0], store.KindAgent, json.RawMessage(`{"n":4}`))
	if err != nil || m.Line != 3 {
		t.Errorf("next append: line %d, %v; want 3", m.Line, err)
	}
}

// TestAppenderPostgresOutage: while PostgreSQL cannot be reached, appends
// wait and go through once it is back, in order, rather than fail (an
// agent's messages would be missing from the log for good).
func TestAppenderPostgresOutage(t *testing.T) {
	direct, dbURL := mustStoreURL(t)
	ctx := context.Background()
	sess, err := direct.Create(ctx, store.NewSession{Cwd: "/tmp", Provider: "agent-sdk"})
	if err != nil {
		t.Fatal(err)
	}
	// The same schema, through the proxy.
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := cutproxy.New(t, u.Host)
	u.Host = proxy.Addr()
	db, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	st := store.New(db)
	var bg bgGroup
	a := newAppender(st, &bg)
	if _, err := a.append(sess.ID, store.KindAgent, json.RawMessage(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	// The pool's connections are gone too (as after a restart, once the
	// pool noticed): a batch on a connection that dies while its results
	// are read is not tried again, as it may have been committed.
	db.Reset()
	done := make(chan []appendRes, 1)
	go func() {
		done <- a.appendPayloads(sess.ID, store.KindAgent, 0, []json.RawMessage{json.RawMessage(`{"n":2}`), json.RawMessage(`{"n":3}`)})
	}()
	select {
	case res := <-done:
		t.Fatalf("appended while PostgreSQL was unreachable: %+v (%v)", res, res[0].err)
	case <-time.After(300 * time.Millisecond): // the outage
	}
	proxy.Heal()
	res := <-done
	bg.Wait()
	for i, r := range res {
		if r.err != nil || r.msg.Line != int64(i+2) {
			t.Errorf("message %d: line %d, %v; want line %d", i, r.msg.Line, r.err, i+2)
		}
	}
	msgs, err := direct.Messages(ctx, sess.ID, 0, 10)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("log: %d messages, %v; want 3", len(msgs), err)
	}
}

// TestPublishQueueFullKeepsPermWrites: when the queue for Redis is full,
// the older frames are dropped but not the perm hash's writes.
func TestPublishQueueFullKeepsPermWrites(t *testing.T) {
	m := &Manager{log: slog.New(slog.DiscardHandler)}
	p := &publisher{m: m, run: true} // no drain: the queue only grows
	write := func(context.Context, redis.Pipeliner) {}
	for i := range maxPublishQueue {
		if i%1000 == 0 {
			p.queue(pubItem{do: write})
			continue
		}
		p.queue(pubItem{channel: "c", payload: []byte("f")})
	}
	p.queue(pubItem{channel: "c", payload: []byte("last")})
	writes := 0
	for _, it := range p.q {
		if it.do != nil {
			writes++
		}
	}
	if want := maxPublishQueue / 1000; writes != want {
		t.Errorf("%d perm writes queued after the overflow, want %d", writes, want)
	}
	if len(p.q) > maxPublishQueue/2+maxPublishQueue/1000+1 {
		t.Errorf("%d items queued after the overflow, want about half of %d", len(p.q), maxPublishQueue)
	}
	if last := p.q[len(p.q)-1]; string(last.payload) != "last" {
		t.Errorf("the last frame is %q", last.payload)
	}
}

// A session whose row is held (here by another transaction) holds up its
// own messages, not the other sessions': their batch is stored while the
// held session's waits, and the held session's later message waits for
// the first and takes the next line after it.
func TestAppenderHeldSessionDoesNotBlockOthers(t *testing.T) {
	st, dbURL := mustStoreURL(t)
	ctx := context.Background()
	ids := mustSessions(t, st, 2)
	held, other := ids[0], ids[1]
	locker := storetest.Pool(t, dbURL)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, held); err != nil {
		t.Fatal(err)
	}

	var bg bgGroup
	a := newAppender(st, &bg)
	type result struct {
		msg store.Message
		err error
	}
	first := make(chan result, 1)
	go func() {
		m, err := a.append(held, store.KindAgent, json.RawMessage(`{"n":1}`))
		first <- result{m, err}
	}()
	// The held session's batch is being stored (and waits for the row)
	// before the others are queued.
	waitFor(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.busy[held]
	})
	// The held session's second message is queued before the other
	// session's (synchronously, so the order does not depend on the
	// scheduler): were it taken into a second batch in flight, it would
	// wait for the row there, both batches would be taken and the other
	// session's message could not be stored.
	second := &appendReq{
		item: store.Append{SessionID: held, Kind: store.KindAgent, Payload: json.RawMessage(`{"n":2}`)},
		done: make(chan appendRes, 1),
	}
	a.queue([]*appendReq{second})
	otherDone := make(chan result, 1)
	go func() {
		m, err := a.append(other, store.KindAgent, json.RawMessage(`{"n":"other"}`))
		otherDone <- result{m, err}
	}()
	select {
	case r := <-otherDone:
		if r.err != nil || r.msg.Line != 1 {
			t.Fatalf("the other session's append: %+v; want line 1", r)
		}
	case <-time.After(10 * time.Second):
		_ = tx.Rollback(ctx)
		t.Fatal("the other session's append waited for the held session")
	}
	// The second message waits in the appender's queue, not in
	// PostgreSQL: it is not taken while the first is being stored.
	a.mu.Lock()
	waiting := len(a.q) == 1 && a.q[0] == second
	a.mu.Unlock()
	if !waiting {
		t.Error("the held session's second message was taken while its first was being stored")
	}
	select {
	case r := <-first:
		t.Fatalf("the held session's message was stored while its row was held: %+v", r)
	case r := <-second.done:
		t.Fatalf("the held session's second message was stored before its first: %+v", r)
	default:
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r1, r2 := <-first, <-second.done
	if r1.err != nil || r1.msg.Line != 1 || r2.err != nil || r2.msg.Line != 2 {
		t.Errorf("held session: first %+v, second %+v; want lines 1 and 2", r1, r2)
	}
	bg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running != 0 || len(a.busy) != 0 || len(a.q) != 0 {
		t.Errorf("after the appends: %d running, busy %v, %d queued", a.running, a.busy, len(a.q))
	}
}

// TestAppenderRunsLongerThanABatchKeepOrder: runs of messages longer than
// a batch, of several sessions at once, are split over batches, two in
// flight; each session's messages still get its lines in the order they
// were queued (one of its batches at a time), with none lost or stored
// twice.
func TestAppenderRunsLongerThanABatchKeepOrder(t *testing.T) {
	st := mustStore(t)
	ctx := context.Background()
	const sessions, rounds, run = 4, 3, maxAppendBatch + maxAppendBatch/2
	ids := mustSessions(t, st, sessions)
	var bg bgGroup
	a := newAppender(st, &bg)
	got := make([][]appendRes, sessions)
	var wg sync.WaitGroup
	for s, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				payloads := make([]json.RawMessage, run)
				for i := range payloads {
					payloads[i] = json.RawMessage(fmt.Sprintf(`{"n":%d}`, r*run+i))
				}
				got[s] = append(got[s], a.appendPayloads(id, store.KindAgent, 0, payloads)...)
			}
		}()
	}
	wg.Wait()
	bg.Wait()
	for s, id := range ids {
		for i, res := range got[s] {
			if res.err != nil || res.msg.Line != int64(i+1) {
				t.Fatalf("session %d, message %d: line %d, %v; want line %d", s, i, res.msg.Line, res.err, i+1)
			}
		}
		msgs, err := st.Messages(ctx, id, 0, rounds*run+1)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != rounds*run {
			t.Fatalf("session %d: %d messages stored, want %d", s, len(msgs), rounds*run)
		}
		for i, m := range msgs {
			if want := fmt.Sprintf(`{"n": %d}`, i); m.Line != int64(i+1) || string(m.Payload) != want {
				t.Fatalf("session %d: line %d holds %s, want line %d to hold %s", s, m.Line, m.Payload, i+1, want)
			}
		}
	}
}

// waitFor polls cond until it holds, for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestAppenderTakesOneKindPerBatch: a batch holds agent messages only
// (committed without waiting for the disk) or none, the kind of the first
// message it takes; a message of the other kind waits for a later batch,
// and so do its session's later messages, so each session's messages keep
// their order. One batch that waits for the disk is stored at a time.
func TestAppenderTakesOneKindPerBatch(t *testing.T) {
	a := newAppender(nil, &bgGroup{})
	req := func(session, kind string) *appendReq {
		return &appendReq{item: store.Append{SessionID: session, Kind: kind, Payload: json.RawMessage(`{}`)}}
	}
	prompt := func(s string) *appendReq { return req(s, store.KindUserPrompt) }
	agent := func(s string) *appendReq { return req(s, store.KindAgent) }
	p1, a1, a2, a3, p4, a4 := prompt("s1"), agent("s1"), agent("s2"), agent("s3"), prompt("s4"), agent("s4")
	lock := agent("s5")
	lock.item.LockProvider = true
	a.q = []*appendReq{p1, a2, a1, a3, lock, p4, a4}
	take := func(want ...*appendReq) {
		t.Helper()
		a.mu.Lock()
		got := a.takeLocked()
		a.mu.Unlock()
		if len(got) != len(want) {
			t.Fatalf("took %d messages, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("message %d of the batch: session %s %s, want session %s %s", i,
					got[i].item.SessionID, got[i].item.Kind, want[i].item.SessionID, want[i].item.Kind)
			}
		}
	}
	done := func(batch ...*appendReq) { // as drain does after storing it
		for _, r := range batch {
			delete(a.busy, r.item.SessionID)
		}
		if !batch[0].item.Lazy() {
			a.durable = false
		}
	}
	// The prompts and the provider lock wait for the disk: one batch. s1's
	// agent message waits behind its prompt, s4's behind its own.
	take(p1, lock, p4)
	// Meanwhile the agent messages of the sessions not being stored.
	take(a2, a3)
	take()
	// A prompt that comes now waits for the flush in progress; an agent
	// message does not.
	p6, a7 := prompt("s6"), agent("s7")
	a.q = append(a.q, p6, a7)
	take(a7)
	done(p1, lock, p4)
	take(a1, a4)
	take(p6)
	done(a2, a3)
	done(a7)
	done(a1, a4)
	done(p6)
	if len(a.q) != 0 || len(a.busy) != 0 {
		t.Errorf("%d queued, busy %v; want none", len(a.q), a.busy)
	}
}

// TestLostTailIsNotReused: PostgreSQL lost the last commits of a session
// whose frames had gone out (a crash with agent messages committed without
// waiting for the disk): the next agent message still reaches the sockets,
// with a line after the last one they saw, not a reused one (which the
// room, and a client's after_line, would take for a frame already sent),
// and a gap notice before it says which lines the log lost.
func TestLostTailIsNotReused(t *testing.T) {
	st, dbURL := mustStoreURL(t)
	id := mustSessions(t, st, 1)[0]
	m := NewManager(Config{Store: st})
	defer m.Close()
	sink := &frameSink{}
	r, _ := m.Join(id, sink)
	defer r.Leave(sink)
	msg := func(n int) []agent.Message {
		return []agent.Message{{Type: agent.TypeAssistant, Raw: json.RawMessage(fmt.Sprintf(`{"type":"assistant","n":%d}`, n))}}
	}
	for n := range 3 {
		r.appendAgentMessages(msg(n))
	}
	storetest.LoseTail(t, storetest.Pool(t, dbURL), id, 1)
	r.appendAgentMessages(msg(3))
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var lines []int64
	for _, f := range sink.frames {
		lines = append(lines, f.Line)
	}
	if fmt.Sprint(lines) != "[1 2 3 4 5]" {
		t.Fatalf("the sockets got lines %v, want [1 2 3 4 5]", lines)
	}
	want := `{"type":"message_stored","message":{"gap":{"to_line":3,"from_line":2},"role":"notice","level":"warning","content":"lines 2 to 3 were lost: the database crashed before they reached its disk"},"line":4}`
	if got := string(sink.frames[3].Data); got != want {
		t.Errorf("line 4's frame = %s, want %s", got, want)
	}
	msgs, err := st.Messages(context.Background(), id, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, m := range msgs {
		kinds = append(kinds, fmt.Sprintf("%d:%s", m.Line, m.Kind))
	}
	if fmt.Sprint(kinds) != "[1:agent 4:notice 5:agent]" {
		t.Errorf("the log holds %v, want [1:agent 4:notice 5:agent]", kinds)
	}
}

// TestAppenderDurableBatchEnds: once a batch that waits for the disk is
// stored, the next such batch is taken (the appender no longer counts one
// in flight), and the appender ends idle.
func TestAppenderDurableBatchEnds(t *testing.T) {
	st := mustStore(t)
	id := mustSessions(t, st, 1)[0]
	var bg bgGroup
	a := newAppender(st, &bg)
	for n := range 3 {
		done := make(chan appendRes, 1)
		go func() {
			m, err := a.append(id, store.KindUserPrompt, json.RawMessage(fmt.Sprintf(`{"content":"p%d"}`, n)))
			done <- appendRes{msg: m, err: err}
		}()
		select {
		case r := <-done:
			if r.err != nil || r.msg.Line != int64(n+1) {
				t.Fatalf("prompt %d: line %d, %v; want line %d", n, r.msg.Line, r.err, n+1)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("prompt %d was never stored", n)
		}
	}
	bg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.durable || a.running != 0 || len(a.busy) != 0 || len(a.q) != 0 {
		t.Errorf("after the appends: durable %v, %d running, busy %v, %d queued", a.durable, a.running, a.busy, len(a.q))
	}
}
