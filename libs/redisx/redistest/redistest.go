// Package redistest starts a private redis-server for a test that needs
// Redis configured its own way (a password, an ACL user), on a free
// loopback port, stopped when the test ends. The program must be on PATH;
// a test that needs it fails, not skips, when it is missing.
package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a running redis-server.
type Server struct {
	// Addr is its host:port.
	Addr string

	tb   testing.TB
	bin  string
	port int
	opt  redis.Options
	args []string
	mu   sync.Mutex
	stop func() // ends the running server; nil when none runs
}

// Kill ends the server at once (SIGKILL), as a crash does; what it held
// is gone (no persistence).
func (s *Server) Kill() {
	s.mu.Lock()
	stop := s.stop
	s.stop = nil
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Restart starts the server again, empty, on the same address (after
// Kill; it kills a running one first) and waits until it answers.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	if _, err := start(s.tb, s.bin, s.port, s.opt, s.args, s); err != nil {
		s.tb.Fatalf("restart redis-server: %v", err)
	}
}

// Start runs redis-server on 127.0.0.1 with no persistence and the
// configuration directives args (for instance "--requirepass", "pw"), and
// waits until it answers. opt is how to reach it once up (its Addr is
// filled in): the credentials the args require.
func Start(tb testing.TB, opt redis.Options, args ...string) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("redis-server must be installed for this test: %v", err)
	}
	var lastErr error
	for range 3 { // a port found free may be taken before redis binds it
		port, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		s, err := start(tb, bin, port, opt, args, nil)
		if err == nil {
			return s
		}
		lastErr = err
	}
	tb.Fatalf("start redis-server: %v", lastErr)
	return nil
}

// start runs redis-server on port; s, when not nil, is the Server it
// restarts.
func start(tb testing.TB, bin string, port int, opt redis.Options, args []string, s *Server) (*Server, error) {
	full := append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", tb.TempDir(), "--loglevel", "warning",
	}, args...)
	cmd := exec.Command(bin, full...) //nolint:noctx // the server lives until tb.Cleanup kills it (stop), not for a context
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	if s == nil {
		s = &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), tb: tb, bin: bin, port: port, opt: opt, args: args}
	}
	opt.Addr = s.Addr
	c := redis.NewClient(&opt)
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			break
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("redis-server exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("redis-server did not answer within 10s: %w\n%s", err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var once sync.Once
	stopOnce := func() { once.Do(stop) }
	s.mu.Lock()
	s.stop = stopOnce
	s.mu.Unlock()
	tb.Cleanup(stopOnce)
	return s, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") //nolint:noctx // closed at once: only its port is wanted
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("not a TCP address")
	}
	return addr.Port, nil
}

// AuthErrors is how many commands the server refused for want of
// authentication (NOAUTH) or for wrong credentials (WRONGPASS), from INFO
// errorstats; c must be authenticated.
func AuthErrors(ctx context.Context, c *redis.Client) (int, error) {
	info, err := c.Info(ctx, "errorstats").Result()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, line := range bytes.Split([]byte(info), []byte("\r\n")) {
		for _, kind := range []string{"errorstat_NOAUTH:count=", "errorstat_WRONGPASS:count="} {
			if v, ok := bytes.CutPrefix(line, []byte(kind)); ok {
				k, _ := strconv.Atoi(string(v))
				n += k
			}
		}
	}
	return n, nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
