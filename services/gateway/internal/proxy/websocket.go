package proxy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
)

// IsUpgrade reports whether the request asks for a WebSocket.
func IsUpgrade(c *fiber.Ctx) bool {
	return strings.EqualFold(c.Get(fiber.HeaderUpgrade), "websocket") &&
		headerHasToken(c.Get(fiber.HeaderConnection), "upgrade")
}

func headerHasToken(v, token string) bool {
	for _, t := range strings.Split(v, ",") {
		if strings.EqualFold(strings.TrimSpace(t), token) {
			return true
		}
	}
	return false
}

// WebSocket forwards an upgrade to target. The backend's handshake answer
// decides: anything but 101 is relayed as an ordinary response; 101 is
// relayed raw and the two TCP connections are joined. Frames from the
// backend are copied whole, so the gateway can put its own close frame
// between two of them (on revocation or shutdown); frames from the client
// are copied as bytes. owner is kept with the tunnel for CloseIf.
func (p *Proxy) WebSocket(c *fiber.Ctx, service, target string, m Meta, owner any) error {
	unavailable := &protocol.Error{Code: protocol.CodeUnavailable, Message: "the " + service + " service is not reachable", Status: fiber.StatusBadGateway}
	dialer := net.Dialer{Timeout: p.dialTimeout}
	backend, err := dialer.DialContext(c.UserContext(), "tcp", target)
	if err != nil {
		p.log.Warn("backend_unreachable", "backend", service, "err", err, "request_id", m.RequestID)
		return unavailable
	}
	_ = backend.SetDeadline(time.Now().Add(p.handshakeTimeout))

	var b bytes.Buffer
	b.WriteString("GET ")
	b.Write(requestURI(c))
	b.WriteString(" HTTP/1.1\r\nHost: ")
	b.WriteString(target)
	b.WriteString("\r\n")
	for k, v := range c.Request().Header.All() {
		if strippedRequestHeader(k) || strings.EqualFold(string(k), "Host") || strings.EqualFold(string(k), "Content-Length") {
			continue
		}
		if strings.EqualFold(string(k), "Cookie") {
			v = dropCookie(v, CookieName)
			if len(v) == 0 {
				continue
			}
		}
		b.Write(k)
		b.WriteString(": ")
		b.Write(v)
		b.WriteString("\r\n")
	}
	p.setForwardHeaders(func(k, v string) {
		b.WriteString(k + ": " + v + "\r\n")
	}, m)
	b.WriteString("\r\n")
	if _, err := backend.Write(b.Bytes()); err != nil {
		_ = backend.Close()
		return unavailable
	}
	br := bufio.NewReaderSize(backend, 32<<10)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		_ = backend.Close()
		p.log.Warn("backend_handshake_failed", "backend", service, "err", err, "request_id", m.RequestID)
		return unavailable
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer func() { _ = backend.Close() }()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
		c.Status(resp.StatusCode)
		for k, vs := range resp.Header {
			if k == "Content-Length" || k == "Connection" || k == "Transfer-Encoding" {
				continue
			}
			for _, v := range vs {
				c.Response().Header.Add(k, v)
			}
		}
		return c.Send(body)
	}
	_ = backend.SetDeadline(time.Time{})

	var head bytes.Buffer
	fmt.Fprintf(&head, "HTTP/1.1 101 Switching Protocols\r\n")
	_ = resp.Header.Write(&head)
	head.WriteString("\r\n")

	c.Context().HijackSetNoResponse(true)
	c.Context().Hijack(func(client net.Conn) {
		t := &tunnel{client: client, backend: backend, br: br, owner: owner}
		if raw, ok := client.(interface{ UnsafeConn() net.Conn }); ok {
			t.clientW = raw.UnsafeConn()
		} else {
			t.clientW = client
		}
		t.bw = bufio.NewWriterSize(t.clientW, 32<<10)
		if _, err := t.clientW.Write(head.Bytes()); err != nil {
			_ = backend.Close()
			return
		}
		if !p.tunnels.add(t) {
			t.sendClose(1001, "gateway shutting down")
			t.teardown()
			return
		}
		defer p.tunnels.remove(t)
		t.run()
	})
	return nil
}

// dropCookie removes one cookie from a Cookie header value.
func dropCookie(v []byte, name string) []byte {
	parts := strings.Split(string(v), ";")
	kept := parts[:0]
	for _, part := range parts {
		n, _, _ := strings.Cut(strings.TrimSpace(part), "=")
		if n == name || strings.TrimSpace(part) == "" {
			continue
		}
		kept = append(kept, strings.TrimSpace(part))
	}
	return []byte(strings.Join(kept, "; "))
}

// tunnel joins a client and a backend WebSocket connection.
type tunnel struct {
	client  net.Conn // reads go through fasthttp's buffered reader
	clientW net.Conn // the raw connection, for writes
	backend net.Conn
	br      *bufio.Reader // backend reader (may hold bytes read past the 101)
	owner   any

	wmu      sync.Mutex // held while one whole frame is written to the client
	bw       *bufio.Writer
	closed   bool
	midFrame bool // a frame was cut off: no close frame may follow
	once     sync.Once
}

func (t *tunnel) run() {
	upstream := make(chan struct{})
	go func() {
		defer close(upstream)
		_, _ = io.Copy(t.backend, t.client)
		t.teardown()
	}()
	err := t.copyFrames()
	if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
		t.sendClose(1011, "backend connection failed")
	}
	t.teardown()
	<-upstream
}

// copyFrames copies whole frames from the backend to the client, flushing
// whenever no further bytes are waiting.
func (t *tunnel) copyFrames() error {
	var hdr [14]byte
	for {
		if _, err := io.ReadFull(t.br, hdr[:2]); err != nil {
			return err
		}
		n := 2
		plen := uint64(hdr[1] & 0x7f)
		switch plen {
		case 126:
			if _, err := io.ReadFull(t.br, hdr[2:4]); err != nil {
				return err
			}
			plen = uint64(binary.BigEndian.Uint16(hdr[2:4]))
			n = 4
		case 127:
			if _, err := io.ReadFull(t.br, hdr[2:10]); err != nil {
				return err
			}
			plen = binary.BigEndian.Uint64(hdr[2:10])
			n = 10
		}
		if hdr[1]&0x80 != 0 { // masked (not expected from a server, but legal to relay)
			if _, err := io.ReadFull(t.br, hdr[n:n+4]); err != nil {
				return err
			}
			n += 4
		}
		t.wmu.Lock()
		if t.closed {
			t.wmu.Unlock()
			return net.ErrClosed
		}
		_, err := t.bw.Write(hdr[:n])
		if err == nil {
			_, err = io.CopyN(t.bw, t.br, int64(plen))
		}
		if err == nil && t.br.Buffered() == 0 {
			err = t.bw.Flush()
		}
		if err != nil {
			// Part of a frame may have gone out; a close frame after it
			// would be read as its payload.
			t.midFrame = true
		}
		t.wmu.Unlock()
		if err != nil {
			return err
		}
	}
}

// sendClose writes a close frame to the client between two frames, waiting
// at most a second for a frame in flight.
func (t *tunnel) sendClose(code uint16, reason string) {
	locked := make(chan struct{})
	go func() {
		t.wmu.Lock()
		close(locked)
	}()
	select {
	case <-locked:
	case <-time.After(time.Second):
		// A frame is stuck mid-write; closing the connection unblocks it.
		t.teardown()
		<-locked
	}
	defer t.wmu.Unlock()
	if t.closed {
		return
	}
	t.closed = true
	if t.midFrame {
		return
	}
	if len(reason) > 123 {
		reason = reason[:123]
	}
	frame := make([]byte, 0, 4+len(reason))
	frame = append(frame, 0x88, byte(2+len(reason))) //nolint:gosec // reason is at most 123 bytes, so the length fits a byte
	frame = binary.BigEndian.AppendUint16(frame, code)
	frame = append(frame, reason...)
	_ = t.clientW.SetWriteDeadline(time.Now().Add(time.Second))
	_ = t.bw.Flush()
	_, _ = t.clientW.Write(frame)
}

func (t *tunnel) teardown() {
	t.once.Do(func() {
		_ = t.backend.Close()
		// The hijacked conn's own Close is a no-op; close the raw one.
		_ = t.clientW.Close()
	})
}

// Close ends the tunnel with a close frame (code and reason) to the client.
func (t *tunnel) Close(code uint16, reason string) {
	t.sendClose(code, reason)
	t.teardown()
}

// Registry tracks open tunnels so they can be closed on revocation and on
// shutdown.
type Registry struct {
	mu      sync.Mutex
	tunnels map[*tunnel]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tunnels: map[*tunnel]struct{}{}} }

func (r *Registry) add(t *tunnel) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.tunnels[t] = struct{}{}
	r.wg.Add(1)
	return true
}

func (r *Registry) remove(t *tunnel) {
	r.mu.Lock()
	if _, ok := r.tunnels[t]; ok {
		delete(r.tunnels, t)
		r.wg.Done()
	}
	r.mu.Unlock()
}

// Len is the number of open tunnels.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.tunnels)
}

// CloseIf closes every tunnel whose owner matches, with code and reason.
func (r *Registry) CloseIf(match func(owner any) bool, code uint16, reason string) int {
	r.mu.Lock()
	var victims []*tunnel
	for t := range r.tunnels {
		if match(t.owner) {
			victims = append(victims, t)
		}
	}
	r.mu.Unlock()
	for _, t := range victims {
		go t.Close(code, reason)
	}
	return len(victims)
}

// Shutdown refuses new tunnels, closes the open ones with 1001 and waits
// for them to end or for timeout.
func (r *Registry) Shutdown(timeout time.Duration) {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.CloseIf(func(any) bool { return true }, 1001, "gateway shutting down")
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
	}
}
