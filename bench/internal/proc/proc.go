// Package proc is what the benchmarks share to run the workspace's
// programs as child processes: it finds the workspace root and the commit
// it is at, makes a scratch directory, builds a main package, starts a
// binary and waits until it logs its "listening" address or answers a
// probe, keeps what it logs, stops it with SIGTERM and a deadline (SIGKILL
// after), and deletes Redis keys by prefix.
package proc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/svc-code/svc-code/libs/redisx"
)

// RepoRoot is the workspace root: the directory of the go.work file in use.
func RepoRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOWORK").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOWORK: %w", err)
	}
	return rootOf(string(out))
}

// Scratch finds the workspace root (as RepoRoot does) and makes a fresh
// temporary directory, named as os.MkdirTemp names it after pattern;
// remove deletes the directory and everything in it.
func Scratch(ctx context.Context, pattern string) (root, dir string, remove func() error, err error) {
	if root, err = RepoRoot(ctx); err != nil {
		return "", "", nil, err
	}
	if dir, err = os.MkdirTemp("", pattern); err != nil {
		return "", "", nil, err
	}
	return root, dir, func() error { return os.RemoveAll(dir) }, nil
}

// rootOf is the workspace root for what `go env GOWORK` printed.
func rootOf(gowork string) (string, error) {
	work := strings.TrimSpace(gowork)
	if work == "" || work == "off" {
		return "", errors.New("not in the svc-code workspace (go env GOWORK is empty): run from the repository")
	}
	return filepath.Dir(work), nil
}

// Commit is the short hash of the commit the workspace at root is at.
func Commit(ctx context.Context, root string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Revision names the commit the workspace at root is at ("commit abc1234"),
// and says whether any of dirs (relative to root) has uncommitted changes;
// it is empty when git cannot tell.
func Revision(ctx context.Context, root string, dirs ...string) string {
	commit, err := Commit(ctx, root)
	if err != nil {
		return ""
	}
	rev := "commit " + commit
	args := append([]string{"-C", root, "status", "--porcelain", "--"}, dirs...)
	dirty, err := exec.CommandContext(ctx, "git", args...).Output()
	if err == nil && len(strings.TrimSpace(string(dirty))) > 0 {
		rev += " plus uncommitted changes in " + oneOf(dirs)
	}
	return rev
}

// oneOf lists names as "a, b or c".
func oneOf(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Build compiles the main package pkg (relative to the workspace root) from
// the workspace at root into binary.
func Build(ctx context.Context, root, pkg, binary string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", binary, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return nil
}

// RedisURL is $REDIS_URL, or the local default Redis when it is not set.
func RedisURL() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// FreeAddr picks a free port on 127.0.0.1 and returns its host:port.
// Another process could take it before the child binds it; then the child
// fails to start, visibly.
func FreeAddr(ctx context.Context) (string, error) {
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

// DeleteKeys removes every Redis key under prefix, which must not be empty.
func DeleteKeys(redisURL, prefix string) error {
	if prefix == "" {
		return errors.New("refusing to delete Redis keys under an empty prefix")
	}
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

// Config says how to run a child process.
type Config struct {
	// Name names the child in errors ("gateway").
	Name string
	Path string
	Args []string
	Dir  string
	// Env is the child's whole environment.
	Env []string
	// StopTimeout is how long the child has to stop after SIGTERM before
	// it is killed.
	StopTimeout time.Duration
	// Group runs the child in a process group of its own, which only Stop
	// ends (SIGKILL going to the whole group). Otherwise cancelling the
	// context given to Start stops the child as Stop does. Either way, on
	// Linux the child gets SIGTERM if the benchmark dies without stopping
	// it.
	Group bool
	// LogLimit bounds Log, in bytes (beyond it output is dropped); 0 keeps
	// everything.
	LogLimit int
	// Lines, when set, gets each line the child writes to stderr (which
	// then does not go to Log; stdout is dropped). WaitListening needs it.
	Lines func(line string)
}

// Process is a running child process.
type Process struct {
	name        string
	stopTimeout time.Duration
	group       bool
	cmd         *exec.Cmd
	exited      chan struct{}
	waitErr     error
	log         *Buffer
	listening   chan string
}

// Start starts the child c describes.
func Start(ctx context.Context, c Config) (*Process, error) {
	p := &Process{
		name: c.Name, stopTimeout: c.StopTimeout, group: c.Group,
		exited: make(chan struct{}), log: &Buffer{Limit: c.LogLimit}, listening: make(chan string, 1),
	}
	if c.Group {
		// Not bound to ctx: only Stop ends a Group child.
		p.cmd = exec.CommandContext(context.Background(), c.Path, c.Args...) //nolint:gosec // G204: the benchmarks' own binaries and arguments
	} else {
		p.cmd = exec.CommandContext(ctx, c.Path, c.Args...) //nolint:gosec // G204: the benchmarks' own binaries and arguments
		p.cmd.Cancel = func() error { return p.cmd.Process.Signal(syscall.SIGTERM) }
		p.cmd.WaitDelay = c.StopTimeout
	}
	p.cmd.Dir, p.cmd.Env = c.Dir, c.Env
	p.cmd.SysProcAttr = sysProcAttr(c.Group)
	var stderr io.Reader
	if c.Lines != nil {
		pipe, err := p.cmd.StderrPipe()
		if err != nil {
			return nil, err
		}
		stderr = pipe
		p.cmd.Stdout = io.Discard
	} else {
		p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Name, err)
	}
	go func() {
		defer close(p.exited)
		if stderr != nil {
			p.scan(stderr, c.Lines)
		}
		p.waitErr = p.cmd.Wait()
	}()
	return p, nil
}

// scan hands each line of r to lines, and the first listening address to
// WaitListening.
func (p *Process) scan(r io.Reader, lines func(string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines(sc.Text())
		if addr, ok := ListeningAddr(sc.Bytes()); ok {
			select {
			case p.listening <- addr:
			default:
			}
		}
	}
}

// ListeningAddr reads a JSON log line {"msg":"listening","addr":"host:port"}
// and returns its address.
func ListeningAddr(line []byte) (string, bool) {
	var l struct{ Msg, Addr string }
	if json.Unmarshal(line, &l) != nil || l.Msg != "listening" {
		return "", false
	}
	if _, _, err := net.SplitHostPort(l.Addr); err != nil {
		return "", false
	}
	return l.Addr, true
}

// WaitListening returns the address the child logs in its "listening"
// line (see Config.Lines), or an error when it exits, ctx ends or timeout
// passes first.
func (p *Process) WaitListening(ctx context.Context, timeout time.Duration) (string, error) {
	select {
	case addr := <-p.listening:
		return addr, nil
	case <-p.exited:
		return "", fmt.Errorf("%s exited before listening: %w", p.name, p.exitError())
	case <-time.After(timeout):
		return "", fmt.Errorf("%s did not log its address within %s", p.name, timeout)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// WaitReady calls probe every 50 ms until it succeeds, and fails when the
// child exits or timeout passes first; the error ends with the log.
func (p *Process) WaitReady(ctx context.Context, timeout time.Duration, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := probe(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready: %w%s", p.name, p.exitError(), p.logSuffix())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w%s", p.name, err, p.logSuffix())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// probeClient keeps no idle connection to the child.
var probeClient = &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// GetOK is a probe for WaitReady: a GET of url, with header, answered 200.
func GetOK(url string, header http.Header) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := probeClient.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
		}
		return nil
	}
}

// exitError is how the child ended: its error, or exit status 0. Only
// after exited is closed.
func (p *Process) exitError() error {
	if p.waitErr == nil {
		return errors.New("exit status 0")
	}
	return p.waitErr
}

func (p *Process) logSuffix() string {
	if l := p.Log(); l != "" {
		return "\n" + l
	}
	return ""
}

// Pid is the child's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Log is what the child wrote to stdout and stderr so far (nothing when
// Config.Lines takes its lines).
func (p *Process) Log() string { return p.log.String() }

// Stop ends the child with SIGTERM, and SIGKILL (of its group with
// Config.Group) when it has not exited after the stop timeout. Stopping a
// child that has exited does nothing.
func (p *Process) Stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s: %w", p.name, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(p.stopTimeout):
		if p.group {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		} else {
			_ = p.cmd.Process.Kill()
		}
		<-p.exited
		return fmt.Errorf("%s ignored SIGTERM for %s; killed", p.name, p.stopTimeout)
	}
}

// Buffer collects a child's output, which two pipes may write at once.
type Buffer struct {
	// Limit bounds what is kept, in bytes (beyond it output is dropped);
	// 0 keeps everything.
	Limit int

	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Limit > 0 && b.buf.Len() > b.Limit { // keep memory bounded: the start is what matters
		return len(p), nil
	}
	return b.buf.Write(p)
}

// String is what was written, without surrounding white space.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(b.buf.String())
}
