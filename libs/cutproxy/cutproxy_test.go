package cutproxy

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"
)

// echo listens on loopback and echoes each line back.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip dials addr and sends one line; ok when it comes back.
func roundTrip(t *testing.T, addr string) (net.Conn, bool) {
	t.Helper()
	c, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", addr)
	if err != nil {
		return nil, false
	}
	return c, sayHello(c)
}

func sayHello(c net.Conn) bool {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("hello\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "hello\n"
}

func TestCutAndHeal(t *testing.T) {
	p := New(t, echo(t))
	before, ok := roundTrip(t, p.Addr())
	if !ok {
		t.Fatal("no echo through the proxy")
	}
	defer before.Close()

	p.Cut()
	if sayHello(before) {
		t.Error("a connection made before the cut still carries data")
	}
	if c, ok := roundTrip(t, p.Addr()); ok {
		_ = c.Close()
		t.Error("a connection made while cut carries data")
	}

	p.Heal()
	after, ok := roundTrip(t, p.Addr())
	if !ok {
		t.Fatal("no echo once healed")
	}
	_ = after.Close()
}

func TestForURL(t *testing.T) {
	p, u := ForURL(t, "redis://:secret@127.0.0.1/3", "6379")
	if p.target != "127.0.0.1:6379" {
		t.Errorf("target %q, want the default port", p.target)
	}
	if want := "redis://:secret@" + p.Addr() + "/3"; u != want {
		t.Errorf("URL %q, want %q", u, want)
	}
}
