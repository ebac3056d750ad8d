package app

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestUnauthenticatedBodiesNotBuffered is issue 15's item 4: connections
// without a credential, each sending a large declared body, must not grow
// the gateway's heap (it runs in this process). Before, every body was
// read whole before any credential was checked.
func TestUnauthenticatedBodiesNotBuffered(t *testing.T) {
	g := startGateway(t, withEnv("BODY_LIMIT_MB", "64"))
	addr := strings.TrimPrefix(g.base, "http://")
	const (
		conns    = 8
		declared = 60 << 20
		send     = 16 << 20
		bound    = 24 << 20
	)
	before := heapInUse()
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	var (
		wg       sync.WaitGroup
		sent     atomic.Int64
		open     []net.Conn
		openMu   sync.Mutex
		paths    = []string{"/api/login", "/api/sessions", "/api/upload-file", "/"}
		deadline = time.Now().Add(20 * time.Second)
	)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		openMu.Lock()
		open = append(open, c)
		openMu.Unlock()
		wg.Go(func() {
			_ = c.SetWriteDeadline(deadline)
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", paths[i%len(paths)], addr, declared)
			if _, err := io.WriteString(c, head); err != nil {
				return
			}
			for n := 0; n < send; n += len(chunk) {
				if _, err := c.Write(chunk); err != nil {
					return // the gateway answered and closed: what we want
				}
				sent.Add(int64(len(chunk)))
			}
		})
	}
	wg.Wait()
	// The connections are still open here, as an attacker would hold them.
	after := heapInUse()
	for _, c := range open {
		_ = c.Close()
	}
	growth := int64(after) - int64(before)
	t.Logf("sent %d MiB over %d connections; gateway heap grew %d MiB", sent.Load()>>20, conns, growth>>20)
	if growth > bound {
		t.Fatalf("heap grew by %d MiB, want under %d MiB: bodies were buffered before authentication", growth>>20, bound>>20)
	}
}

// TestAuthenticatedUploadStreamed: an upload within the limit goes to the
// backend as it arrives, never held whole by the gateway.
func TestAuthenticatedUploadStreamed(t *testing.T) {
	g := startGateway(t, withEnv("BODY_LIMIT_MB", "64"))
	const size = 48 << 20
	before := heapInUse()
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	hr, err := http.NewRequest("POST", g.base+"/api/upload-file", io.LimitReader(zeros{}, size))
	if err != nil {
		t.Fatal(err)
	}
	hr.ContentLength = size
	hr.Header.Set("Authorization", "Bearer "+g.token())
	resp, err := http.DefaultClient.Do(hr)
	close(stop)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), fmt.Sprintf(`"bytes":%d`, size)) {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	if resp.Close {
		t.Error("the connection was closed after a complete upload (its body was taken as unread)")
	}
	growth := int64(peak.Load()) - int64(before)
	t.Logf("a %d MiB upload raised the heap by at most %d MiB", size>>20, growth>>20)
	if growth > 24<<20 {
		t.Errorf("heap peak grew by %d MiB during a %d MiB upload: the body was buffered", growth>>20, size>>20)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestTooLargeUploadGets413Reliably: Go's HTTP client, still writing a
// body over the limit, must read the 413 every time, not "connection
// reset".
func TestTooLargeUploadGets413Reliably(t *testing.T) {
	g := startGateway(t, withEnv("BODY_LIMIT_MB", "4"))
	tok := g.token()
	cases := []struct {
		name, path string
		size       int
		headers    map[string]string
	}{
		{"authenticated upload", "/api/upload-file", 8 << 20, map[string]string{"Authorization": "Bearer " + tok}},
		{"login without credential", "/api/login", 1 << 20, map[string]string{"Content-Type": "application/json"}},
	}
	client := &http.Client{Timeout: 20 * time.Second}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 20 {
				hr, err := http.NewRequest("POST", g.base+tc.path, io.LimitReader(zeros{}, int64(tc.size)))
				if err != nil {
					t.Fatal(err)
				}
				hr.ContentLength = int64(tc.size)
				for k, v := range tc.headers {
					hr.Header.Set(k, v)
				}
				resp, err := client.Do(hr)
				if err != nil {
					t.Fatalf("try %d: %v, want a 413 answer", i+1, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 413 || !strings.Contains(string(b), `"error":"payload_too_large"`) {
					t.Fatalf("try %d: %d %s, want 413 payload_too_large", i+1, resp.StatusCode, b)
				}
			}
		})
	}
	if n := g.backend.hits.Load(); n != 0 {
		t.Errorf("oversized bodies reached the backend %d times", n)
	}
}

// TestChunkedUploadOverLimit: a body without a declared length is cut at
// the limit and answered 413.
func TestChunkedUploadOverLimit(t *testing.T) {
	g := startGateway(t)
	hr, err := http.NewRequest("POST", g.base+"/api/upload-file", io.MultiReader(io.LimitReader(zeros{}, 5<<19)))
	if err != nil {
		t.Fatal(err)
	}
	hr.ContentLength = -1
	hr.Header.Set("Authorization", "Bearer "+g.token())
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(hr)
	if err != nil {
		t.Fatalf("chunked upload over the limit: %v, want 413", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("got %d %s, want 413", resp.StatusCode, b)
	}
	// Within the limit, chunked works.
	hr, _ = http.NewRequest("POST", g.base+"/api/upload-file", io.MultiReader(io.LimitReader(zeros{}, 512<<10)))
	hr.ContentLength = -1
	hr.Header.Set("Authorization", "Bearer "+g.token())
	resp, err = http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), fmt.Sprintf(`"bytes":%d`, 512<<10)) {
		t.Fatalf("chunked upload within the limit: %d %s", resp.StatusCode, b)
	}
}

// TestConnectionCapPerClient: one client address cannot hold more than
// SVC_MAX_CONNS_PER_CLIENT connections.
func TestConnectionCapPerClient(t *testing.T) {
	g := startGateway(t, withEnv("SVC_MAX_CONNS_PER_CLIENT", "6"))
	addr := strings.TrimPrefix(g.base, "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	refused := 0
	for range 10 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
			refused++
			continue
		}
		buf := make([]byte, 512)
		n, _ := c.Read(buf)
		switch {
		case strings.HasPrefix(string(buf[:n]), "HTTP/1.1 429") && strings.Contains(string(buf[:n]), "too_many_connections"):
			refused++
		case strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200"):
		default:
			t.Fatalf("unexpected answer %q", buf[:n])
		}
	}
	// The harness's own client may hold a connection or two as well.
	if refused < 4 {
		t.Fatalf("%d of 10 connections refused, want at least 4 with a cap of 6", refused)
	}
	for _, c := range conns {
		_ = c.Close()
	}
	conns = nil
	waitFor(t, 5*time.Second, "a new connection to be served once the others closed", func() bool {
		r := g.do(req{path: "/health"})
		return r.status == 200
	})
}
