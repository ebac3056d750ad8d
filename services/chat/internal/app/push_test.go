package app

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/services/chat/internal/push"
	"github.com/svc-code/svc-code/services/chat/internal/push/pushtest"
)

// startPushChat starts chat with the variables extra (quick push retries
// unless set) and agent-sdk's path set to fakeclaude.
func startPushChat(t *testing.T, extra map[string]string, agentEnv ...string) *chat {
	t.Helper()
	env := map[string]string{EnvPushRetry: "20ms"}
	for k, v := range extra {
		env[k] = v
	}
	c := startInstance(t, pgmigratetest.MustSchema(t), env, notFound, agentEnv, nil)
	c.do(http.MethodPut, "/api/app/provider-path/claude", `{"path":`+quote(fake(t))+`}`).want(t, http.StatusOK, "")
	return c
}

// subscribe registers sub under name and returns the answer.
func (c *chat) subscribe(sub *pushtest.Subscription, name string) answer {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"name": name, "subscription": sub.JSON()})
	return c.do(http.MethodPost, "/api/push/subscriptions", string(b))
}

func (c *chat) mustSubscribe(sub *pushtest.Subscription, name string) string {
	c.t.Helper()
	got := c.subscribe(sub, name)
	got.want(c.t, http.StatusCreated, "")
	s, _ := got.body["subscription"].(map[string]any)
	id, _ := s["id"].(string)
	return id
}

// pushAnswer posts token and decision to /api/push/answer.
func (c *chat) pushAnswer(token, decision string) answer {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"token": token, "decision": decision})
	return c.do(http.MethodPost, "/api/push/answer", string(b))
}

// subs lists the subscriptions.
func (c *chat) subs() []map[string]any {
	c.t.Helper()
	got := c.do(http.MethodGet, "/api/push/subscriptions", "")
	got.want(c.t, http.StatusOK, "")
	var out []map[string]any
	list, _ := got.body["subscriptions"].([]any)
	for _, s := range list {
		m, _ := s.(map[string]any)
		out = append(out, m)
	}
	return out
}

// waitSubs polls the subscription list until ok accepts it.
func (c *chat) waitSubs(what string, ok func([]map[string]any) bool) []map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := c.subs()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("subscriptions: no %s within 10s: %v", what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const permWait = 10 * time.Second

func TestPushPermissionAnswer(t *testing.T) {
	c := startPushChat(t, nil)
	ps := pushtest.New(t)
	sub := ps.Subscribe()
	c.mustSubscribe(sub, "Pixel 8")
	key := c.do(http.MethodGet, "/api/push/key", "")
	key.want(t, http.StatusOK, "")

	w, conn := c.connect()
	id := conn.str("session_id")
	other, _ := c.join(id, -1) // an open socket, never visible
	w.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	reqs := w.until("permission_request", isType("permission_request"))
	pr := reqs[len(reqs)-1]
	rid := pr.str("request_id")

	p := ps.WaitN(1, permWait, pushtest.Kind("permission"))[0]
	if p.VAPIDKey != key.str("public_key") {
		t.Errorf("pushed with VAPID key %q, GET /api/push/key says %q", p.VAPIDKey, key.str("public_key"))
	}
	if p.Urgency != "high" || p.TTL != 86400 || p.Topic == "" {
		t.Errorf("urgency %q, TTL %d, topic %q: want high, 86400 (a day), a topic", p.Urgency, p.TTL, p.Topic)
	}
	body := p.JSON()
	// The token answers for a day (a request left waiting overnight).
	expiresAt, _ := body["expires_at"].(string)
	if exp, err := time.Parse(time.RFC3339, expiresAt); err != nil || time.Until(exp) < 23*time.Hour+59*time.Minute || time.Until(exp) > 24*time.Hour+time.Minute {
		t.Errorf("expires_at %v (%v): want a day ahead", body["expires_at"], err)
	}
	if body["session_id"] != id || body["request_id"] != rid || body["tool_name"] != "Bash" ||
		body["url"] != "/s/"+id+"?perm="+rid || body["input_truncated"] == true || body["pending"] != float64(1) {
		t.Errorf("payload = %s", p.Payload)
	}
	if !reflect.DeepEqual(body["input"], pr["input"]) {
		t.Errorf("payload input %v, want the whole input %v", body["input"], pr["input"])
	}
	token, _ := body["token"].(string)
	if token == "" {
		t.Fatalf("no token in %s", p.Payload)
	}
	if got := c.do(http.MethodGet, "/api/push/pending", ""); got.body["count"] != float64(1) {
		t.Errorf("pending while the request waits: %s", got.raw)
	}

	// Made-up, edited and malformed answers are refused and answer nothing.
	c.pushAnswer("made-up", "allow").want(t, http.StatusForbidden, "forbidden")
	c.pushAnswer(token[:len(token)-2]+"AA", "allow").want(t, http.StatusForbidden, "forbidden")
	edited := []byte(token)
	edited[10] ^= 1 // a letter of the claims
	c.pushAnswer(string(edited), "allow").want(t, http.StatusForbidden, "forbidden")
	c.pushAnswer(token, "maybe").want(t, http.StatusBadRequest, "bad_request")
	c.pushAnswer("", "allow").want(t, http.StatusBadRequest, "bad_request")

	got := c.pushAnswer(token, "allow")
	got.want(t, http.StatusOK, "")
	if got.str("session_id") != id || got.str("request_id") != rid || got.str("decision") != "allow" {
		t.Errorf("answer = %s", got.raw)
	}
	for name, s := range map[string]*wsClient{"sender": w, "other": other} {
		res := s.until("permission_resolved", isType("permission_resolved"))
		if f := res[len(res)-1]; f["ok"] != true || f.str("request_id") != rid || f.str("behavior") != "allow" || f.str("answered_by") != "notification" {
			t.Errorf("%s: permission_resolved = %v", name, f)
		}
		s.until("result", isResult) // the turn went on
	}
	// Once only.
	c.pushAnswer(token, "allow").want(t, http.StatusForbidden, "forbidden")
	c.pushAnswer(token, "deny").want(t, http.StatusForbidden, "forbidden")

	// The device is told the request is resolved; one permission push in
	// all.
	ps.WaitN(1, permWait, pushtest.Kind("resolved"))
	if n := len(ps.Match(pushtest.Kind("permission"))); n != 1 {
		t.Errorf("%d permission pushes, want 1", n)
	}
	for _, p := range ps.Pushes() {
		if p.Err != nil {
			t.Errorf("an invalid push: %v", p.Err)
		}
	}
	if got := c.do(http.MethodGet, "/api/push/pending", ""); got.body["count"] != float64(0) {
		t.Errorf("pending after the answer: %s", got.raw)
	}
	if s := c.subs(); len(s) != 1 || s[0]["last_success_at"] == nil || s[0]["last_error"] != nil {
		t.Errorf("subscription after the pushes: %v", s)
	}
}

// permissionPush waits for the next permission push (the n-th) and
// returns its payload.
func permissionPush(ps *pushtest.Server, n int) map[string]any {
	got := ps.WaitN(n, permWait, pushtest.Kind("permission"))
	return got[n-1].JSON()
}

func TestPushTokenRefusals(t *testing.T) {
	c := startPushChat(t, nil)
	ps := pushtest.New(t)
	c.mustSubscribe(ps.Subscribe(), "laptop")
	w, _ := c.connect()

	// Request 1 is answered on the socket: its token is then refused
	// (410), and stays refused.
	w.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	w.until("permission_request", isType("permission_request"))
	first := permissionPush(ps, 1)
	t1, _ := first["token"].(string)
	w.send(map[string]any{"type": "permission_response", "request_id": first["request_id"], "behavior": "deny"})
	w.until("result", isResult)
	c.pushAnswer(t1, "allow").want(t, http.StatusGone, "gone")
	c.pushAnswer(t1, "allow").want(t, http.StatusForbidden, "forbidden")

	// Request 2: request 1's token does not answer it, nor does a token
	// naming it that chat did not seal.
	w.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	w.until("permission_request", isType("permission_request"))
	second := permissionPush(ps, 2)
	t2, _ := second["token"].(string)
	if second["request_id"] == first["request_id"] || t2 == t1 {
		t.Fatalf("two requests share id or token: %v %v", first, second)
	}
	claims, _ := json.Marshal(map[string]any{"s": second["session_id"], "r": second["request_id"], "d": "00", "n": "x", "e": time.Now().Add(time.Hour).Unix()})
	forged := base64.RawURLEncoding.EncodeToString(claims) + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	c.pushAnswer(forged, "allow").want(t, http.StatusForbidden, "forbidden")
	c.pushAnswer(t1, "allow").want(t, http.StatusForbidden, "forbidden")
	if got := c.do(http.MethodGet, "/api/push/pending", ""); got.body["count"] != float64(1) {
		t.Fatalf("request 2 no longer pending after the refused answers: %s", got.raw)
	}
	c.pushAnswer(t2, "deny").want(t, http.StatusOK, "")
	res := w.until("permission_resolved", isType("permission_resolved"))
	if f := res[len(res)-1]; f.str("request_id") != second["request_id"] || f.str("behavior") != "deny" || f["ok"] != true {
		t.Errorf("permission_resolved = %v", f)
	}
	w.until("result", isResult)
}

func TestPushVisibility(t *testing.T) {
	c := startPushChat(t, nil)
	ps := pushtest.New(t)
	c.mustSubscribe(ps.Subscribe(), "phone")
	w, conn := c.connect()
	id := conn.str("session_id")

	// A bad visibility message is refused.
	w.sendRaw(`{"type":"visibility"}`)
	if f := w.next(); f.str("type") != "error" || !strings.Contains(f.str("message"), "visible") {
		t.Fatalf("visibility without visible: %v", f)
	}
	// Visible: no push for the request.
	w.send(map[string]any{"type": "visibility", "visible": true})
	w.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	reqs := w.until("permission_request", isType("permission_request"))
	w.send(map[string]any{"type": "permission_response", "request_id": reqs[len(reqs)-1].str("request_id"), "behavior": "allow"})
	w.until("result", isResult)

	// Hidden: the push goes. Pushes go out in order, so by the time this
	// one arrives, one for the first request would have.
	w.send(map[string]any{"type": "visibility", "visible": false})
	w.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	reqs = w.until("permission_request", isType("permission_request"))
	rid2 := reqs[len(reqs)-1].str("request_id")
	got := ps.WaitN(1, permWait, pushtest.Kind("permission"))
	if len(got) != 1 || got[0].JSON()["request_id"] != rid2 {
		t.Fatalf("permission pushes %d (first for %v), want one, for %s", len(got), got[0].JSON()["request_id"], rid2)
	}
	w.send(map[string]any{"type": "permission_response", "request_id": rid2, "behavior": "allow"})
	w.until("result", isResult)

	// Visible on a socket that then closes: it no longer holds pushes back.
	v, _ := c.join(id, -1)
	v.send(map[string]any{"type": "visibility", "visible": true})
	v.send(map[string]any{"type": "ping"})
	v.until("pong", isType("pong"))
	_ = v.ws.Close()
	w.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	reqs = w.until("permission_request", isType("permission_request"))
	rid3 := reqs[len(reqs)-1].str("request_id")
	got = ps.WaitN(2, permWait, pushtest.Kind("permission"))
	if got[1].JSON()["request_id"] != rid3 {
		t.Errorf("third request's push = %s", got[1].Payload)
	}
}

func TestPushTwoInstances(t *testing.T) {
	a, b := startPair(t)
	ps := pushtest.New(t)
	a.mustSubscribe(ps.Subscribe(), "phone")
	wa, conn := a.connect()
	id := conn.str("session_id")
	wb, _ := b.join(id, -1)
	wa.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	wa.until("permission_request", isType("permission_request"))
	wb.until("permission_request", isType("permission_request"))
	body := permissionPush(ps, 1)
	token, _ := body["token"].(string)
	// Answered through the instance that does not own the session.
	b.pushAnswer(token, "allow").want(t, http.StatusOK, "")
	for _, w := range []*wsClient{wa, wb} {
		res := w.until("permission_resolved", isType("permission_resolved"))
		if f := res[len(res)-1]; f["ok"] != true || f.str("answered_by") != "notification" {
			t.Errorf("permission_resolved = %v", f)
		}
		w.until("result", isResult)
	}
	a.pushAnswer(token, "allow").want(t, http.StatusForbidden, "forbidden")

	// A socket visible on B holds back the push of a request on A.
	wb.send(map[string]any{"type": "visibility", "visible": true})
	wb.send(map[string]any{"type": "ping"})
	wb.until("pong", isType("pong"))
	wa.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	reqs := wa.until("permission_request", isType("permission_request"))
	wa.send(map[string]any{"type": "permission_response", "request_id": reqs[len(reqs)-1].str("request_id"), "behavior": "allow"})
	wa.until("result", isResult)
	wb.send(map[string]any{"type": "visibility", "visible": false})
	wb.send(map[string]any{"type": "ping"})
	wb.until("pong", isType("pong"))
	wa.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	reqs = wa.until("permission_request", isType("permission_request"))
	rid := reqs[len(reqs)-1].str("request_id")
	got := ps.WaitN(2, permWait, pushtest.Kind("permission"))
	if len(got) != 2 || got[1].JSON()["request_id"] != rid {
		t.Errorf("permission pushes: %d, the second for %v, want 2, for %s", len(got), got[len(got)-1].JSON()["request_id"], rid)
	}
	wa.send(map[string]any{"type": "permission_response", "request_id": rid, "behavior": "allow"})
	wa.until("result", isResult)
}

func TestPushGoneSubscriptionsDeleted(t *testing.T) {
	c := startPushChat(t, nil)
	ps := pushtest.New(t)
	gone, missing, kept := ps.Subscribe(), ps.Subscribe(), ps.Subscribe()
	ps.Script(gone, http.StatusGone)
	ps.Script(missing, http.StatusNotFound)
	ps.Script(kept, http.StatusBadRequest)
	ids := map[string]string{}
	for name, s := range map[string]*pushtest.Subscription{"gone": gone, "missing": missing, "kept": kept} {
		ids[name] = c.mustSubscribe(s, name)
	}
	// The route answers once the push is done with, saying how it went.
	for name, want := range map[string]struct {
		status  float64
		removed bool
		err     string
	}{
		"gone":    {410, true, "gone (410): it was removed"},
		"missing": {404, true, "gone (404): it was removed"},
		"kept":    {400, false, "refused the push: 400"},
	} {
		got := c.do(http.MethodPost, "/api/push/test", `{"id":`+quote(ids[name])+`}`)
		got.want(t, http.StatusOK, "")
		removed, _ := got.body["removed"].(bool)
		if got.body["delivered"] != false || got.body["status"] != want.status || removed != want.removed || !strings.Contains(got.str("error"), want.err) {
			t.Errorf("%s: test answered %s, want status %v, removed %v, an error with %q", name, got.raw, want.status, want.removed, want.err)
		}
	}
	subs := c.subs()
	if len(subs) != 1 || subs[0]["id"] != ids["kept"] || subs[0]["last_error"] == nil || !strings.Contains(subs[0]["last_error"].(string), "400") {
		t.Errorf("left: %v", subs)
	}
	// Each was tried once: 404, 410 and 400 are not tried again.
	if n := len(ps.Pushes()); n != 3 {
		t.Errorf("%d pushes, want 3", n)
	}
	c.do(http.MethodPost, "/api/push/test", `{"id":"ps_nope"}`).want(t, http.StatusNotFound, "not_found")
}

func TestPushRetries(t *testing.T) {
	c := startPushChat(t, map[string]string{EnvPushRetry: "50ms"})
	ps := pushtest.New(t)
	flaky, down := ps.Subscribe(), ps.Subscribe()
	ps.Script(flaky, http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusInternalServerError)
	ps.Script(down, 502, 502, 502, 502, 502, 502, 502, 502)
	flakyID := c.mustSubscribe(flaky, "flaky")
	downID := c.mustSubscribe(down, "down")
	flakyTest := c.do(http.MethodPost, "/api/push/test", `{"id":`+quote(flakyID)+`}`)
	flakyTest.want(t, http.StatusOK, "")
	if flakyTest.body["delivered"] != true || flakyTest.body["status"] != 201.0 || flakyTest.str("error") != "" {
		t.Errorf("the flaky endpoint's test answered %s, want delivered at the fourth try", flakyTest.raw)
	}
	got := ps.WaitN(4, permWait, func(p pushtest.Push) bool { return p.Endpoint == flaky.Endpoint })
	want := []int{429, 503, 500, 201}
	for i, p := range got {
		if p.Status != want[i] || p.Err != nil || p.JSON()["kind"] != "test" {
			t.Errorf("try %d: %d %v %s, want %d", i+1, p.Status, p.Err, p.Payload, want[i])
		}
		if i > 0 {
			// Backoff: 50ms, 100ms, 200ms (each at least its share).
			if d, least := p.At.Sub(got[i-1].At), 50*time.Millisecond<<(i-1); d < least {
				t.Errorf("try %d came %v after the previous, want at least %v", i+1, d, least)
			}
		}
	}
	// Bounded: four tries, then the error is recorded.
	downTest := c.do(http.MethodPost, "/api/push/test", `{"id":`+quote(downID)+`}`)
	downTest.want(t, http.StatusOK, "")
	if downTest.body["delivered"] != false || downTest.body["status"] != 502.0 || !strings.Contains(downTest.str("error"), "answered 502") {
		t.Errorf("the failing endpoint's test answered %s, want not delivered, 502", downTest.raw)
	}
	for _, m := range c.subs() {
		if m["id"] == downID && (m["last_error"] == nil || !strings.Contains(m["last_error"].(string), "502")) {
			t.Errorf("down's record: %v", m)
		}
	}
	if n := len(ps.Match(func(p pushtest.Push) bool { return p.Endpoint == down.Endpoint })); n != push.DefaultAttempts {
		t.Errorf("%d tries to the failing endpoint, want %d", n, push.DefaultAttempts)
	}
}

// A device whose push service fails (tried again 2, 4 and 8 s later) does
// not hold back another device's push: the healthy device gets the
// permission push while the failing one has had only its first try.
func TestPushFailingDeviceDoesNotHoldBackOthers(t *testing.T) {
	c := startPushChat(t, map[string]string{EnvPushRetry: "2s"})
	ps := pushtest.New(t)
	down, healthy := ps.Subscribe(), ps.Subscribe()
	ps.Script(down, 502, 502, 502, 502)
	c.mustSubscribe(down, "down") // listed first: it would be sent to first
	c.mustSubscribe(healthy, "healthy")
	w, _ := c.connect()
	w.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	reqs := w.until("permission_request", isType("permission_request"))
	at := func(sub *pushtest.Subscription) func(pushtest.Push) bool {
		return func(p pushtest.Push) bool { return p.Endpoint == sub.Endpoint && p.JSON()["kind"] == "permission" }
	}
	ps.WaitN(1, permWait, at(healthy))
	if n := len(ps.Match(at(down))); n > 1 {
		t.Errorf("the failing device had %d tries before the healthy one got its push, want at most 1", n)
	}
	w.send(map[string]any{"type": "permission_response", "request_id": reqs[len(reqs)-1].str("request_id"), "behavior": "allow"})
	w.until("result", isResult)
}

// A test push still being tried when the route's wait runs out: 202, and
// the outcome reaches the device's record later.
func TestPushTestStillTrying(t *testing.T) {
	c := startPushChat(t, map[string]string{EnvPushRetry: "300ms", EnvPushTestWait: "200ms"})
	ps := pushtest.New(t)
	down := ps.Subscribe()
	ps.Script(down, 502, 502, 502, 502)
	id := c.mustSubscribe(down, "slow")
	got := c.do(http.MethodPost, "/api/push/test", `{"id":`+quote(id)+`}`)
	got.want(t, http.StatusAccepted, "")
	if got.body["queued"] != true {
		t.Errorf("202 body %s, want queued", got.raw)
	}
	// Tries go 0, 0.3, 0.9 and 2.1 s in: the 202 came while some were left.
	if n := len(ps.Pushes()); n >= push.DefaultAttempts {
		t.Errorf("%d tries before the 202, want the route to answer while they go on", n)
	}
	c.waitSubs("the error recorded after the last try", func(s []map[string]any) bool {
		return len(s) == 1 && s[0]["last_error"] != nil && strings.Contains(s[0]["last_error"].(string), "502")
	})
	if n := len(ps.Pushes()); n != push.DefaultAttempts {
		t.Errorf("%d tries, want %d", n, push.DefaultAttempts)
	}
}

func TestPushTurnEnded(t *testing.T) {
	c := startPushChat(t, nil, "FAKECLAUDE_DELAY=300ms")
	c.do(http.MethodPut, "/api/app/config", `{"push_turn_seconds": 1}`).want(t, http.StatusOK, "")
	ps := pushtest.New(t)
	c.mustSubscribe(ps.Subscribe(), "phone")
	w, conn := c.connect()
	id := conn.str("session_id")
	w.send(map[string]any{"type": "user_message", "content": "hello there"}) // quick
	w.until("result", isResult)
	start := time.Now()
	w.send(map[string]any{"type": "user_message", "content": "SLOW 5"}) // 1.5 s
	w.until("result", isResult)
	if time.Since(start) < time.Second {
		t.Fatalf("the slow turn took %v", time.Since(start))
	}
	got := ps.WaitN(1, permWait, pushtest.Kind("turn_ended"))
	body := got[0].JSON()
	if len(got) != 1 || body["session_id"] != id || body["url"] != "/s/"+id || body["status"] != "success" ||
		body["duration_ms"].(float64) < 1000 || got[0].Urgency != "normal" {
		t.Errorf("turn_ended pushes: %d, %s", len(got), got[0].Payload)
	}
	// 0 turns it off.
	c.do(http.MethodPut, "/api/app/config", `{"push_turn_seconds": 0}`).want(t, http.StatusOK, "")
	w.send(map[string]any{"type": "user_message", "content": "SLOW 5"})
	w.until("result", isResult)
	c.do(http.MethodPost, "/api/push/test", `{"id":`+quote(c.subs()[0]["id"].(string))+`}`).want(t, http.StatusOK, "")
	ps.WaitN(1, permWait, pushtest.Kind("test")) // queued after any turn push
	if n := len(ps.Match(pushtest.Kind("turn_ended"))); n != 1 {
		t.Errorf("%d turn_ended pushes, want 1", n)
	}
	c.do(http.MethodPut, "/api/app/config", `{"push_turn_seconds": -1}`).want(t, http.StatusBadRequest, "bad_request")
}

func TestPushSubscriptionValidation(t *testing.T) {
	c := startPushChat(t, nil)
	ps := pushtest.New(t)
	good := ps.Subscribe()
	id := c.mustSubscribe(good, "Pixel 8")
	before := c.subs()
	if len(before) != 1 || before[0]["endpoint_origin"] != ps.URL || before[0]["name"] != "Pixel 8" {
		t.Fatalf("list = %v", before)
	}
	if _, ok := before[0]["endpoint"]; ok {
		t.Errorf("the endpoint is echoed: %v", before[0])
	}
	notPoint := base64.RawURLEncoding.EncodeToString(append([]byte{4}, make([]byte, 64)...))
	sub := func(endpoint, p256dh, auth string) map[string]any {
		return map[string]any{"endpoint": endpoint, "keys": map[string]any{"p256dh": p256dh, "auth": auth}}
	}
	fresh := ps.Subscribe()
	bad := map[string]map[string]any{
		"ftp scheme":       {"name": "x", "subscription": sub("ftp://127.0.0.1/push/x", fresh.P256dh, fresh.Auth)},
		"javascript":       {"name": "x", "subscription": sub("javascript:alert(1)", fresh.P256dh, fresh.Auth)},
		"http non-local":   {"name": "x", "subscription": sub("http://push.example.com/x", fresh.P256dh, fresh.Auth)},
		"credentials":      {"name": "x", "subscription": sub("https://u:p@push.example.com/x", fresh.P256dh, fresh.Auth)},
		"huge endpoint":    {"name": "x", "subscription": sub("https://push.example.com/"+strings.Repeat("a", 3000), fresh.P256dh, fresh.Auth)},
		"p256dh not point": {"name": "x", "subscription": sub(fresh.Endpoint, notPoint, fresh.Auth)},
		"p256dh short":     {"name": "x", "subscription": sub(fresh.Endpoint, fresh.P256dh[:40], fresh.Auth)},
		"p256dh not b64":   {"name": "x", "subscription": sub(fresh.Endpoint, "!!!"+fresh.P256dh[3:], fresh.Auth)},
		"auth 15 bytes":    {"name": "x", "subscription": sub(fresh.Endpoint, fresh.P256dh, base64.RawURLEncoding.EncodeToString(make([]byte, 15)))},
		"auth missing":     {"name": "x", "subscription": sub(fresh.Endpoint, fresh.P256dh, "")},
		"huge name":        {"name": strings.Repeat("n", 81), "subscription": fresh.JSON()},
		"empty name":       {"name": "  ", "subscription": fresh.JSON()},
		"control in name":  {"name": "a\x00b", "subscription": fresh.JSON()},
		// Another device's keys on an existing endpoint: a replace, but
		// still checked.
		"replace bad keys": {"name": "x", "subscription": sub(good.Endpoint, notPoint, good.Auth)},
	}
	for name, body := range bad {
		b, _ := json.Marshal(body)
		got := c.do(http.MethodPost, "/api/push/subscriptions", string(b))
		if got.status != http.StatusBadRequest || got.str("error") != "bad_request" {
			t.Errorf("%s: %d %s, want 400 bad_request", name, got.status, got.raw)
		}
	}
	c.do(http.MethodPost, "/api/push/subscriptions", `{"name":`).want(t, http.StatusBadRequest, "bad_request")
	if after := c.subs(); !reflect.DeepEqual(after, before) {
		t.Errorf("the attacks changed the list: %v, was %v", after, before)
	}

	// The same endpoint again replaces it, keeping its id.
	got := c.subscribe(good, "Pixel 8 (work)")
	got.want(t, http.StatusOK, "")
	if s := c.subs(); len(s) != 1 || s[0]["id"] != id || s[0]["name"] != "Pixel 8 (work)" {
		t.Errorf("after the replace: %v", s)
	}
	// At most 50.
	for i := 1; i < push.MaxSubscriptions; i++ {
		c.mustSubscribe(ps.Subscribe(), "device")
	}
	c.subscribe(ps.Subscribe(), "one too many").want(t, http.StatusBadRequest, "bad_request")
	if n := len(c.subs()); n != push.MaxSubscriptions {
		t.Errorf("%d subscriptions, want %d", n, push.MaxSubscriptions)
	}
	// Removable; an unknown id is 404.
	c.do(http.MethodDelete, "/api/push/subscriptions/"+id, "").want(t, http.StatusNoContent, "")
	c.do(http.MethodDelete, "/api/push/subscriptions/"+id, "").want(t, http.StatusNotFound, "not_found")
	if n := len(c.subs()); n != push.MaxSubscriptions-1 {
		t.Errorf("%d subscriptions after a delete, want %d", n, push.MaxSubscriptions-1)
	}
}

func TestPushKeyFile(t *testing.T) {
	home := t.TempDir()
	db := pgmigratetest.MustSchema(t)
	c := startInstance(t, db, map[string]string{"SVC_CODE_HOME": home}, notFound, nil, nil)
	first := c.do(http.MethodGet, "/api/push/key", "").str("public_key")
	if raw, err := base64.RawURLEncoding.DecodeString(first); err != nil || len(raw) != 65 || raw[0] != 4 {
		t.Fatalf("public_key %q: want a base64url uncompressed P-256 point", first)
	}
	path := filepath.Join(home, push.KeyFile)
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, info.Mode().Perm(), want)
		}
	}
	c.stop()
	again := startInstance(t, db, map[string]string{"SVC_CODE_HOME": home}, notFound, nil, nil)
	if got := again.do(http.MethodGet, "/api/push/key", "").str("public_key"); got != first {
		t.Errorf("after a restart the key is %q, was %q", got, first)
	}
}
