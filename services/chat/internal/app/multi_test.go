package app

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/room"
)

// startPair starts two chat instances on one PostgreSQL schema and Redis
// prefix, with a short ownership TTL, agent-sdk's path set to fakeclaude.
func startPair(t *testing.T, env ...string) (a, b *chat) {
	t.Helper()
	db := pgmigratetest.MustSchema(t)
	extra := map[string]string{EnvOwnerTTL: "1500ms"}
	a = startInstance(t, db, extra, notFound, env, nil)
	b = startInstance(t, db, extra, notFound, env, nil)
	a.do(http.MethodPut, "/api/app/provider-path/claude", `{"path":`+quote(fake(t))+`}`).want(t, http.StatusOK, "")
	return a, b
}

// checkLines checks that the logged frames of fs have increasing lines.
func checkLines(t *testing.T, name string, fs []frame) {
	t.Helper()
	last := int64(0)
	for _, f := range fs {
		if n := f.line(); n != 0 {
			if n <= last {
				t.Errorf("%s: line %d after %d", name, n, last)
			}
			last = n
		}
	}
}

func TestChatMultiTextTurn(t *testing.T) {
	a, b := startPair(t)
	wa, conn := a.connect()
	id := conn.str("session_id")
	wa.send(map[string]any{"type": "user_message", "content": "hello there"})
	wa.until("result", isResult) // a owns the session now

	wb, _ := b.join(id, -1)
	wb.send(map[string]any{"type": "user_message", "content": "and again"})
	seenB := wb.until("result", isResult)
	seenA := wa.until("result", isResult)
	checkLines(t, "B", seenB)
	checkLines(t, "A", seenA)
	ack := false
	for _, f := range seenB {
		ack = ack || f.str("type") == "user_message_stored"
	}
	if !ack {
		t.Errorf("the sender on B got no user_message_stored: %v", seenB)
	}
	for _, f := range seenA {
		if f.str("type") == "user_message_stored" {
			t.Errorf("the socket on A got the sender's user_message_stored")
		}
	}
	if seenA[len(seenA)-1].line() != seenB[len(seenB)-1].line() {
		t.Errorf("result line on A %d, on B %d", seenA[len(seenA)-1].line(), seenB[len(seenB)-1].line())
	}
}

func TestChatMultiPermission(t *testing.T) {
	a, b := startPair(t)
	wa, conn := a.connect()
	id := conn.str("session_id")
	wb, _ := b.join(id, -1)
	wa.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	req := wa.until("permission_request", isType("permission_request"))
	rid := req[len(req)-1].str("request_id")
	breq := wb.until("permission_request", isType("permission_request"))
	if got := breq[len(breq)-1].str("request_id"); got != rid {
		t.Fatalf("B's request_id %q, want %q", got, rid)
	}

	// A socket connecting on B gets the pending request replayed.
	wc, _ := b.join(id, -1)
	if f := wc.next(); f.str("type") != "permission_request" || f["replay"] != true || f.str("request_id") != rid {
		t.Fatalf("after connected on B: %v, want the replayed request", f)
	}

	wb.send(map[string]any{"type": "permission_response", "request_id": rid, "behavior": "allow", "answered_by": "phone"})
	for name, w := range map[string]*wsClient{"A": wa, "B": wb, "C": wc} {
		res := w.until("permission_resolved", isType("permission_resolved"))
		if f := res[len(res)-1]; f["ok"] != true || f.str("request_id") != rid || f.str("behavior") != "allow" || f.str("answered_by") != "phone" {
			t.Errorf("%s: permission_resolved = %v", name, f)
		}
		w.until("result", isResult)
	}
	// Nothing pending any more: a new socket gets no replay.
	wd, _ := b.join(id, -1)
	wd.send(map[string]any{"type": "ping"})
	if f := wd.next(); f.str("type") != "pong" {
		t.Errorf("after the answer, a new socket got %v", f)
	}
}

func TestChatMultiOwnerStops(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "fake.log")
	a, b := startPair(t, "FAKECLAUDE_LOG="+logPath)
	wa, conn := a.connect()
	id := conn.str("session_id")
	wb, _ := b.join(id, -1)
	wa.send(map[string]any{"type": "user_message", "content": "hello there"})
	wa.until("result", isResult)
	wb.until("result", isResult)

	a.stop()
	wb.send(map[string]any{"type": "user_message", "content": "still there?"})
	seen := wb.until("result", isResult)
	checkLines(t, "B", seen)
	argvs := fakeArgv(t, logPath)
	if len(argvs) != 2 {
		t.Fatalf("fake started %d times, want 2: %v", len(argvs), argvs)
	}
	if !hasResume(argvs[1]) {
		t.Errorf("the process started by B does not resume: %v", argvs[1])
	}
}

// A claim left by an instance that died expires; the instance with the
// session's sockets then takes over and retires the requests the dead
// process left pending.
func TestChatMultiDeadOwner(t *testing.T) {
	_, b := startPair(t)
	rdb := newTestRedis(t)
	prefix := "test:" + t.Name() + ":"
	id := b.mustSession(t.TempDir())
	ctx := context.Background()
	if err := rdb.Set(ctx, prefix+"chat:owner:"+id, "dead-instance", 1500*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	left := room.SealedPermEntry(internalauth.FromString(testSecret), prefix, id, 1,
		agent.PermissionRequest{RequestID: "req-1", ToolName: "Bash", Input: json.RawMessage(`{}`)})
	if err := rdb.HSet(ctx, prefix+"chat:perm:"+id, "req-1", left).Err(); err != nil {
		t.Fatal(err)
	}
	w, _ := b.join(id, -1)
	if f := w.next(); f.str("type") != "permission_request" || f["replay"] != true || f.str("request_id") != "req-1" {
		t.Fatalf("after connected: %v, want the replayed request", f)
	}
	start := time.Now()
	res := w.until("permission_resolved", isType("permission_resolved"))
	if f := res[len(res)-1]; f["ok"] != false || f.str("request_id") != "req-1" || f.str("reason") != "owner_lost" {
		t.Errorf("permission_resolved = %v", f)
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("taken over after %v, before the claim expired", d)
	}
	if owner := rdb.Get(ctx, prefix+"chat:owner:"+id).Val(); owner == "" || owner == "dead-instance" {
		t.Errorf("owner after the takeover = %q", owner)
	}
	w.send(map[string]any{"type": "user_message", "content": "hello there"})
	w.until("result", isResult)
}
