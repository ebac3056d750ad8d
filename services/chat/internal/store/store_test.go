package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/store"
	"github.com/svc-code/svc-code/services/chat/internal/store/storetest"
)

// mustStore returns a Store on a schema of the test's own, with chat's
// migrations applied.
func mustStore(t *testing.T) *store.Store {
	t.Helper()
	s, _ := mustStoreURL(t)
	return s
}

// mustStoreURL is mustStore, and the URL of its schema.
func mustStoreURL(t *testing.T) (*store.Store, string) {
	t.Helper()
	return storetest.New(t)
}

func mustCreate(t *testing.T, s *store.Store, n store.NewSession) store.Session {
	t.Helper()
	if n.Cwd == "" {
		n.Cwd = "/tmp"
	}
	if n.Provider == "" {
		n.Provider = "agent-sdk"
	}
	sess, err := s.Create(context.Background(), n)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return sess
}

func mustAppend(t *testing.T, s *store.Store, id, kind, payload string) store.Message {
	t.Helper()
	m, err := s.AppendMessage(context.Background(), id, kind, json.RawMessage(payload))
	if err != nil {
		t.Fatalf("AppendMessage: %v", err)
	}
	return m
}

func TestCreateGet(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	created := mustCreate(t, s, store.NewSession{Cwd: "/work", Provider: "app-server", Title: "hello"})
	got, err := s.Get(ctx, created.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"id length", len(got.ID), 26},
		{"title", got.Title, "hello"},
		{"cwd", got.Cwd, "/work"},
		{"provider", got.Provider, "app-server"},
		{"provider_locked", got.ProviderLocked, false},
		{"permission_mode", got.PermissionMode, "default"},
		{"archived", got.Archived, false},
		{"parent", got.ParentID, ""},
		{"turns", got.Turns, 0},
		{"cost", got.CostUSD, 0.0},
		{"last line", got.LastLine, int64(0)},
		{"created_at set", got.CreatedAt.IsZero(), false},
		{"created_at round-trips", got.CreatedAt.Equal(created.CreatedAt), true},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		})
	}
	if other := mustCreate(t, s, store.NewSession{}); other.ID == created.ID {
		t.Errorf("two sessions got the same id %s", other.ID)
	}
}

func TestNotFound(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	ops := []struct {
		name string
		run  func() error
	}{
		{"Get", func() error { _, err := s.Get(ctx, "nope"); return err }},
		{"UpdateTitle", func() error { _, err := s.UpdateTitle(ctx, "nope", "x"); return err }},
		{"SetPermissionMode", func() error { _, err := s.SetPermissionMode(ctx, "nope", "plan"); return err }},
		{"SetProvider", func() error { _, err := s.SetProvider(ctx, "nope", "app-server"); return err }},
		{"RecordTurn", func() error { _, err := s.RecordTurn(ctx, "nope", 1); return err }},
		{"SetArchived", func() error { _, err := s.SetArchived(ctx, "nope", true); return err }},
		{"SetProviderSessionID", func() error { _, err := s.SetProviderSessionID(ctx, "nope", "x"); return err }},
		{"Delete", func() error { return s.Delete(ctx, "nope") }},
		{"Fork", func() error { _, err := s.Fork(ctx, "nope"); return err }},
		{"AppendMessage", func() error {
			_, err := s.AppendMessage(ctx, "nope", store.KindAgent, json.RawMessage(`{}`))
			return err
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			if err := op.run(); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("got %v, want ErrNotFound", err)
			}
		})
	}
}

func TestUpdates(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	sess := mustCreate(t, s, store.NewSession{})
	got, err := s.UpdateTitle(ctx, sess.ID, "renamed")
	if err != nil || got.Title != "renamed" {
		t.Fatalf("UpdateTitle: %+v, %v", got, err)
	}
	if got.UpdatedAt.Before(sess.UpdatedAt) {
		t.Errorf("updated_at went back: %v before %v", got.UpdatedAt, sess.UpdatedAt)
	}
	if got, err = s.SetPermissionMode(ctx, sess.ID, "plan"); err != nil || got.PermissionMode != "plan" {
		t.Fatalf("SetPermissionMode: %+v, %v", got, err)
	}
	if got, err = s.SetProviderSessionID(ctx, sess.ID, "claude-123"); err != nil || got.ProviderSessionID != "claude-123" {
		t.Fatalf("SetProviderSessionID: %+v, %v", got, err)
	}
	if got, err = s.SetArchived(ctx, sess.ID, true); err != nil || !got.Archived {
		t.Fatalf("SetArchived: %+v, %v", got, err)
	}
	if got, err = s.RecordTurn(ctx, sess.ID, 0.25); err != nil {
		t.Fatalf("RecordTurn: %v", err)
	}
	if got, err = s.RecordTurn(ctx, sess.ID, 0.5); err != nil {
		t.Fatalf("RecordTurn: %v", err)
	}
	if got.Turns != 2 || got.CostUSD != 0.75 || !got.ProviderLocked {
		t.Errorf("after two turns: turns %d cost %v locked %v, want 2, 0.75, true", got.Turns, got.CostUSD, got.ProviderLocked)
	}
}

func TestSetProvider(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	sess := mustCreate(t, s, store.NewSession{})
	got, err := s.SetProvider(ctx, sess.ID, "app-server")
	if err != nil || got.Provider != "app-server" {
		t.Fatalf("SetProvider before the lock: %+v, %v", got, err)
	}
	// The first prompt's append locks the provider (as a room sends it).
	if _, errs, err := s.AppendMessages(ctx, []store.Append{{
		SessionID: sess.ID, Kind: store.KindUserPrompt, Payload: json.RawMessage(`{"content":"go"}`), LockProvider: true,
	}}); err != nil || errs[0] != nil {
		t.Fatalf("locking append: %v %v", err, errs)
	}
	if got, err := s.Get(ctx, sess.ID); err != nil || !got.ProviderLocked {
		t.Fatalf("after the locking append: %+v, %v", got, err)
	}
	if _, err := s.SetProvider(ctx, sess.ID, "agent-sdk"); !errors.Is(err, store.ErrProviderLocked) {
		t.Errorf("SetProvider after the lock: %v, want ErrProviderLocked", err)
	}
	if got, err := s.SetProvider(ctx, sess.ID, "app-server"); err != nil || got.Provider != "app-server" {
		t.Errorf("SetProvider to the locked provider: %+v, %v, want no change and no error", got, err)
	}
}

// TestAppendConcurrent: many writers at once get unique, gapless lines.
func TestAppendConcurrent(t *testing.T) {
	s := mustStore(t)
	sess := mustCreate(t, s, store.NewSession{})
	const writers, each = 16, 25
	lines := make(chan int64, writers*each)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				m, err := s.AppendMessage(context.Background(), sess.ID, store.KindAgent,
					json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)))
				if err != nil {
					t.Errorf("AppendMessage: %v", err)
					return
				}
				lines <- m.Line
			}
		})
	}
	wg.Wait()
	close(lines)
	var got []int64
	for l := range lines {
		got = append(got, l)
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	if len(got) != writers*each {
		t.Fatalf("got %d lines, want %d", len(got), writers*each)
	}
	for i, l := range got {
		if l != int64(i+1) {
			t.Fatalf("line %d is %d: lines are not 1..%d without gap or duplicate", i, l, writers*each)
		}
	}
	stored, err := s.Messages(context.Background(), sess.ID, 0, 1000)
	if err != nil || len(stored) != writers*each {
		t.Fatalf("Messages: %d, %v, want %d", len(stored), err, writers*each)
	}
	after, err := s.Get(context.Background(), sess.ID)
	if err != nil || after.LastLine != writers*each {
		t.Errorf("LastLine %d, %v, want %d", after.LastLine, err, writers*each)
	}
}

func TestMessages(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	sess := mustCreate(t, s, store.NewSession{})
	first := mustAppend(t, s, sess.ID, store.KindUserPrompt, `{"message":"hi"}`)
	mustAppend(t, s, sess.ID, store.KindAgent, `{"type":"assistant"}`)
	mustAppend(t, s, sess.ID, store.KindNotice, `{"text":"n"}`)
	if want := sess.ID + ":1"; first.SID() != want {
		t.Errorf("SID %q, want %q", first.SID(), want)
	}
	tests := []struct {
		name      string
		since     int64
		limit     int
		wantLines []int64
	}{
		{"all", 0, 10, []int64{1, 2, 3}},
		{"since 1", 1, 10, []int64{2, 3}},
		{"limited", 0, 2, []int64{1, 2}},
		{"past the end", 3, 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, err := s.Messages(ctx, sess.ID, tt.since, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, m := range msgs {
				got = append(got, m.Line)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantLines) {
				t.Errorf("got lines %v, want %v", got, tt.wantLines)
			}
		})
	}
	msgs, _ := s.Messages(ctx, sess.ID, 0, 1)
	if len(msgs) != 1 || msgs[0].Kind != store.KindUserPrompt || string(msgs[0].Payload) != `{"message": "hi"}` {
		t.Errorf("first message %+v", msgs)
	}
	if _, err := s.AppendMessage(ctx, sess.ID, store.KindAgent, json.RawMessage(`{not json`)); err == nil {
		t.Error("AppendMessage of malformed JSON succeeded")
	}
	if got, _ := s.Messages(ctx, sess.ID, 0, 10); len(got) != 3 {
		t.Errorf("a failed append left %d messages, want 3", len(got))
	}
}

func TestFork(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	parent := mustCreate(t, s, store.NewSession{Title: "p", Provider: "app-server"})
	t.Run("empty log", func(t *testing.T) {
		fork, err := s.Fork(ctx, parent.ID)
		if err != nil {
			t.Fatal(err)
		}
		if fork.ID == parent.ID || fork.ParentID != parent.ID || fork.Title != "p" || fork.Provider != "app-server" {
			t.Errorf("fork %+v of %+v", fork, parent)
		}
	})
	mustAppend(t, s, parent.ID, store.KindUserPrompt, `{"message":"a"}`)
	mustAppend(t, s, parent.ID, store.KindAgent, `{"type":"assistant"}`)
	if _, err := s.RecordTurn(ctx, parent.ID, 1.5); err != nil {
		t.Fatal(err)
	}
	fork, err := s.Fork(ctx, parent.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("log copied", func(t *testing.T) {
		msgs, err := s.Messages(ctx, fork.ID, 0, 10)
		if err != nil || len(msgs) != 2 || msgs[1].Line != 2 || msgs[1].Kind != store.KindAgent {
			t.Fatalf("fork's log %+v, %v", msgs, err)
		}
		if fork.LastLine != 2 || !fork.ProviderLocked || fork.Turns != 0 || fork.CostUSD != 0 {
			t.Errorf("fork %+v: want last line 2, provider locked, no turns, no cost", fork)
		}
		if m := mustAppend(t, s, fork.ID, store.KindAgent, `{}`); m.Line != 3 {
			t.Errorf("fork's next line %d, want 3", m.Line)
		}
		if msgs, _ := s.Messages(ctx, parent.ID, 0, 10); len(msgs) != 2 {
			t.Errorf("appending to the fork changed the parent's log: %d messages", len(msgs))
		}
	})
	t.Run("parent deleted", func(t *testing.T) {
		if err := s.Delete(ctx, parent.ID); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, fork.ID)
		if err != nil || got.ParentID != "" {
			t.Errorf("fork after its parent's deletion: %+v, %v, want parent_id cleared", got, err)
		}
		if msgs, _ := s.Messages(ctx, fork.ID, 0, 10); len(msgs) != 3 {
			t.Errorf("fork's log has %d messages, want 3", len(msgs))
		}
		if msgs, _ := s.Messages(ctx, parent.ID, 0, 10); len(msgs) != 0 {
			t.Errorf("deleted session still has %d messages", len(msgs))
		}
		if _, err := s.Get(ctx, parent.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get of a deleted session: %v", err)
		}
	})
}

func TestList(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	var all []store.Session
	for i := range 7 {
		cwd := "/a"
		if i%2 == 1 {
			cwd = "/b"
		}
		all = append(all, mustCreate(t, s, store.NewSession{Cwd: cwd}))
	}
	archived, err := s.SetArchived(ctx, all[0].ID, true)
	if err != nil {
		t.Fatal(err)
	}
	all[0] = archived
	// The expected order: newest first, by created_at then id.
	sort.Slice(all, func(i, j int) bool {
		if !all[i].CreatedAt.Equal(all[j].CreatedAt) {
			return all[i].CreatedAt.After(all[j].CreatedAt)
		}
		return all[i].ID > all[j].ID
	})
	want := func(keep func(store.Session) bool) []string {
		var out []string
		for _, sess := range all {
			if keep(sess) {
				out = append(out, sess.ID)
			}
		}
		return out
	}
	collect := func(t *testing.T, q store.ListQuery) (got []string, pages int) {
		t.Helper()
		for {
			page, err := s.List(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, sess := range page.Sessions {
				got = append(got, sess.ID)
			}
			if page.NextCursor == "" {
				return got, pages
			}
			q.Cursor = page.NextCursor
		}
	}
	no, yes := false, true
	every := func(store.Session) bool { return true }
	tests := []struct {
		name      string
		q         store.ListQuery
		keep      func(store.Session) bool
		wantPages int
	}{
		{"all, one page", store.ListQuery{}, every, 1},
		{"all, pages of 2", store.ListQuery{Limit: 2}, every, 4},
		{"cwd /b, pages of 1", store.ListQuery{Limit: 1, Cwd: "/b"}, func(s store.Session) bool { return s.Cwd == "/b" }, 3},
		{"live only", store.ListQuery{Archived: &no}, func(s store.Session) bool { return !s.Archived }, 1},
		{"archived only", store.ListQuery{Archived: &yes}, func(s store.Session) bool { return s.Archived }, 1},
		{"cwd /a live, pages of 2", store.ListQuery{Cwd: "/a", Archived: &no, Limit: 2}, func(s store.Session) bool { return s.Cwd == "/a" && !s.Archived }, 2},
		{"unknown cwd", store.ListQuery{Cwd: "/none"}, func(store.Session) bool { return false }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, pages := collect(t, tt.q)
			if w := want(tt.keep); fmt.Sprint(got) != fmt.Sprint(w) || pages != tt.wantPages {
				t.Errorf("got %v in %d pages, want %v in %d", got, pages, w, tt.wantPages)
			}
		})
	}
	for _, bad := range []string{"!", "bm9jb2xvbg", store.EncodeCursor(time.Now(), "X")[:3]} {
		if _, err := s.List(ctx, store.ListQuery{Cursor: bad}); !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("List with cursor %q: %v, want ErrBadCursor", bad, err)
		}
	}
}

func TestSettings(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	var v string
	if ok, err := s.Setting(ctx, "k", &v); ok || err != nil {
		t.Fatalf("unset setting: %v, %v", ok, err)
	}
	for _, want := range []string{"/bin/one", "/bin/two"} {
		if err := s.SetSetting(ctx, "k", want); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Setting(ctx, "k", &v); !ok || err != nil || v != want {
			t.Errorf("Setting: %q, %v, %v, want %q", v, ok, err, want)
		}
	}
	if err := s.DeleteSetting(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Setting(ctx, "k", &v); ok {
		t.Error("setting still set after DeleteSetting")
	}
	if err := s.DeleteSetting(ctx, "k"); err != nil {
		t.Errorf("DeleteSetting of an unset key: %v", err)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	at := time.UnixMicro(1_700_000_000_123_456)
	gotAt, gotID, err := store.DecodeCursor(store.EncodeCursor(at, "ABC:DEF"))
	if err != nil || !gotAt.Equal(at) || gotID != "ABC:DEF" {
		t.Errorf("got %v %q %v, want %v %q", gotAt, gotID, err, at, "ABC:DEF")
	}
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(store.EncodeCursor(time.UnixMicro(42), "X"))
	f.Add("")
	f.Add("!!")
	f.Fuzz(func(t *testing.T, cursor string) {
		at, id, err := store.DecodeCursor(cursor)
		if err != nil {
			return
		}
		if id == "" {
			t.Fatalf("accepted cursor %q with an empty id", cursor)
		}
		if again := store.EncodeCursor(at, id); again != cursor {
			if _, _, err := store.DecodeCursor(again); err != nil {
				t.Fatalf("re-encoded cursor %q does not decode: %v", again, err)
			}
		}
	})
}

func TestClear(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	cur := mustCreate(t, s, store.NewSession{Title: "c", Provider: "agent-sdk"})
	mustAppend(t, s, cur.ID, store.KindUserPrompt, `{"message":"a"}`)
	mustAppend(t, s, cur.ID, store.KindAgent, `{"type":"assistant"}`)
	if _, err := s.RecordTurn(ctx, cur.ID, 1.5); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetProviderSessionID(ctx, cur.ID, "conv-1"); err != nil {
		t.Fatal(err)
	}
	arch, err := s.Clear(ctx, cur.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !arch.Archived || arch.ParentID != cur.ID || arch.Title != "c (archived)" || arch.Turns != 1 ||
		arch.CostUSD != 1.5 || arch.ProviderSessionID != "conv-1" || arch.LastLine != 2 || arch.Cwd != cur.Cwd {
		t.Errorf("archived %+v", arch)
	}
	if msgs, err := s.Messages(ctx, arch.ID, 0, 10); err != nil || len(msgs) != 2 || msgs[1].SessionID != arch.ID {
		t.Errorf("archived log %+v, %v", msgs, err)
	}
	if msgs, err := s.Messages(ctx, cur.ID, 0, 10); err != nil || len(msgs) != 0 {
		t.Errorf("cleared log %+v, %v", msgs, err)
	}
	got, err := s.Get(ctx, cur.ID)
	if err != nil || got.Archived || got.ProviderSessionID != "" || got.Turns != 0 || got.CostUSD != 0 || got.LastLine != 2 {
		t.Errorf("cleared %+v, %v", got, err)
	}
	if m := mustAppend(t, s, cur.ID, store.KindAgent, `{}`); m.Line != 3 {
		t.Errorf("line after clear %d, want 3 (monotonic)", m.Line)
	}
	if _, err := s.Clear(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("clear unknown: %v", err)
	}
}

// Deleting a parent while a batch holds one of its forks and then wants
// the parent (an append batch locks its sessions in id order) waits for
// the batch instead of deadlocking with it: the delete locks the rows it
// changes in the same order.
func TestDeleteParentDoesNotDeadlockWithAppends(t *testing.T) {
	s, dbURL := mustStoreURL(t)
	ctx := context.Background()
	// A fork whose id sorts before its parent's: the batch locks it first.
	var parent, fork store.Session
	for range 50 {
		p := mustCreate(t, s, store.NewSession{})
		f, err := s.Fork(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if f.ID < p.ID {
			parent, fork = p, f
			break
		}
	}
	if parent.ID == "" {
		t.Fatal("no fork with an id before its parent's in 50 tries")
	}
	other := storetest.Pool(t, dbURL)
	batch, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = batch.Rollback(ctx) }()
	touch := `UPDATE sessions SET next_line = next_line WHERE id = $1`
	if _, err := batch.Exec(ctx, touch, fork.ID); err != nil {
		t.Fatal(err)
	}
	deleted := make(chan error, 1)
	go func() { deleted <- s.Delete(ctx, parent.ID) }()
	// The delete waits for a row lock.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := other.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM sessions WHERE id = $1%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the delete never waited for the fork's row")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := batch.Exec(ctx, touch, parent.ID); err != nil {
		t.Fatalf("the batch, taking the parent after the fork: %v (a deadlock with the delete)", err)
	}
	if err := batch.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := s.Get(ctx, parent.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the parent after the delete: %v, want not found", err)
	}
	if f, err := s.Get(ctx, fork.ID); err != nil || f.ParentID != "" {
		t.Errorf("the fork after the delete: parent %q, %v; want none", f.ParentID, err)
	}
}
