// Package wetty installs and runs WeTTY (the npm package wetty, a web
// terminal whose browser client speaks socket.io) for the terminal
// benchmark, and drives it with a small Node program (client.mjs) that
// speaks to it as its browser client does. WeTTY and socket.io-client are
// installed with npm into a cache directory outside the repository, at
// pinned versions; nothing is downloaded but npm packages.
package wetty

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/svc-code/svc-code/bench/internal/proc"
)

// The pinned versions: socket.io-client matches the socket.io major that
// WeTTY's server uses (socket.io ^4.8.3 in wetty 3.2.0).
const (
	Version       = "3.2.0"
	ClientVersion = "4.8.3"
)

//go:embed client.mjs
var clientScript []byte

// clientFile is client.mjs's name in the install directory, where Node
// resolves its import of socket.io-client.
const clientFile = "termbench-client.mjs"

// DefaultDir is where Install puts WeTTY: svc-code-bench/wetty-<version>
// in the user's cache directory ($XDG_CACHE_HOME, else ~/.cache).
func DefaultDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find a cache directory for wetty: %w", err)
	}
	return filepath.Join(cache, "svc-code-bench", "wetty-"+Version), nil
}

// Install makes sure dir holds wetty and socket.io-client at the pinned
// versions, with a working node-pty, running `npm install` there when it
// does not; npm's output goes to log. It also writes the client script.
func Install(ctx context.Context, dir string, log io.Writer) error {
	if err := installed(ctx, dir); err != nil {
		fmt.Fprintf(log, "installing wetty@%s and socket.io-client@%s into %s (%v)\n", Version, ClientVersion, dir, err)
		if err := npmInstall(ctx, dir, log); err != nil {
			return err
		}
		if err := installed(ctx, dir); err != nil {
			return fmt.Errorf("wetty is not usable after npm install in %s: %w", dir, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, clientFile), clientScript, 0o644); err != nil { //nolint:gosec // G306: a script, not a secret
		return fmt.Errorf("write the wetty client: %w", err)
	}
	return nil
}

// installed says why dir is not a usable install, or nil.
func installed(ctx context.Context, dir string) error {
	for name, want := range map[string]string{"wetty": Version, "socket.io-client": ClientVersion} {
		got, err := packageVersion(filepath.Join(dir, "node_modules", name, "package.json"))
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s is %s, want %s", name, got, want)
		}
	}
	// node-pty is a native module: make sure it loads and runs here.
	cmd := exec.CommandContext(ctx, "node", "-e",
		`const p=require('node-pty');const t=p.spawn('/bin/sh',['-c','exit 7'],{});t.onExit(e=>process.exit(e.exitCode===7?0:1))`)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("node-pty does not work: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

func packageVersion(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var p struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return p.Version, nil
}

func npmInstall(ctx context.Context, dir string, log io.Writer) error {
	if _, err := exec.LookPath("npm"); err != nil {
		return fmt.Errorf("wetty needs Node.js and npm: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // G301: a cache of public packages
		return err
	}
	manifest := fmt.Sprintf(`{
  "name": "svc-code-bench-wetty",
  "private": true,
  "description": "WeTTY for svc-code's terminal benchmark (bench/cmd/termbench)",
  "dependencies": {"wetty": %q, "socket.io-client": %q}
}
`, Version, ClientVersion)
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(manifest), 0o644); err != nil { //nolint:gosec // G306: not a secret
		return err
	}
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--omit=dev")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm install in %s: %w", dir, err)
	}
	return nil
}

// BasePath is where the benchmark serves WeTTY; its socket.io endpoint is
// BasePath+"/socket.io".
const BasePath = "/wetty"

// ErrNotRoot means WeTTY would not run a local command: unless it runs
// as root it logs in over ssh to localhost instead.
var ErrNotRoot = errors.New("wetty runs a local shell only as root (otherwise it ssh-es to localhost)")

// Options say how to run the server.
type Options struct {
	// Command is the shell WeTTY runs for each connection, as one string
	// (WeTTY runs it with `env -S`).
	Command string
	// Env is the server's (and so the shell's) whole environment.
	Env []string
	// Workdir is the shell's working directory.
	Workdir string
}

// Server is a running WeTTY server.
type Server struct {
	// URL is its http://host:port.
	URL string

	*proc.Process
}

// stopTimeout is how long the server has to stop after SIGTERM.
const stopTimeout = 10 * time.Second

// Start runs WeTTY from dir (where Install put it) on a free port of
// 127.0.0.1, and returns once it answers HTTP. Cancelling ctx stops the
// server as Stop does.
func Start(ctx context.Context, dir string, o Options) (*Server, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	addr, err := proc.FreeAddr(ctx)
	if err != nil {
		return nil, err
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + addr}
	s.Process, err = proc.Start(ctx, proc.Config{
		Name: "wetty", Path: "node", Dir: o.Workdir, Env: o.Env, StopTimeout: stopTimeout, LogLimit: 1 << 20,
		Args: []string{
			filepath.Join(dir, "node_modules", "wetty", "build", "main.js"),
			"--host", "127.0.0.1", "--port", port, "--base", BasePath, "--command", o.Command,
		},
	})
	if err != nil {
		return nil, err
	}
	if err := s.WaitReady(ctx, 30*time.Second, proc.GetOK(s.URL+BasePath, nil)); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// Problems is what the server logged at level warn or error.
func (s *Server) Problems() string { return problems(s.Log()) }

// problems is the lines of log at level warn or error, and those that are
// not JSON.
func problems(log string) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		var l struct{ Level string }
		if json.Unmarshal([]byte(line), &l) != nil || l.Level == "warn" || l.Level == "error" {
			if strings.TrimSpace(line) != "" {
				out = append(out, line)
			}
		}
	}
	return strings.Join(out, "\n")
}

// Stop ends the server with SIGTERM (SIGKILL after stopTimeout); the
// shells it started get SIGHUP as their terminals close.
func (s *Server) Stop() error { return s.Process.Stop() }

// Op is one operation of the client, as client.mjs reads it.
type Op struct {
	Op        string `json:"op"` // "cat", "echo" or "interrupt"
	URL       string `json:"url"`
	Path      string `json:"path"`
	File      string `json:"file,omitempty"`
	Count     int    `json:"count,omitempty"`
	FloodMS   int64  `json:"flood_ms,omitempty"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// Result is what the client measured.
type Result struct {
	Error       string  `json:"error"`
	Ready       bool    `json:"ready"`
	Bytes       int64   `json:"bytes"`
	NS          int64   `json:"ns"`
	LatenciesNS []int64 `json:"latencies_ns"`
	FloodBytes  int64   `json:"flood_bytes"`
}

// Client is one run of client.mjs: connected and synced, waiting for Go.
type Client struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr *proc.Buffer
	done   bool
}

// Prepare starts the client for op against server s, and returns once it
// has connected and the shell has answered: the next step, Go, is only
// the measured operation.
func (s *Server) Prepare(ctx context.Context, dir string, op Op) (*Client, error) {
	op.URL, op.Path = s.URL, BasePath+"/socket.io"
	arg, err := json.Marshal(op)
	if err != nil {
		return nil, err
	}
	c := &Client{stderr: &proc.Buffer{Limit: 1 << 20}}
	c.cmd = exec.CommandContext(ctx, "node", filepath.Join(dir, clientFile), string(arg)) //nolint:gosec // G204: our own script
	c.cmd.Dir = dir
	c.cmd.Stderr = c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the wetty client: %w", err)
	}
	c.lines = bufio.NewScanner(stdout)
	c.lines.Buffer(make([]byte, 64<<10), 16<<20)
	r, err := c.next()
	if err != nil {
		return nil, errors.Join(err, c.Close())
	}
	if !r.Ready {
		return nil, errors.Join(errors.New("the wetty client did not get ready"), c.Close())
	}
	return c, nil
}

// next reads the client's next result line.
func (c *Client) next() (Result, error) {
	if !c.lines.Scan() {
		err := c.lines.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return Result{}, fmt.Errorf("wetty client: %w: %s", err, c.stderr.String())
	}
	var r Result
	if err := json.Unmarshal(c.lines.Bytes(), &r); err != nil {
		return Result{}, fmt.Errorf("wetty client printed %.200q: %w", c.lines.Bytes(), err)
	}
	if r.Error != "" {
		return Result{}, fmt.Errorf("wetty client: %s", r.Error)
	}
	return r, nil
}

// Pid is the client's process id.
func (c *Client) Pid() int { return c.cmd.Process.Pid }

// Go runs the operation and returns its result.
func (c *Client) Go() (Result, error) {
	if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
		return Result{}, fmt.Errorf("wetty client: %w", err)
	}
	r, err := c.next()
	if err != nil {
		return Result{}, err
	}
	_ = c.stdin.Close()
	c.done = true
	if err := c.cmd.Wait(); err != nil {
		return Result{}, fmt.Errorf("wetty client: %w: %s", err, c.stderr.String())
	}
	return r, nil
}

// Close ends the client if Go did not.
func (c *Client) Close() error {
	if c.done {
		return nil
	}
	c.done = true
	_ = c.stdin.Close()
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
	return nil
}
