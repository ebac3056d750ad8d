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

func TestCapPerClient(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := Wrap(inner, 2).(*Listener)
	defer ln.Close()
	accepted := make(chan net.Conn, 10)
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
