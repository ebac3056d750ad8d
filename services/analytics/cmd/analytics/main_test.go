package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestBinary runs the built command the way the gateway's tests and docker
// do: configured by the environment alone, on 127.0.0.1:0, its address read
// from its "listening" log line; then -healthcheck, then SIGTERM.
func TestBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "analytics")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dbURL := mustSchema(t)
	env := append(os.Environ(),
		"ANALYTICS_ADDR=127.0.0.1:0",
		"LOG_FORMAT=json",
		"SVC_CODE_HOME="+t.TempDir(),
		"SVC_INTERNAL_SECRET=", // the key file in the data home, shared with -healthcheck
		"SVC_INTERNAL_SECRET_FILE=",
		"REDIS_URL="+envOr("TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
		"DATABASE_URL="+dbURL,
		"READONLY_DATABASE_URL="+dbURL,
	)
	cmd := exec.Command(bin)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed once the process has exited and its log is read
	var exitErr error
	addr := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Logf("analytics: %s", sc.Text())
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Addr
			}
		}
		exitErr = cmd.Wait() // after stderr is drained, as Wait requires
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited // no logging after the test
	})

	var listening string
	select {
	case listening = <-addr:
	case <-exited:
		t.Fatalf("analytics exited before listening: %v", exitErr)
	case <-time.After(30 * time.Second):
		t.Fatal("no listening line within 30s")
	}

	healthcheck := func() (string, error) {
		hc := exec.Command(bin, "-healthcheck")
		hc.Env = append(env, "ANALYTICS_ADDR="+listening)
		out, err := hc.CombinedOutput()
		return string(out), err
	}
	if out, err := healthcheck(); err != nil {
		t.Errorf("-healthcheck of the running analytics: %v\n%s", err, out)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if exitErr != nil {
			t.Errorf("analytics after SIGTERM: %v, want exit 0", exitErr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("analytics did not exit within 15s of SIGTERM")
	}

	out, err := healthcheck()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.HasPrefix(out, "analytics: healthcheck") {
		t.Errorf("-healthcheck of a stopped analytics: %v %q, want exit 1 with the reason", err, out)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// mustSchema returns the test database's URL with search_path set to a new
// schema, dropped when the test ends.
func mustSchema(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dbURL := envOr("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("PostgreSQL must be reachable at TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres): %v", err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	schema := "t_analytics_binary_" + hex.EncodeToString(suffix)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
