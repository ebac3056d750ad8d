package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/cutproxy"
	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
)

// TestChatMultiPublishOutage: the owner loses Redis for longer than the
// client's own retries while its agent asks a permission; once Redis is
// back the request (frame and pending entry) reaches the other instance:
// a publish that failed is sent again, in order, not dropped.
func TestChatMultiPublishOutage(t *testing.T) {
	db := pgmigratetest.MustSchema(t)
	proxy, viaProxy := cutproxy.ForURL(t, testRedisURL(), "6379")
	a := startInstance(t, db, map[string]string{EnvOwnerTTL: "6s", "REDIS_URL": viaProxy}, notFound, nil, nil)
	b := startInstance(t, db, map[string]string{EnvOwnerTTL: "6s"}, notFound, nil, nil)
	a.do("PUT", "/api/app/provider-path/claude", `{"path":`+quote(fake(t))+`}`).want(t, 200, "")
	wa, conn := a.connect()
	id := conn.str("session_id")
	wa.send(map[string]any{"type": "user_message", "content": "hello there"})
	wa.until("result", isResult) // a owns the session now
	wb, _ := b.join(id, -1)

	proxy.Cut()
	wa.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	req := wa.until("permission_request", isType("permission_request"))
	rid := req[len(req)-1].str("request_id")
	// The outage lasts past go-redis's own retries (a few tens of ms).
	time.Sleep(time.Second)
	proxy.Heal()

	breq := wb.until("permission_request", isType("permission_request"))
	if got := breq[len(breq)-1].str("request_id"); got != rid {
		t.Fatalf("B's request_id %q, want %q", got, rid)
	}
	checkLines(t, "B", breq)
	stored := false
	for _, f := range breq {
		stored = stored || f.str("type") == "message_stored"
	}
	if !stored {
		t.Errorf("B got no message_stored for the prompt sent during the outage: %v", breq)
	}
	// The pending entry was written too: a new socket on B gets it replayed.
	wc, _ := b.join(id, -1)
	if f := wc.next(); f.str("type") != "permission_request" || f["replay"] != true || f.str("request_id") != rid {
		t.Fatalf("after connected on B: %v, want the replayed request", f)
	}
	// Answered on A: a command from B would need A subscribed again,
	// which go-redis does on its own schedule.
	wa.send(map[string]any{"type": "permission_response", "request_id": rid, "behavior": "allow"})
	for name, w := range map[string]*wsClient{"A": wa, "B": wb, "C": wc} {
		res := w.until("permission_resolved", isType("permission_resolved"))
		if f := res[len(res)-1]; f["ok"] != true || f.str("request_id") != rid {
			t.Errorf("%s: permission_resolved = %v", name, f)
		}
		w.until("result", isResult)
	}
}

// TestChatMultiOwnerCutOff: the owner loses Redis for longer than the
// TTL. It cannot renew its claim, which expires, and the instance with
// the other socket takes the session over: the cut-off owner must have
// ended its process (its socket told with session_ended) before that, so
// that two processes never run the session; once Redis is back the
// session goes on with one process.
func TestChatMultiOwnerCutOff(t *testing.T) {
	db := pgmigratetest.MustSchema(t)
	proxy, viaProxy := cutproxy.ForURL(t, testRedisURL(), "6379")
	extra := map[string]string{EnvOwnerTTL: "1500ms"}
	a := startInstance(t, db, map[string]string{EnvOwnerTTL: "1500ms", "REDIS_URL": viaProxy}, notFound, nil, nil)
	b := startInstance(t, db, extra, notFound, nil, nil)
	a.do("PUT", "/api/app/provider-path/claude", `{"path":`+quote(fake(t))+`}`).want(t, 200, "")
	wa, conn := a.connect()
	id := conn.str("session_id")
	wa.send(map[string]any{"type": "user_message", "content": "hello there"})
	wa.until("result", isResult) // a owns the session, its process lives
	wb, _ := b.join(id, -1)

	rdb := newTestRedis(t)
	ctx := context.Background()
	ownerKey := "test:" + t.Name() + ":chat:owner:" + id
	ownerA := rdb.Get(ctx, ownerKey).Val()
	if ownerA == "" {
		t.Fatal("no owner after the first turn")
	}

	proxy.Cut()
	ended := wa.until("session_ended", isType("session_ended"))
	if owner := rdb.Get(ctx, ownerKey).Val(); owner != ownerA && owner != "" {
		t.Errorf("A ended its process after %q took the session over: two processes ran it", owner)
	}
	if f := ended[len(ended)-1]; f.str("cause") != "closed" {
		t.Errorf("session_ended on A = %v", f)
	}
	proxy.Heal()

	// The session goes on with one owner (B, or A taking its claim back
	// when B's command reaches it first), the frames reaching both.
	// A command B forwards while A is not subscribed yet gets an error
	// (nobody else listens), not silence: the user sends it again.
	var seenB []frame
	for attempt := 0; ; attempt++ {
		wb.send(map[string]any{"type": "user_message", "content": "still there?"})
		seen := wb.until("an answer", func(f frame) bool {
			return f.str("type") == "user_message_stored" || strings.HasPrefix(f.str("message"), "could not reach")
		})
		seenB = append(seenB, seen...)
		if seen[len(seen)-1].str("type") == "user_message_stored" {
			break
		}
		if attempt == 50 {
			t.Fatalf("B's message never reached an owner: %v", seenB)
		}
		time.Sleep(100 * time.Millisecond)
	}
	seenB = append(seenB, wb.until("result", isResult)...)
	checkLines(t, "B", seenB)
	seenA := wa.until("result", isResult)
	if seenA[len(seenA)-1].line() != seenB[len(seenB)-1].line() {
		t.Errorf("result line on A %d, on B %d", seenA[len(seenA)-1].line(), seenB[len(seenB)-1].line())
	}
}

// TestChatMultiResubscribePending: an instance loses Redis while the
// owner's agent asks a permission; the request's frame, published then,
// never reaches it. Once subscribed again it gives its socket the request
// from the perm hash (and the log's lines it missed), once.
func TestChatMultiResubscribePending(t *testing.T) {
	db := pgmigratetest.MustSchema(t)
	proxy, viaProxy := cutproxy.ForURL(t, testRedisURL(), "6379")
	a := startInstance(t, db, map[string]string{EnvOwnerTTL: "6s"}, notFound, nil, nil)
	b := startInstance(t, db, map[string]string{EnvOwnerTTL: "6s", "REDIS_URL": viaProxy}, notFound, nil, nil)
	a.do("PUT", "/api/app/provider-path/claude", `{"path":`+quote(fake(t))+`}`).want(t, 200, "")
	wa, conn := a.connect()
	id := conn.str("session_id")
	wb, _ := b.join(id, -1)

	rdb := newTestRedis(t)
	proxy.Cut()
	wa.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	req := wa.until("permission_request", isType("permission_request"))
	rid := req[len(req)-1].str("request_id")
	// The request is in the hash, so its frame has been published (the
	// same pipeline) while B could not hear it.
	permKey := "test:" + t.Name() + ":chat:perm:" + id
	for deadline := time.Now().Add(5 * time.Second); rdb.HExists(context.Background(), permKey, rid).Val() == false; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the perm hash")
		}
	}
	proxy.Heal()

	seen := wb.until("permission_request", isType("permission_request"))
	if got := seen[len(seen)-1].str("request_id"); got != rid {
		t.Fatalf("B's request_id %q, want %q", got, rid)
	}
	stored := false
	for _, f := range seen {
		stored = stored || f.str("type") == "message_stored"
	}
	if !stored {
		t.Errorf("B did not get the prompt's line from the log: %v", seen)
	}
	wa.send(map[string]any{"type": "permission_response", "request_id": rid, "behavior": "allow"})
	for _, f := range wb.until("result", isResult) {
		if f.str("type") == "permission_request" {
			t.Errorf("B got the request twice")
		}
	}
}
