package connlimit

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestRefusalIsWellFormed(t *testing.T) {
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(refusal)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 429 || !strings.HasPrefix(string(b), `{"error":"too_many_connections"`) || !strings.HasSuffix(string(b), "}") {
		t.Fatalf("refusal: %d %q %v", resp.StatusCode, b, err)
	}
}

// capped listens on loopback with a cap of limit connections per client;
// what it accepts goes to accepted.
func capped(t *testing.T, limit int) (inner net.Listener, ln *Listener, accepted chan net.Conn) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln = Wrap(inner, limit).(*Listener)
	t.Cleanup(func() { _ = ln.Close() })
	accepted = make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	return inner, ln, accepted
}

func TestCapPerClient(t *testing.T) {
	inner, ln, accepted := capped(t, 2)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := dial(), dial()
	defer a.Close()
	defer b.Close()
	first, second := <-accepted, <-accepted
	third := dial()
	defer third.Close()
	_ = third.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil || resp.StatusCode != 429 {
		t.Fatalf("third connection: %v %v, want 429", resp, err)
	}
	defer resp.Body.Close()
	if n := ln.Open(netip.MustParseAddr("127.0.0.1")); n != 2 {
		t.Errorf("open = %d, want 2", n)
	}
	_ = first.Close()
	_ = first.Close() // twice releases once
	if n := ln.Open(netip.MustParseAddr("127.0.0.1")); n != 1 {
		t.Errorf("open after close = %d, want 1", n)
	}
	fourth := dial()
	defer fourth.Close()
	select {
	case c := <-accepted:
		_ = c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("a connection within the cap was not accepted")
	}
	_ = second.Close()
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":            "192.0.2.7",
		"::ffff:192.0.2.7":     "192.0.2.7",
		"127.0.0.1":            "127.0.0.1",
		"127.0.0.2":            "127.0.0.1",
		"127.255.1.9":          "127.0.0.1",
		"::1":                  "127.0.0.1",
		"::ffff:127.0.0.5":     "127.0.0.1",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::",
		"fe80::1%eth0":         "fe80::",
	} {
		got, ok := Key(netip.MustParseAddr(in))
		if !ok || got.String() != want {
			t.Errorf("Key(%s) = %v, %v; want %s", in, got, ok, want)
		}
	}
	if _, ok := Key(netip.Addr{}); ok {
		t.Error("the zero Addr has a key")
	}
}

// Every loopback address counts as one client: a local process cannot
// get round the cap by sending from 127.0.0.2, 127.0.0.3, ...
func TestLoopbackAddressesShareTheCap(t *testing.T) {
	inner, ln, accepted := capped(t, 2)
	dialFrom := func(src string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := dialFrom("127.0.0.2"), dialFrom("127.0.0.3")
	defer a.Close()
	defer b.Close()
	for range 2 {
		c := <-accepted
		defer c.Close()
	}
	third := dialFrom("127.0.0.4")
	defer third.Close()
	_ = third.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil || resp.StatusCode != 429 {
		t.Fatalf("a third connection from another loopback address: %v %v, want 429", resp, err)
	}
	defer resp.Body.Close()
	if n := ln.Open(netip.MustParseAddr("127.0.0.9")); n != 2 {
		t.Errorf("open = %d, want 2", n)
	}
}
