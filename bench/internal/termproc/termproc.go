// Package termproc runs the real terminal service as a child process for
// the benchmarks: built from the workspace, started on a free port of
// 127.0.0.1 (read from its JSON "listening" log line) with a scratch data
// home and the caller's Redis prefix, and stopped with its keys deleted.
// (The benchmarks cannot import the service: its packages are internal to
// its module.)
package termproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/redisx"
)

// Package is the terminal service's main package, relative to the
// workspace root.
const Package = "./services/terminal/cmd/terminal"

// Build compiles the terminal service from the workspace at root.
func Build(ctx context.Context, root, binary string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", binary, Package)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", Package, err, out)
	}
	return nil
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

	secret   string
	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
	mu       sync.Mutex
	problems []string // log lines at level WARN or ERROR
	redisURL string
	prefix   string
}

// Start launches the service and returns once it has logged the address
// it listens on and answers its health route.
func Start(ctx context.Context, o Options) (*Service, error) {
	s := &Service{exited: make(chan struct{}), secret: o.Secret, redisURL: o.RedisURL, prefix: o.Prefix}
	// Cancelling ctx stops the service as Stop does: SIGTERM, then SIGKILL.
	s.cmd = exec.CommandContext(ctx, o.Binary) //nolint:gosec // G204: the binary Build just compiled
	s.cmd.Cancel = func() error { return s.cmd.Process.Signal(syscall.SIGTERM) }
	s.cmd.WaitDelay = stopTimeout
	s.cmd.Env = append([]string{
		"TERMINAL_ADDR=127.0.0.1:0",
		"SVC_CODE_HOME=" + o.Home,
		"SVC_INTERNAL_SECRET=" + o.Secret,
		"REDIS_URL=" + o.RedisURL,
		"REDIS_PREFIX=" + o.Prefix,
		"LOG_FORMAT=json",
		"LOG_LEVEL=info", // the listening line is at info
	}, o.Env...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout = io.Discard
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start terminal: %w", err)
	}
	addr := make(chan string, 1)
	var early []string // the first lines, for a start that fails
	go func() {
		defer close(s.exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line struct{ Msg, Addr, Level string }
			_ = json.Unmarshal(sc.Bytes(), &line)
			s.mu.Lock()
			if len(early) < 50 {
				early = append(early, sc.Text())
			}
			if line.Level == "WARN" || line.Level == "ERROR" || line.Level == "" {
				s.problems = append(s.problems, sc.Text())
			}
			s.mu.Unlock()
			if line.Msg == "listening" {
				if _, _, err := net.SplitHostPort(line.Addr); err == nil {
					select {
					case addr <- line.Addr:
					default:
					}
				}
			}
		}
		s.waitErr = s.cmd.Wait()
	}()
	select {
	case s.Addr = <-addr:
	case <-s.exited:
		s.mu.Lock()
		defer s.mu.Unlock()
		return nil, fmt.Errorf("terminal exited before listening: %w\n%s", exitError(s.waitErr), strings.Join(early, "\n"))
	case <-time.After(30 * time.Second):
		return nil, errors.Join(errors.New("terminal did not log its address within 30 s"), s.Stop())
	case <-ctx.Done():
		return nil, errors.Join(ctx.Err(), s.Stop())
	}
	if err := s.waitHealthy(ctx, 30*time.Second); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// exitError is how a child ended: its error, or exit status 0.
func exitError(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}

// HealthPath is the service's health route.
const HealthPath = "/api/health/terminal"

func (s *Service) waitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		code, err := s.Do(ctx, http.MethodGet, HealthPath, true)
		if err == nil && code == http.StatusOK {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("terminal exited before it was healthy: %w", exitError(s.waitErr))
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("terminal not healthy on %s: %w", s.Addr, err)
			}
			return fmt.Errorf("terminal not healthy on %s: status %d", s.Addr, code)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

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

// Pid is the service's process id.
func (s *Service) Pid() int { return s.cmd.Process.Pid }

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
	var errs []error
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		errs = append(errs, fmt.Errorf("signal terminal: %w", err))
	}
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
		errs = append(errs, fmt.Errorf("terminal ignored SIGTERM for %s; killed", stopTimeout))
	}
	if err := DeleteKeys(s.redisURL, s.prefix); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// DeleteKeys removes every Redis key under prefix.
func DeleteKeys(redisURL, prefix string) error {
	if prefix == "" {
		return errors.New("refusing to delete Redis keys under an empty prefix")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb, err := redisx.Connect(ctx, redisURL)
	if err != nil {
		return fmt.Errorf("clean up Redis keys %s*: %w", prefix, err)
	}
	defer func() { _ = rdb.Close() }()
	iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("scan Redis keys %s*: %w", prefix, err)
	}
	if len(keys) > 0 {
		if err := rdb.Del(ctx, keys...).Err(); err != nil {
			return fmt.Errorf("delete Redis keys %s*: %w", prefix, err)
		}
	}
	return nil
}
