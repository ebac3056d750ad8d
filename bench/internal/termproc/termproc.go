// Package termproc runs the real terminal service as a child process for
// the benchmarks, with package proc: built from the workspace, started on
// a free port of 127.0.0.1 (read from its JSON "listening" log line) with
// a scratch data home and the caller's Redis prefix, and stopped with its
// keys deleted. (The benchmarks cannot import the service: its packages
// are internal to its module.)
package termproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/svc-code/svc-code/bench/internal/proc"
	"github.com/svc-code/svc-code/libs/protocol"
)

// Package is the terminal service's main package, relative to the
// workspace root.
const Package = "./services/terminal/cmd/terminal"

// Build compiles the terminal service from the workspace at root.
func Build(ctx context.Context, root, binary string) error {
	return proc.Build(ctx, root, Package, binary)
}

// Options say how to run the service.
type Options struct {
	Binary   string
	Home     string // SVC_CODE_HOME
	Secret   string // the internal credential
	RedisURL string
	Prefix   string // REDIS_PREFIX
	// Env is added to the service's environment (HOME, SHELL, PATH...).
	Env []string
}

// Service is a running terminal service.
type Service struct {
	// Addr is its host:port.
	Addr string

	*proc.Process
	secret   string
	mu       sync.Mutex
	early    []string // the first lines, for a start that fails
	problems []string // log lines at level WARN or ERROR
	redisURL string
	prefix   string
}

// Start launches the service and returns once it has logged the address
// it listens on and answers its health route. Cancelling ctx stops the
// service as Stop does: SIGTERM, then SIGKILL.
func Start(ctx context.Context, o Options) (*Service, error) {
	s := &Service{secret: o.Secret, redisURL: o.RedisURL, prefix: o.Prefix}
	var err error
	s.Process, err = proc.Start(ctx, proc.Config{
		Name: "terminal", Path: o.Binary, StopTimeout: stopTimeout, Lines: s.line,
		Env: append([]string{
			"TERMINAL_ADDR=127.0.0.1:0",
			"SVC_CODE_HOME=" + o.Home,
			"SVC_INTERNAL_SECRET=" + o.Secret,
			"REDIS_URL=" + o.RedisURL,
			"REDIS_PREFIX=" + o.Prefix,
			"LOG_FORMAT=json",
			"LOG_LEVEL=info", // the listening line is at info
		}, o.Env...),
	})
	if err != nil {
		return nil, err
	}
	if s.Addr, err = s.WaitListening(ctx, 30*time.Second); err != nil {
		s.mu.Lock()
		early := strings.Join(s.early, "\n")
		s.mu.Unlock()
		return nil, errors.Join(fmt.Errorf("%w\n%s", err, early), s.Stop())
	}
	if err := s.WaitReady(ctx, 30*time.Second, proc.GetOK("http://"+s.Addr+HealthPath, s.Header())); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// line notes a line of the service's log.
func (s *Service) line(text string) {
	var line struct{ Level string }
	_ = json.Unmarshal([]byte(text), &line)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.early) < 50 {
		s.early = append(s.early, text)
	}
	if line.Level == "WARN" || line.Level == "ERROR" || line.Level == "" {
		s.problems = append(s.problems, text)
	}
}

// HealthPath is the service's health route.
const HealthPath = "/api/health/terminal"

// Do sends a bodiless request to the service, with the internal
// credential when internal is true, and returns the status.
func (s *Service) Do(ctx context.Context, method, path string, internal bool) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+s.Addr+path, nil)
	if err != nil {
		return 0, err
	}
	if internal {
		req.Header.Set(protocol.HeaderInternal, s.secret)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// Header is what a direct client sends: the internal credential.
func (s *Service) Header() http.Header {
	return http.Header{protocol.HeaderInternal: []string{s.secret}}
}

// Problems is what the service logged at level WARN or ERROR, and any
// line that was not JSON.
func (s *Service) Problems() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.problems, "\n")
}

// stopTimeout is how long the service has to stop after SIGTERM.
const stopTimeout = 15 * time.Second

// Stop ends the service with SIGTERM (SIGKILL after stopTimeout) and
// deletes every Redis key under its prefix.
func (s *Service) Stop() error {
	return errors.Join(s.Process.Stop(), proc.DeleteKeys(s.redisURL, s.prefix))
}
