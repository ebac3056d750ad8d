// Package pgtest runs a PostgreSQL server of a test's own, for fault tests
// that crash, stop and restart it: never the machine's shared server. Start
// makes a cluster with initdb in a temporary directory and starts postgres
// on a free loopback port; Crash stops it the way a crash does (pg_ctl
// stop -m immediate: no checkpoint, WAL not yet written is lost), Stop
// shuts it down cleanly, Up starts it again on the same port. The server
// is stopped and its directory removed when the test ends.
//
// It needs PostgreSQL's server programs (Bin, or TEST_PG_BIN); a test
// skips, with the reason, when initdb is missing. Run as root, the server
// runs as the postgres user (initdb refuses root). It uses the standard
// library only.
package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bin is where PostgreSQL's server programs are looked for when TEST_PG_BIN
// is not set: Debian's PostgreSQL 15.
const Bin = "/usr/lib/postgresql/15/bin"

// Server is a PostgreSQL server of one test.
type Server struct {
	tb   testing.TB
	bin  string
	dir  string // the cluster's data directory
	sock string // its Unix socket directory
	port int
	cred *syscall.Credential // nil: run as the test's user
	opts []string
	mu   sync.Mutex
	up   bool
}

// Option sets a server setting (postgres -c name=value).
type Option func(*Server)

// Setting passes -c name=value to postgres, e.g. Setting("wal_writer_delay",
// "10s").
func Setting(name, value string) Option {
	return func(s *Server) { s.opts = append(s.opts, "-c", name+"="+value) }
}

// Start creates a cluster and starts its server; the test skips when
// initdb is missing, and fails on any other problem.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	bin := os.Getenv("TEST_PG_BIN")
	if bin == "" {
		bin = Bin
	}
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil { //nolint:gosec // the test's own setting names PostgreSQL's bin directory
		tb.Skipf("pgtest: no initdb in %s (set TEST_PG_BIN to PostgreSQL's bin directory): %v", bin, err)
	}
	root, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{tb: tb, bin: bin, dir: filepath.Join(root, "data"), sock: root, port: freePort(tb)}
	for _, o := range opts {
		o(s)
	}
	tb.Cleanup(func() {
		s.stop("immediate")
		_ = os.RemoveAll(root)
	})
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			tb.Fatalf("pgtest: running as root needs a postgres user to run the server as: %v", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(root, int(uid), int(gid)); err != nil {
			tb.Fatal(err)
		}
	}
	s.run("initdb", "-D", s.dir, "-U", "postgres", "--auth=trust", "--no-sync", "--no-instructions", "-E", "UTF8", "--locale=C")
	s.Up()
	return s
}

// URL is the server's address for the postgres superuser, database
// postgres.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Port is the server's port, the same across restarts.
func (s *Server) Port() int { return s.port }

// Up starts the server (again), waiting until it accepts connections.
func (s *Server) Up() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.up {
		return
	}
	o := strings.Join(append([]string{
		"-p", strconv.Itoa(s.port), "-k", s.sock, "-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off", "-c", "full_page_writes=off",
	}, s.opts...), " ")
	s.run("pg_ctl", "start", "-D", s.dir, "-w", "-t", "60", "-l", filepath.Join(s.sock, "server.log"), "-o", o)
	s.up = true
}

// Crash ends the server as a crash does: every process at once, without a
// checkpoint or writing what waits in its WAL buffers (commits made with
// synchronous_commit off may be lost). The next Up recovers from the WAL.
func (s *Server) Crash() { s.tb.Helper(); s.stop("immediate") }

// Stop shuts the server down cleanly (sessions ended, checkpoint).
func (s *Server) Stop() { s.tb.Helper(); s.stop("fast") }

func (s *Server) stop(mode string) {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.up {
		return
	}
	s.run("pg_ctl", "stop", "-D", s.dir, "-m", mode, "-w", "-t", "60")
	s.up = false
}

// Log is the server's log so far, for a failing test's message.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.sock, "server.log"))
	return string(b)
}

// run runs one of the server's programs as the server's user.
func (s *Server) run(prog string, args ...string) {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, prog), args...) //nolint:gosec // PostgreSQL's own programs, from the test's setting
	cmd.Dir = s.sock
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		s.tb.Fatalf("pgtest: %s %s: %v\n%s\n%s", prog, strings.Join(args, " "), err, out.String(), s.Log())
	}
}

// freePort returns a loopback port nothing listens on now.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
