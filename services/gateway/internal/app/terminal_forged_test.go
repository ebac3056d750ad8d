package app

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/redisx"
)

// listenerSink is a TCP listener that records the first line of what
// anyone sends it and answers 200: what a forged terminal host would
// capture. The record is made before the answer, so once a request through
// the gateway has its answer, the sink has recorded whatever reached it.
type listenerSink struct {
	ln    net.Listener
	mu    sync.Mutex
	conns int
	got   strings.Builder
	wg    sync.WaitGroup
}

func newListenerSink(t *testing.T) *listenerSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &listenerSink{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				// Record the request head, then answer it, so that a
				// client through a misrouting gateway is not left waiting.
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				head, _ := bufio.NewReader(c).ReadString('\n')
				s.mu.Lock()
				s.got.WriteString(head)
				s.mu.Unlock()
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nevil")
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); s.wg.Wait() })
	return s
}

func (s *listenerSink) URL() string { return "http://" + s.ln.Addr().String() }

func (s *listenerSink) seen() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns, s.got.String()
}

// TestForgedTerminalHostGetsNothing writes into Redis what anyone who can
// reach it could write: a terminal host entry naming a listener of the
// test, and a claim that a session is held there. The gateway must not
// send that address anything (no request, so no internal credential): the
// requests go to the configured TERMINAL_URL, and the ignored entries are
// logged once each, with their key names.
func TestForgedTerminalHostGetsNothing(t *testing.T) {
	g := startGateway(t)
	evil := newListenerSink(t)
	rdb, err := redisx.Connect(context.Background(), redisURL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	hostKey, sessionKey := g.prefix+"terminal:host:evil", g.prefix+"terminal:session:victim"
	entry, _ := json.Marshal(map[string]any{
		"id": "evil", "url": evil.URL(), "terminals": 0, "updated": time.Now().UTC(),
		"expires": time.Now().Add(time.Hour).UTC(), "boot": "x", "mac": strings.Repeat("0", 64),
	})
	for _, err := range []error{
		rdb.Set(ctx, hostKey, entry, time.Minute).Err(),
		rdb.SAdd(ctx, g.prefix+"terminal:hosts", "evil").Err(),
		rdb.Set(ctx, sessionKey, "evil", time.Minute).Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { rdb.Del(context.Background(), hostKey, sessionKey, g.prefix+"terminal:hosts") })
	tok := g.token()

	for _, session := range []string{"victim", "new"} {
		c, status, err := g.dialWS("/ws/terminal?session="+session, http.Header{"Authorization": {"Bearer " + tok}})
		if err != nil {
			t.Errorf("dial /ws/terminal?session=%s: status %d, %v", session, status, err)
			continue
		}
		c.Close()
	}
	for _, r := range []req{
		{path: "/api/terminals"},
		{method: "DELETE", path: "/api/terminal/victim"},
		{method: "POST", path: "/api/exec", body: `{"command":"id"}`},
	} {
		r.headers = bearer(tok)
		if got := g.do(r); got.status != 200 || strings.Contains(got.body, "evil") {
			t.Errorf("%s %s: %d %s, want 200 from the configured backend", r.method, r.path, got.status, got.body)
		}
	}

	if n := g.backend.hits.Load(); n != 5 {
		t.Errorf("the configured terminal backend got %d requests, want all 5", n)
	}
	// Every request above has its answer: whatever reached the sink is
	// recorded.
	if conns, got := evil.seen(); conns != 0 || got != "" {
		t.Errorf("the forged host got %d connections: %q", conns, got)
	}
	logs := g.logs.String()
	for _, key := range []string{hostKey, sessionKey} {
		if n := strings.Count(logs, "key="+key+" "); n != 1 {
			t.Errorf("ignored entry %s logged %d times, want once:\n%s", key, n, logs)
		}
	}
}
