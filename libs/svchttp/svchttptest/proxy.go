package svchttptest

import (
	"context"
	"net"
	"net/url"
	"testing"
)

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
