package app

import (
	"bufio"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawBackend is a TCP server that counts the request lines it receives on
// each connection, answering the first head with 404 so that the gateway
// finishes its side. It sees exactly the bytes the gateway wrote.
type rawBackend struct {
	ln    net.Listener
	mu    sync.Mutex
	conns int
	lines []string
	wg    sync.WaitGroup
}

var requestLine = regexp.MustCompile(`^[A-Z]+ \S+ HTTP/1\.[01]$`)

func newRawBackend(t *testing.T) *rawBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rb := &rawBackend{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			rb.mu.Lock()
			rb.conns++
			rb.wg.Add(1)
			rb.mu.Unlock()
			go rb.serve(c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		rb.wg.Wait()
	})
	return rb
}

func (rb *rawBackend) serve(c net.Conn) {
	defer rb.wg.Done()
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	answered := false
	for {
		line, err := br.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		if requestLine.MatchString(line) {
			rb.mu.Lock()
			rb.lines = append(rb.lines, line)
			rb.mu.Unlock()
		}
		if line == "" && !answered && err == nil {
			answered = true
			_, _ = io.WriteString(c, "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 23\r\n\r\n{\"error\":\"not_found\"}\r\n")
		}
		if err != nil {
			return
		}
	}
}

// requests waits for every connection to end and returns the request lines
// seen.
func (rb *rawBackend) requests() (conns int, lines []string) {
	rb.mu.Lock()
	n := rb.conns
	rb.mu.Unlock()
	if n > 0 {
		rb.wg.Wait()
	}
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.conns, append([]string(nil), rb.lines...)
}

// TestRequestSplittingRefused sends issue 15's attack: a Bearer WebSocket
// upgrade whose decoded path carries CR LF and a second request. The
// gateway must refuse it before writing anything to the backend.
func TestRequestSplittingRefused(t *testing.T) {
	const attack = "/api/files/%20HTTP/1.1%0d%0aHost:%20x%0d%0a%0d%0aGET%20/api/files?path=/tmp"
	for _, upgrade := range []bool{true, false} {
		name := "http"
		if upgrade {
			name = "websocket"
		}
		t.Run(name, func(t *testing.T) {
			rb := newRawBackend(t)
			g := startGateway(t, withEnv(EnvShadowURL, "http://"+rb.ln.Addr().String()))
			head := "GET " + attack + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(g.base, "http://") + "\r\nAuthorization: Bearer " + g.token() + "\r\n"
			if upgrade {
				head += "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
			}
			status, body := g.raw(t, head+"\r\n")
			conns, lines := rb.requests()
			if len(lines) > 1 {
				t.Fatalf("the backend received %d requests over %d connections: %q", len(lines), conns, lines)
			}
			if status != 400 || !strings.Contains(body, `"error":"bad_request"`) {
				t.Errorf("got %d %s, want 400 bad_request", status, body)
			}
			if conns != 0 {
				t.Errorf("the gateway opened %d connections to the backend for a refused path", conns)
			}
		})
	}
}

// TestPathReEscapedForBackend: characters that are legal once decoded but
// not in a request line (a space, "?", "#", "%") reach the backend as the
// same decoded path, in one request, with no query made up from the path.
func TestPathReEscapedForBackend(t *testing.T) {
	g := startGateway(t)
	tok := g.token()
	tests := []struct{ path, wantPath, wantQuery string }{
		{"/api/files/a%20b", "/api/files/a b", ""},
		{"/api/files/a%3Fpath=%2Fetc", "/api/files/a?path=/etc", ""},
		{"/api/files/100%25%23x?q=1", "/api/files/100%#x", "q=1"},
		{"/api/files/caf%C3%A9", "/api/files/café", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			before := g.backend.hits.Load()
			r := g.do(req{path: tt.path, headers: bearer(tok)})
			wantStatus(t, r, 200, "")
			if got := g.backend.hits.Load() - before; got != 1 {
				t.Fatalf("backend hits = %d, want 1", got)
			}
			m := r.json(t)
			if m["path"] != tt.wantPath || m["query"] != tt.wantQuery {
				t.Errorf("backend saw path %q query %q, want %q %q", m["path"], m["query"], tt.wantPath, tt.wantQuery)
			}
		})
	}
}
