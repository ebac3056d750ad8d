package app

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent/codex/codextest"
)

var (
	fakeCodexOnce sync.Once
	fakeCodexPath string
	errFakeCodex  error
)

// fakeCodex returns the path of cmd/fakecodex, built once per test binary.
func fakeCodex(t *testing.T) string {
	t.Helper()
	fakeCodexOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chat-fakecodex-")
		if err != nil {
			errFakeCodex = err
			return
		}
		fakeCodexPath, errFakeCodex = codextest.BuildFake(context.Background(), dir)
	})
	if errFakeCodex != nil {
		t.Fatal(errFakeCodex)
	}
	return fakeCodexPath
}

// mockPrice prices the fake's model for the tests: $1 / $10 per million
// input / output tokens; the fake's plain turn costs (42 + 170) / 1e6.
const mockPrice = `{"models":[{"id":"mock-model","price":{"input_per_mtok":1,"cached_input_per_mtok":0.1,"output_per_mtok":10}}]}`

const plainTurnCost = (42*1.0 + 17*10.0) / 1e6

// startCodexChat starts chat with app-server's path set to fakecodex (and
// agent-sdk's to fakeclaude), a CODEX_HOME of the test's own, and a price
// for the fake's model.
func startCodexChat(t *testing.T, env ...string) *chat {
	t.Helper()
	env = append([]string{"CODEX_HOME=" + t.TempDir(), "FAKECODEX_DELAY=100ms"}, env...)
	c := startChatEnv(t, notFound, env)
	c.do(http.MethodPut, "/api/app/provider-path/codex", `{"path":`+quote(fakeCodex(t))+`}`).want(t, http.StatusOK, "")
	c.do(http.MethodPut, "/api/app/provider-models/app-server", mockPrice).want(t, http.StatusOK, "")
	return c
}

// connectCodex opens a new app-server session in a temporary cwd.
func (c *chat) connectCodex() (*wsClient, frame) {
	c.t.Helper()
	w := c.dial(url.Values{"cwd": {c.t.TempDir()}, "provider": {"app-server"}})
	f := w.next()
	if f.str("type") != "connected" || f.str("provider") != "app-server" {
		c.t.Fatalf("first frame %v, want connected to app-server", f)
	}
	return w, f
}

// waitSession polls the session until ok accepts it (5 s).
func (c *chat) waitSession(id string, ok func(answer) bool) answer {
	c.t.Helper()
	got := c.do(http.MethodGet, "/api/session/"+id, "")
	for deadline := time.Now().Add(5 * time.Second); !ok(got) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		got = c.do(http.MethodGet, "/api/session/"+id, "")
	}
	return got
}

func resultData(f frame) map[string]any { d, _ := f["data"].(map[string]any); return d }

func TestCodexTextTurn(t *testing.T) {
	c := startCodexChat(t)
	w, conn := c.connectCodex()
	caps, _ := conn["provider_caps"].(map[string]any)
	if conn.str("provider_display_name") != "Codex" || caps["live_controls"] != false {
		t.Errorf("connected %v", conn)
	}
	id := conn.str("session_id")
	w.send(map[string]any{"type": "user_message", "content": "hello there"})
	seen := w.until("result", isResult)
	var kinds []string
	for _, f := range seen {
		if f.str("type") == "agent_message" {
			kinds = append(kinds, f.dataType())
		}
	}
	if strings.Join(kinds, ",") != "system,assistant,result" {
		t.Errorf("agent_message kinds %v, want system, assistant, result", kinds)
	}
	res := resultData(seen[len(seen)-1])
	if res["subtype"] != "success" || res["result"] != "Hello from the fake model." {
		t.Errorf("result %v", res)
	}
	got := c.waitSession(id, func(a answer) bool { return a.body["turns"] == float64(1) })
	if got.body["provider_locked"] != true || math.Abs(got.body["cost_usd"].(float64)-plainTurnCost) > 1e-12 {
		t.Errorf("session after a turn %s, want locked and cost %g", got.raw, plainTurnCost)
	}
	sess, err := c.store.Get(context.Background(), id)
	if err != nil || sess.ProviderSessionID == "" || sess.ProviderSessionID != res["session_id"] {
		t.Errorf("provider_session_id %q, result's %v (%v)", sess.ProviderSessionID, res["session_id"], err)
	}
	// Provider lock: the first turn locked it.
	c.do(http.MethodPut, "/api/session/"+id+"/provider", `{"provider":"agent-sdk"}`).want(t, http.StatusConflict, "provider_locked")
}

func TestCodexApprovalFromSecondTabAndDeny(t *testing.T) {
	c := startCodexChat(t)
	a, conn := c.connectCodex()
	id := conn.str("session_id")
	b, _ := c.join(id, -1)
	a.send(map[string]any{"type": "user_message", "content": "RUN_SHELL"})
	req := a.until("permission_request", isType("permission_request"))
	pr := req[len(req)-1]
	input, _ := pr["input"].(map[string]any)
	if pr.str("tool_name") != "Bash" || !strings.Contains(input["command"].(string), "hello-from-shell") || input["cwd"] != conn.str("cwd") {
		t.Fatalf("permission_request %v", pr)
	}
	b.until("permission_request", isType("permission_request"))
	b.send(map[string]any{"type": "permission_response", "request_id": pr.str("request_id"), "behavior": "allow"})
	for name, w := range map[string]*wsClient{"A": a, "B": b} {
		res := w.until("permission_resolved", isType("permission_resolved"))
		if f := res[len(res)-1]; f["ok"] != true || f.str("behavior") != "allow" {
			t.Errorf("tab %s: %v", name, f)
		}
		w.until("result", isResult)
	}
	// Deny.
	a.send(map[string]any{"type": "user_message", "content": "RUN_SHELL"})
	req = a.until("permission_request", isType("permission_request"))
	a.send(map[string]any{"type": "permission_response", "request_id": req[len(req)-1].str("request_id"), "behavior": "deny"})
	seen := a.until("result", isResult)
	denied := false
	for _, f := range seen {
		if f.dataType() == "user" && strings.Contains(f.raw(), `"is_error":true`) {
			denied = true
		}
	}
	if !denied {
		t.Errorf("no failed tool_result after deny in %v", seen)
	}
}

func TestCodexStopAndResume(t *testing.T) {
	c := startCodexChat(t)
	w, conn := c.connectCodex()
	id := conn.str("session_id")
	w.send(map[string]any{"type": "user_message", "content": "hi"})
	w.until("result", isResult)
	c.waitSession(id, func(a answer) bool { return a.body["turns"] == float64(1) })
	sess, err := c.store.Get(context.Background(), id)
	if err != nil || sess.ProviderSessionID == "" {
		t.Fatalf("session %+v (%v): want a thread id", sess, err)
	}

	w.send(map[string]any{"type": "user_message", "content": "SLOW 100"})
	w.until("turn running", func(f frame) bool { return f.dataType() == "system" })
	w.send(map[string]any{"type": "stop"})
	var stopped, result, ended frame
	for stopped == nil || result == nil || ended == nil {
		f := w.next()
		switch {
		case f.str("type") == "stopped":
			stopped = f
		case isResult(f):
			result = f
		case f.str("type") == "session_ended":
			ended = f
		}
	}
	if stopped.str("outcome") != "forced" || resultData(result)["terminal_reason"] != "interrupted" || ended.str("cause") != "interrupted" {
		t.Errorf("stopped %v, result %v, session_ended %v", stopped, resultData(result), ended)
	}
	// The next message resumes the same thread in a new process.
	w.send(map[string]any{"type": "user_message", "content": "after the stop"})
	res := w.until("result", isResult)
	if got := resultData(res[len(res)-1])["session_id"]; got != sess.ProviderSessionID {
		t.Errorf("thread after the stop %v, want %s", got, sess.ProviderSessionID)
	}
}

func TestCodexReconnectReplaysPending(t *testing.T) {
	c := startCodexChat(t)
	a, conn := c.connectCodex()
	id := conn.str("session_id")
	a.send(map[string]any{"type": "user_message", "content": "APPLY_PATCH"})
	before := a.until("permission_request", isType("permission_request"))
	pr := before[len(before)-1]
	if pr.str("tool_name") != "Edit" || !strings.Contains(pr.raw(), "patched.txt") {
		t.Fatalf("permission_request %v", pr)
	}
	_ = a.ws.Close()
	b, bconn := c.join(id, 1)
	if bconn["agent_running"] != true {
		t.Errorf("reconnect connected %v", bconn)
	}
	replay := b.next()
	if replay.str("type") != "permission_request" || replay["replay"] != true || replay.str("request_id") != pr.str("request_id") {
		t.Fatalf("frame after connected %v, want the replayed request", replay)
	}
	b.send(map[string]any{"type": "permission_response", "request_id": pr.str("request_id"), "behavior": "allow"})
	b.until("result", isResult)
}

func TestCodexModeChangeNextTurn(t *testing.T) {
	c := startCodexChat(t)
	w, conn := c.connectCodex()
	w.send(map[string]any{"type": "user_message", "content": "hi"})
	w.until("result", isResult)
	w.send(map[string]any{"type": "set_permission_mode", "mode": "bypassPermissions"})
	f := w.until("mode change", isType("permission_mode_changed"))
	if got := f[len(f)-1]; got.str("applied") != "next_turn" || got.str("mode") != "bypassPermissions" {
		t.Errorf("permission_mode_changed %v, want next_turn", got)
	}
	if got := c.do(http.MethodGet, "/api/session/"+conn.str("session_id"), ""); got.str("permission_mode") != "bypassPermissions" {
		t.Errorf("stored mode %q", got.str("permission_mode"))
	}
	// The respawned process runs the command without asking (never).
	w.send(map[string]any{"type": "user_message", "content": "RUN_SHELL"})
	seen := w.until("result", isResult)
	for _, f := range seen {
		if f.str("type") == "permission_request" {
			t.Errorf("asked in bypassPermissions: %v", f)
		}
	}
}

func TestCodexFork(t *testing.T) {
	c := startCodexChat(t)
	w, conn := c.connectCodex()
	id := conn.str("session_id")
	w.send(map[string]any{"type": "user_message", "content": "hi"})
	w.until("result", isResult)
	c.waitSession(id, func(a answer) bool { return a.body["turns"] == float64(1) })
	psess, err := c.store.Get(context.Background(), id)
	if err != nil || psess.ProviderSessionID == "" {
		t.Fatalf("parent %+v (%v): want a thread id", psess, err)
	}
	fork := c.do(http.MethodPost, "/api/session/"+id+"/fork", "")
	fork.want(t, http.StatusCreated, "")
	fw, _ := c.join(fork.str("session_id"), -1)
	fw.send(map[string]any{"type": "user_message", "content": "hi from the fork"})
	res := fw.until("result", isResult)
	forkThread, _ := resultData(res[len(res)-1])["session_id"].(string)
	if forkThread == "" || forkThread == psess.ProviderSessionID {
		t.Errorf("fork thread %q, parent's %q: want a thread of its own", forkThread, psess.ProviderSessionID)
	}
	// The parent keeps its thread.
	w.send(map[string]any{"type": "user_message", "content": "parent again"})
	res = w.until("result", isResult)
	if got := resultData(res[len(res)-1])["session_id"]; got != psess.ProviderSessionID {
		t.Errorf("parent thread %v, want %s", got, psess.ProviderSessionID)
	}
}

func TestCodexSideBySideWithAgentSDK(t *testing.T) {
	c := startCodexChat(t)
	c.do(http.MethodPut, "/api/app/provider-path/claude", `{"path":`+quote(fake(t))+`}`).want(t, http.StatusOK, "")
	cw, cconn := c.connectCodex()
	aw, aconn := c.connect()
	if cconn.str("cwd") == aconn.str("cwd") || aconn.str("provider") != "agent-sdk" {
		t.Fatalf("codex %v, agent-sdk %v", cconn, aconn)
	}
	cw.send(map[string]any{"type": "user_message", "content": "hello codex"})
	aw.send(map[string]any{"type": "user_message", "content": "hello claude"})
	for name, w := range map[string]*wsClient{"codex": cw, "claude": aw} {
		seen := w.until("result", isResult)
		init := map[string]any{}
		for _, f := range seen {
			if f.dataType() == "system" {
				init = resultData(f)
			}
		}
		want := cconn.str("cwd")
		if name == "claude" {
			want = aconn.str("cwd")
		}
		if init["cwd"] != want {
			t.Errorf("%s init cwd %v, want %s", name, init["cwd"], want)
		}
	}
}

func TestCodexBadInputFromTheProcess(t *testing.T) {
	c := startCodexChat(t)
	w, _ := c.connectCodex()
	w.send(map[string]any{"type": "user_message", "content": "RAW"})
	seen := w.until("result", isResult)
	if !containsType(seen, "raw_output") {
		t.Errorf("no raw_output in %v", seen)
	}
	w.send(map[string]any{"type": "user_message", "content": "UNKNOWN"})
	w.until("result", isResult)
	// An error response: an error frame, and the session goes on.
	w.send(map[string]any{"type": "user_message", "content": "REFUSE"})
	errs := w.until("error", isType("error"))
	if msg := errs[len(errs)-1].str("message"); !strings.Contains(msg, "fake refusal") {
		t.Errorf("error frame %q", msg)
	}
	w.send(map[string]any{"type": "user_message", "content": "FAIL500"})
	res := w.until("result", isResult)
	if d := resultData(res[len(res)-1]); d["is_error"] != true || !strings.Contains(d["result"].(string), "high demand") {
		t.Errorf("failed turn result %v", d)
	}
	// Exit mid-turn: stderr and session_ended, then the next message works.
	w.send(map[string]any{"type": "user_message", "content": "CRASH"})
	seen = w.until("session_ended", isType("session_ended"))
	if !containsType(seen, "stderr") || !strings.Contains(seen[len(seen)-1].str("reason"), "scripted crash") {
		t.Errorf("crash frames %v", seen)
	}
	w.send(map[string]any{"type": "user_message", "content": "after the crash"})
	w.until("result", isResult)
}

func containsType(fs []frame, typ string) bool {
	for _, f := range fs {
		if f.str("type") == typ {
			return true
		}
	}
	return false
}

// raw is the frame as JSON text.
func (f frame) raw() string {
	b, _ := json.Marshal(f)
	return string(b)
}
