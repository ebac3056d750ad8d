// Package chatproc runs the real chat service as child processes for the
// chat benchmark: built from the workspace with the fake Claude CLI, on a
// throwaway PostgreSQL schema and Redis prefix that are removed afterwards.
// (The benchmark cannot import chat: its packages are internal to its
// module.)
package chatproc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/svc-code/svc-code/libs/pgmigrate"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/redisx"
)

// Packages of the chat service and of its fake Claude CLI, relative to the
// workspace root.
const (
	ChatPackage = "./services/chat/cmd/chat"
	FakePackage = "./services/chat/cmd/fakeclaude"
)

// DefaultDatabaseURL is used when TEST_DATABASE_URL is not set.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Build compiles pkg from the workspace at root into binary.
func Build(ctx context.Context, root, pkg, binary string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", binary, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return nil
}

// Schema is a throwaway PostgreSQL schema.
type Schema struct {
	Name string
	URL  string // the base URL with search_path set to the schema
	base string
}

// NewSchema creates a fresh schema on the database at base.
func NewSchema(ctx context.Context, base string) (*Schema, error) {
	suffix, err := RandomHex(6)
	if err != nil {
		return nil, err
	}
	s := &Schema{Name: "chatbench_" + suffix, base: base}
	if err := s.exec(ctx, "CREATE SCHEMA "+s.Name); err != nil {
		return nil, err
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("parse database URL: %w", err), s.Drop())
	}
	q := u.Query()
	q.Set("search_path", s.Name)
	u.RawQuery = q.Encode()
	s.URL = u.String()
	return s, nil
}

// Drop removes the schema and everything in it.
func (s *Schema) Drop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.exec(ctx, "DROP SCHEMA IF EXISTS "+s.Name+" CASCADE")
}

func (s *Schema) exec(ctx context.Context, sql string) error {
	pool, err := pgmigrate.Connect(ctx, "", "TEST_DATABASE_URL", s.base)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// DeleteKeys removes every Redis key under prefix.
func DeleteKeys(redisURL, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb, err := redisx.Connect(ctx, redisURL)
	if err != nil {
		return fmt.Errorf("clean up Redis keys %s*: %w", prefix, err)
	}
	defer func() { _ = rdb.Close() }()
	iter := rdb.Scan(ctx, 0, prefix+"*", 500).Iterator()
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

// Options say how to run one chat instance.
type Options struct {
	Binary      string
	Home        string // its data home (SVC_CODE_HOME and HOME)
	DatabaseURL string
	RedisURL    string
	RedisPrefix string
	Secret      string
	Env         []string // more variables, e.g. FAKECLAUDE_DELAY for the agents
}

// Instance is a running chat process.
type Instance struct {
	Addr   string
	secret string

	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	logs    *syncBuffer
}

// Start launches a chat instance and returns once it answers its health
// route.
func Start(ctx context.Context, o Options) (*Instance, error) {
	addr, err := freeAddr(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Home, 0o700); err != nil {
		return nil, err
	}
	in := &Instance{Addr: addr, secret: o.Secret, exited: make(chan struct{}), logs: &syncBuffer{}}
	in.cmd = exec.Command(o.Binary) //nolint:gosec // G204: the binary Build just compiled
	in.cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + o.Home,
		"SVC_CODE_HOME=" + o.Home,
		"CHAT_ADDR=" + addr,
		"DATABASE_URL=" + o.DatabaseURL,
		"REDIS_URL=" + o.RedisURL,
		"REDIS_PREFIX=" + o.RedisPrefix,
		"SVC_INTERNAL_SECRET=" + o.Secret,
		"LOG_FORMAT=json",
		"LOG_LEVEL=warn",
	}, o.Env...)
	in.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in.cmd.Stdout = in.logs
	in.cmd.Stderr = in.logs
	if err := in.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start chat: %w", err)
	}
	go func() {
		in.waitErr = in.cmd.Wait()
		close(in.exited)
	}()
	if err := in.waitHealthy(ctx, 30*time.Second); err != nil {
		return nil, errors.Join(err, in.Stop())
	}
	return in, nil
}

func (in *Instance) waitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if status, _, err := in.Do(ctx, http.MethodGet, "/api/health/chat", ""); err == nil && status == http.StatusOK {
			return nil
		}
		select {
		case <-in.exited:
			return fmt.Errorf("chat exited before it was healthy: %v\n%s", in.waitErr, in.logs)
		case <-ctx.Done():
			return fmt.Errorf("chat not healthy on %s: %w\n%s", in.Addr, ctx.Err(), in.logs)
		case <-tick.C:
		}
	}
}

var client = &http.Client{Timeout: 30 * time.Second}

// Do sends a request with the internal credential (and body as JSON when
// not empty) and returns the status and body.
func (in *Instance) Do(ctx context.Context, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+in.Addr+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(protocol.HeaderInternal, in.secret)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// Pid is the instance's process id.
func (in *Instance) Pid() int { return in.cmd.Process.Pid }

// Logs is what the instance wrote so far.
func (in *Instance) Logs() string { return in.logs.String() }

const stopTimeout = 20 * time.Second

// Stop ends the instance with SIGTERM (SIGKILL of its process group after
// stopTimeout).
func (in *Instance) Stop() error {
	if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal chat: %w", err)
	}
	select {
	case <-in.exited:
		return nil
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-in.cmd.Process.Pid, syscall.SIGKILL)
		<-in.exited
		return fmt.Errorf("chat ignored SIGTERM for %s; killed", stopTimeout)
	}
}

// RSS is the resident set size of process pid, in bytes.
func RSS(pid int) (int64, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	return parseVmRSS(f)
}

// parseVmRSS reads the VmRSS line of a /proc/<pid>/status file.
func parseVmRSS(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmRSS line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmRSS: %w", err)
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no VmRSS line")
}

func freeAddr(ctx context.Context) (string, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// RandomHex is n random bytes in hex.
func RandomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(b.buf.String())
}
