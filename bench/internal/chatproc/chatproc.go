// Package chatproc runs the real chat service as child processes for the
// chat benchmark, with package proc (which builds it and the fake Claude
// CLI from the workspace, and deletes the Redis prefix afterwards), on a
// throwaway PostgreSQL schema that is dropped afterwards. (The benchmark
// cannot import chat: its packages are internal to its module.)
package chatproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/svc-code/svc-code/bench/internal/proc"
	"github.com/svc-code/svc-code/libs/pgmigrate"
	"github.com/svc-code/svc-code/libs/protocol"
)

// Packages of the chat service and of its fake Claude CLI, relative to the
// workspace root; build them with proc.Build.
const (
	ChatPackage = "./services/chat/cmd/chat"
	FakePackage = "./services/chat/cmd/fakeclaude"
)

// DefaultDatabaseURL is used when TEST_DATABASE_URL is not set.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Schema is a throwaway PostgreSQL schema.
type Schema struct {
	Name string
	URL  string // the base URL with search_path set to the schema
	base string
}

// NewSchema creates a fresh schema on the database at base.
func NewSchema(ctx context.Context, base string) (*Schema, error) {
	suffix, err := proc.RandomHex(6)
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

	*proc.Process
}

// stopTimeout is how long an instance has to stop after SIGTERM.
const stopTimeout = 20 * time.Second

// Start launches a chat instance and returns once it answers its health
// route. The instance runs in a process group of its own and outlives
// ctx: Stop ends it (SIGTERM, then SIGKILL of the group after
// stopTimeout).
func Start(ctx context.Context, o Options) (*Instance, error) {
	addr, err := proc.FreeAddr(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Home, 0o700); err != nil {
		return nil, err
	}
	in := &Instance{Addr: addr, secret: o.Secret}
	in.Process, err = proc.Start(ctx, proc.Config{
		Name: "chat", Path: o.Binary, StopTimeout: stopTimeout, Group: true,
		Env: append([]string{
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
		}, o.Env...),
	})
	if err != nil {
		return nil, err
	}
	health := proc.GetOK("http://"+addr+"/api/health/chat", http.Header{protocol.HeaderInternal: []string{o.Secret}})
	if err := in.WaitReady(ctx, 30*time.Second, health); err != nil {
		return nil, errors.Join(err, in.Stop())
	}
	return in, nil
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

// Logs is what the instance wrote so far.
func (in *Instance) Logs() string { return in.Log() }

// RSS is the resident set size of process pid, in bytes.
func RSS(pid int) (int64, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	return parseVMRSS(f)
}

// parseVMRSS reads the VmRSS line of a /proc/<pid>/status file.
func parseVMRSS(r io.Reader) (int64, error) {
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
