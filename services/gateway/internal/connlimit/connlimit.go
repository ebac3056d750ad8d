// Package connlimit caps how many connections one client address may hold
// open at once, so that one client cannot take every connection (and the
// memory each holds) of the gateway. It works on the listener, before any
// byte is read. IPv6 clients are counted by /64, as one host usually holds
// a whole /64, and every loopback address as one (Key).
package connlimit

import (
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// refusal is written to a connection over the cap before it is closed.
var refusal = "HTTP/1.1 429 Too Many Requests\r\n" +
	"Content-Type: application/json\r\n" +
	"Connection: close\r\n" +
	"Content-Length: " + strconv.Itoa(len(refusalBody)) + "\r\n\r\n" + refusalBody

const refusalBody = `{"error":"too_many_connections","message":"this client holds too many connections to the gateway"}`

// Listener is a net.Listener with a per-client connection cap.
type Listener struct {
	net.Listener
	max int

	mu     sync.Mutex
	counts map[netip.Addr]int
}

var _ net.Listener = (*Listener)(nil)

// Wrap caps ln at max connections per client; max ≤ 0 returns ln as is.
func Wrap(ln net.Listener, maxPerClient int) net.Listener {
	if maxPerClient <= 0 {
		return ln
	}
	return &Listener{Listener: ln, max: maxPerClient, counts: map[netip.Addr]int{}}
}

// Accept returns the next connection within the cap; one over it is
// answered 429 too_many_connections and closed.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, ok := clientKey(c.RemoteAddr())
		if !ok {
			return c, nil
		}
		l.mu.Lock()
		over := l.counts[key] >= l.max
		if !over {
			l.counts[key]++
		}
		l.mu.Unlock()
		if over {
			go refuse(c)
			continue
		}
		return &conn{Conn: c, release: func() { l.release(key) }}, nil
	}
}

// Open is how many connections key's client holds (for tests).
func (l *Listener) Open(addr netip.Addr) int {
	key, _ := clientKey(net.TCPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[key]
}

func (l *Listener) release(key netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts[key] <= 1 {
		delete(l.counts, key)
		return
	}
	l.counts[key]--
}

func refuse(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write([]byte(refusal))
	_ = c.Close()
}

func clientKey(a net.Addr) (netip.Addr, bool) {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	return Key(tcp.AddrPort().Addr())
}

// loopback is the key of every loopback address.
var loopback = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// Key is the client an address counts as, here and for the login
// throttle: an IPv4 address itself; an IPv6 address by its /64 (one host
// usually holds a whole /64); and every loopback address (127.0.0.0/8,
// ::1) as one, since any local process can send from any of them. ok is
// false for an address with no key (the zero Addr).
func Key(a netip.Addr) (key netip.Addr, ok bool) {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return netip.Addr{}, false
	case a.IsLoopback():
		return loopback, true
	case a.Is6():
		p, err := a.WithZone("").Prefix(64)
		if err != nil {
			return netip.Addr{}, false
		}
		return p.Addr(), true
	}
	return a, true
}

// conn releases its slot once, when closed.
type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
