package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/libs/redisx"
)

// backendProc is a backend binary the test can crash (SIGKILL) and start
// again on the same address.
type backendProc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	killed bool
	mu     sync.Mutex
	log    []string
}

// startProc runs bin with env and returns once it logs "listening".
// Unless killed by the test, it is stopped with SIGTERM at the end and
// must exit 0.
func startProc(t *testing.T, bin string, env []string) *backendProc {
	t.Helper()
	p := &backendProc{name: filepath.Base(bin), exited: make(chan struct{})}
	p.cmd = exec.Command(bin)
	p.cmd.Env = env
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan struct{}, 1)
	var waitErr error
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log = append(p.log, sc.Text())
			p.mu.Unlock()
			var line struct{ Msg string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				listening <- struct{}{}
			}
		}
		waitErr = p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if !p.killed {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
		select {
		case <-p.exited:
			if waitErr != nil && !p.killed {
				t.Errorf("%s exited with %v", p.name, waitErr)
			}
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
			t.Errorf("%s did not stop within 15 s of SIGTERM", p.name)
		}
		if t.Failed() {
			p.mu.Lock()
			t.Logf("%s log:\n%s", p.name, strings.Join(p.log, "\n"))
			p.mu.Unlock()
		}
	})
	select {
	case <-listening:
	case <-p.exited:
		t.Fatalf("%s exited before listening: %v", p.name, waitErr)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not listen within 30 s", p.name)
	}
	return p
}

// kill ends the process with SIGKILL, as a crash would.
func (p *backendProc) kill(t *testing.T) {
	t.Helper()
	p.killed = true
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

// freeAddr is a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// chatSocket is a /chat WebSocket through the gateway.
type chatSocket struct {
	t  *testing.T
	ws *websocket.Conn
}

func (c *chatSocket) send(v map[string]any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(v); err != nil {
		c.t.Fatal(err)
	}
}

// until reads frames until match holds and returns the matching one.
func (c *chatSocket) until(what string, match func(map[string]any) bool) map[string]any {
	c.t.Helper()
	for range 1000 {
		_ = c.ws.SetReadDeadline(time.Now().Add(20 * time.Second))
		var f map[string]any
		if err := c.ws.ReadJSON(&f); err != nil {
			c.t.Fatalf("waiting for %s: %v", what, err)
		}
		if match(f) {
			return f
		}
	}
	c.t.Fatalf("no %s in 1000 frames", what)
	return nil
}

func isResultFrame(f map[string]any) bool {
	d, _ := f["data"].(map[string]any)
	return f["type"] == "agent_message" && d["type"] == "result"
}

// TestAnalyticsRecordsChatTurns runs the real chat (with the fake Claude
// Code), analytics and this gateway. A turn made through /chat appears in
// analytics with its cost, tokens and model; analytics is then crashed in
// the middle of a second turn and started again after it ended, and that
// turn too appears, exactly once.
func TestAnalyticsRecordsChatTurns(t *testing.T) {
	root := repoRoot(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/",
		"./services/chat/cmd/chat", "./services/analytics/cmd/analytics", "./services/chat/cmd/fakeclaude")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	dbURL := testSchemaURL(t)
	prefix := "test:" + randomHex(6) + ":"
	rdb, err := redisx.Connect(context.Background(), redisURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		rdb.Del(ctx, prefix+"turns", prefix+"turns:dead")
		_ = rdb.Close()
	})
	env := append(os.Environ(),
		"SVC_CODE_HOME="+t.TempDir(), "SVC_INTERNAL_SECRET="+testSecret, "SVC_INTERNAL_SECRET_FILE=",
		"REDIS_URL="+redisURL(), "REDIS_PREFIX="+prefix, "LOG_FORMAT=json",
		"DATABASE_URL="+dbURL, "READONLY_DATABASE_URL="+dbURL,
	)
	chatAddr, analyticsAddr := freeAddr(t), freeAddr(t)
	startProc(t, filepath.Join(bin, "chat"), append(env, "CHAT_ADDR="+chatAddr))
	analyticsEnv := append(env, "ANALYTICS_ADDR="+analyticsAddr, "ANALYTICS_CONSUMER=e2e")
	analytics := startProc(t, filepath.Join(bin, "analytics"), analyticsEnv)

	g := startGateway(t, func(env map[string]string, _ *Config) {
		env[EnvChatURL] = "http://" + chatAddr
		env[EnvAnalyticsURL] = "http://" + analyticsAddr
		env["REDIS_PREFIX"] = prefix
	})
	tok := g.token()
	jsonAuth := map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
	fake, _ := json.Marshal(map[string]string{"path": filepath.Join(bin, "fakeclaude")})
	wantStatus(t, g.do(req{method: "PUT", path: "/api/app/provider-path/claude", body: string(fake), headers: jsonAuth}), 200, "")

	ws, status, err := g.dialWS("/chat?cwd="+url.QueryEscape(t.TempDir()), http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		t.Fatalf("dial /chat: %v (status %d)", err, status)
	}
	t.Cleanup(func() { _ = ws.Close() })
	c := &chatSocket{t: t, ws: ws}
	connected := c.until("connected", func(f map[string]any) bool { return f["type"] == "connected" })
	session, _ := connected["session_id"].(string)

	// getTurns lists the session's turns in analytics.
	getTurns := func() []map[string]any {
		r := g.do(req{path: "/api/turns?session=" + url.QueryEscape(session), headers: bearer(tok)})
		if r.status != 200 {
			return nil
		}
		var body struct{ Turns []map[string]any }
		if err := json.Unmarshal([]byte(r.body), &body); err != nil {
			t.Fatalf("/api/turns: %v: %s", err, r.body)
		}
		return body.Turns
	}
	// ended waits for n turns of the session, all ended, newest first.
	ended := func(n int) []map[string]any {
		var turns []map[string]any
		waitFor(t, 30*time.Second, fmt.Sprintf("%d ended turns in analytics", n), func() bool {
			turns = getTurns()
			if len(turns) != n {
				return false
			}
			for _, tr := range turns {
				if tr["ended_at"] == nil {
					return false
				}
			}
			return true
		})
		return turns
	}

	// Turn 1 with analytics up.
	c.send(map[string]any{"type": "user_message", "content": "hello there"})
	c.until("result", isResultFrame)
	first := ended(1)[0]
	checkTurn(t, first, session, 1, "hello there")

	// Turn 2: analytics crashes once the turn has started, and comes back
	// after it ended.
	c.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	ask := c.until("permission_request", func(f map[string]any) bool { return f["type"] == "permission_request" })
	analytics.kill(t)
	c.send(map[string]any{"type": "permission_response", "request_id": ask["request_id"], "behavior": "allow"})
	c.until("result", isResultFrame)
	waitFor(t, 20*time.Second, "turn 2's turn_ended in the stream", func() bool {
		msgs, _ := rdb.XRange(context.Background(), prefix+"turns", "-", "+").Result()
		return len(msgs) == 4 && msgs[3].Values["event"] == "turn_ended"
	})
	if r := g.do(req{path: "/api/turns", headers: bearer(tok)}); r.status != 502 {
		t.Errorf("/api/turns with analytics down: %d %s, want 502", r.status, r.body)
	}
	startProc(t, filepath.Join(bin, "analytics"), analyticsEnv)
	turns := ended(2)
	second := turns[0]
	checkTurn(t, second, session, 2, "RUN_BASH")
	if turns[1]["id"] != first["id"] || second["id"] == first["id"] {
		t.Errorf("turn ids %v, %v: want two distinct turns, the first unchanged", second["id"], turns[1]["id"])
	}
	one := g.do(req{path: "/api/turns/" + url.PathEscape(second["id"].(string)), headers: bearer(tok)})
	wantStatus(t, one, 200, "")
	if tools := fmt.Sprint(one.json(t)["tools"]); !strings.HasPrefix(tools, "[map[duration_ms:") || !strings.HasSuffix(tools, "name:Bash outcome:ok]]") {
		t.Errorf("turn 2 tools = %s, want one Bash call, ok", tools)
	}
	// Exactly once: the database holds these two turns and nothing else.
	stats := g.do(req{path: "/api/shadow-db", headers: bearer(tok)})
	wantStatus(t, stats, 200, "")
	if n := stats.json(t)["turns"]; n != 2.0 {
		t.Errorf("turns in the database = %v, want 2", n)
	}
	if n, _ := rdb.XLen(context.Background(), prefix+"turns:dead").Result(); n != 0 {
		t.Errorf("%d dead letters, want 0", n)
	}
}

// checkTurn checks what analytics recorded of a fake-agent turn.
func checkTurn(t *testing.T, turn map[string]any, session string, number float64, prompt string) {
	t.Helper()
	for k, want := range map[string]any{
		"session_id": session, "turn_number": number, "user_prompt": prompt, "provider": "agent-sdk", "is_error": false,
	} {
		if turn[k] != want {
			t.Errorf("turn %v: %s = %v, want %v", number, k, turn[k], want)
		}
	}
	if cost, _ := turn["cost"].(float64); cost <= 0 {
		t.Errorf("turn %v: cost %v, want > 0", number, turn["cost"])
	}
	if out, _ := turn["output_tokens"].(float64); out <= 0 {
		t.Errorf("turn %v: output_tokens %v, want > 0", number, turn["output_tokens"])
	}
	if m, _ := turn["model"].(string); m == "" {
		t.Errorf("turn %v: empty model", number)
	}
	if p, _ := turn["project"].(string); p == "" || p != turn["cwd"] {
		t.Errorf("turn %v: project %v, cwd %v: want the cwd", number, turn["project"], turn["cwd"])
	}
}
