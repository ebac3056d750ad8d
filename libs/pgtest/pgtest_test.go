package pgtest

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"
)

func dial(s *Server) error {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port())))
	if err == nil {
		_ = c.Close()
	}
	return err
}

// The server listens after Start and Up, and not after Crash or Stop,
// always on the same port.
func TestCrashAndUp(t *testing.T) {
	s := Start(t)
	if err := dial(s); err != nil {
		t.Fatalf("after Start: %v", err)
	}
	s.Crash()
	if err := dial(s); err == nil {
		t.Fatal("the server still listens after Crash")
	}
	s.Up()
	if err := dial(s); err != nil {
		t.Fatalf("after Up: %v\n%s", err, s.Log())
	}
	s.Stop()
	if err := dial(s); err == nil {
		t.Fatal("the server still listens after Stop")
	}
	s.Up()
	if err := dial(s); err != nil {
		t.Fatalf("after the second Up: %v", err)
	}
}
