// Package gatewayproc runs the real gateway as a child process for the
// benchmarks: built from the workspace, started on a free port with a
// scratch config, data home and Redis prefix, and stopped and cleaned up
// afterwards. (The benchmarks cannot import the gateway: its packages are
// internal to its module.)
package gatewayproc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/svc-code/svc-code/libs/configfile"
	"github.com/svc-code/svc-code/libs/redisx"
)

// Package is the gateway's main package, relative to the workspace root.
const Package = "./services/gateway/cmd/gateway"

// Build compiles the gateway from the workspace at root into binary.
func Build(ctx context.Context, root, binary string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", binary, Package)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", Package, err, out)
	}
	return nil
}

// Options say how to run the gateway.
type Options struct {
	Binary   string
	Dir      string // scratch directory for the config file and data home
	Backend  string // host:port serving every backend service
	Secret   string // the internal credential
	RedisURL string
	// RedisPrefix is the prefix of the gateway's Redis keys (its and the
	// backends' it shares them with); empty picks a fresh bench:<random>:.
	// Every key under it is deleted when the gateway stops.
	RedisPrefix string
}

// Gateway is a running gateway process.
type Gateway struct {
	// Addr is the gateway's host:port.
	Addr string
	// Token is the API token, for Authorization: Bearer.
	Token string

	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
	logs     *syncBuffer
	redisURL string
	prefix   string
}

// Start launches the gateway and returns once it answers /health.
func Start(ctx context.Context, o Options) (*Gateway, error) {
	addr, err := freeAddr(ctx)
	if err != nil {
		return nil, err
	}
	suffix, err := randomHex(6)
	if err != nil {
		return nil, err
	}
	password, err := randomHex(12)
	if err != nil {
		return nil, err
	}
	config := filepath.Join(o.Dir, "config.yaml")
	backend := "http://" + o.Backend
	g := &Gateway{
		Addr:     addr,
		exited:   make(chan struct{}),
		logs:     &syncBuffer{},
		redisURL: o.RedisURL,
		prefix:   "bench:" + suffix + ":",
	}
	if o.RedisPrefix != "" {
		g.prefix = o.RedisPrefix
	}
	// Cancelling ctx stops the gateway as Stop does: SIGTERM, then SIGKILL.
	g.cmd = exec.CommandContext(ctx, o.Binary) //nolint:gosec // G204: the binary is the gateway Build just compiled
	g.cmd.Cancel = func() error { return g.cmd.Process.Signal(syscall.SIGTERM) }
	g.cmd.WaitDelay = stopTimeout
	// A minimal environment, so that no SVC_* variable of the caller's
	// changes what is measured.
	g.cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + o.Dir,
		"SVC_ADDR=" + addr,
		"SVC_CONFIG=" + config,
		"SVC_CODE_HOME=" + filepath.Join(o.Dir, "home"),
		"SVC_INTERNAL_SECRET=" + o.Secret,
		"SVC_CODE_PASSWORD=" + password,
		"REDIS_URL=" + o.RedisURL,
		"REDIS_PREFIX=" + g.prefix,
		"CHAT_URL=" + backend,
		"TERMINAL_URL=" + backend,
		"SHADOW_URL=" + backend,
		"ANALYTICS_URL=" + backend,
		"LOG_LEVEL=warn",
	}
	g.cmd.SysProcAttr = sysProcAttr()
	g.cmd.Stdout = g.logs
	g.cmd.Stderr = g.logs
	if err := g.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	go func() {
		g.waitErr = g.cmd.Wait()
		close(g.exited)
	}()

	if err := g.waitHealthy(ctx, 30*time.Second); err != nil {
		return nil, errors.Join(err, g.Stop())
	}
	doc, err := configfile.New(config).Read()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("read gateway config: %w", err), g.Stop())
	}
	if g.Token, _ = doc.String("api_token"); g.Token == "" {
		return nil, errors.Join(fmt.Errorf("no api_token in %s", config), g.Stop())
	}
	return g, nil
}

// URL is the gateway's base URL for scheme ("http" or "ws").
func (g *Gateway) URL(scheme string) string { return scheme + "://" + g.Addr }

func (g *Gateway) waitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.URL("http")+"/health", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-g.exited:
			exit := g.waitErr
			if exit == nil {
				exit = errors.New("exit status 0")
			}
			return fmt.Errorf("gateway exited before it was healthy: %w\n%s", exit, g.logs)
		case <-ctx.Done():
			return fmt.Errorf("gateway not healthy on %s: %w\n%s", g.Addr, ctx.Err(), g.logs)
		case <-tick.C:
		}
	}
}

// Pid is the gateway's process id.
func (g *Gateway) Pid() int { return g.cmd.Process.Pid }

// Logs is what the gateway wrote to stdout and stderr so far.
func (g *Gateway) Logs() string { return g.logs.String() }

// stopTimeout is how long the gateway has to stop after SIGTERM.
const stopTimeout = 15 * time.Second

// Stop ends the gateway with SIGTERM (SIGKILL after stopTimeout) and
// deletes its Redis keys.
func (g *Gateway) Stop() error {
	var errs []error
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		errs = append(errs, fmt.Errorf("signal gateway: %w", err))
	}
	select {
	case <-g.exited:
	case <-time.After(stopTimeout):
		_ = g.cmd.Process.Kill()
		<-g.exited
		errs = append(errs, fmt.Errorf("gateway ignored SIGTERM for %s; killed", stopTimeout))
	}
	if err := g.deleteKeys(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// deleteKeys removes every Redis key under the gateway's prefix.
func (g *Gateway) deleteKeys() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb, err := redisx.Connect(ctx, g.redisURL)
	if err != nil {
		return fmt.Errorf("clean up Redis keys %s*: %w", g.prefix, err)
	}
	defer func() { _ = rdb.Close() }()
	iter := rdb.Scan(ctx, 0, g.prefix+"*", 100).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("scan Redis keys %s*: %w", g.prefix, err)
	}
	if len(keys) > 0 {
		if err := rdb.Del(ctx, keys...).Err(); err != nil {
			return fmt.Errorf("delete Redis keys %s*: %w", g.prefix, err)
		}
	}
	return nil
}

// freeAddr picks a free port on 127.0.0.1. Another process could take it
// before the gateway binds it; then the gateway fails to start, visibly.
func freeAddr(ctx context.Context) (string, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// RandomSecret is a fresh internal credential (32 hex digits).
func RandomSecret() (string, error) { return randomHex(16) }

// syncBuffer collects a child's output, which two pipes may write at once.
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
