package svchttptest

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// tcpProxy forwards connections to a dependency until Close, which also
// cuts the connections it carries: the dependency going away under a
// running service.
type tcpProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func mustProxy(tb testing.TB, target string) *tcpProxy {
	tb.Helper()
	ln := mustListen(tb)
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	tb.Cleanup(p.Close)
	return p
}

func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) accept() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", p.target)
		if err != nil {
			_ = down.Close()
			continue
		}
		if !p.track(down, up) {
			return
		}
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			_ = dst.Close()
			_ = src.Close()
		}
		p.wg.Go(func() { pipe(up, down) })
		p.wg.Go(func() { pipe(down, up) })
	}
}

func (p *tcpProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// Close stops accepting, cuts every connection and waits for its goroutines.
func (p *tcpProxy) Close() {
	p.mu.Lock()
	p.closed = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// proxyFor starts a proxy to the host of rawURL (a redis:// or postgres://
// URL) and returns rawURL pointing at the proxy instead.
func proxyFor(tb testing.TB, rawURL, defaultPort string) (*tcpProxy, string) {
	tb.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		tb.Fatal(err)
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), defaultPort)
	}
	p := mustProxy(tb, target)
	u.Host = p.Addr()
	return p, u.String()
}

// withHost returns rawURL with its host:port replaced.
func withHost(tb testing.TB, rawURL, hostport string) string {
	tb.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		tb.Fatal(err)
	}
	u.Host = hostport
	return u.String()
}

// mustListen returns a listener on a free port of 127.0.0.1.
func mustListen(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return ln
}

// closedAddr is an address on which nothing listens.
func closedAddr(tb testing.TB) string {
	tb.Helper()
	ln := mustListen(tb)
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}
