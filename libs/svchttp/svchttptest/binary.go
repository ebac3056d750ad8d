package svchttptest

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
)

// RunBinary builds the command in the test's directory (call it from the
// tests of cmd/<name>) and runs it the way the gateway's tests and docker
// do: configured by the environment alone, on 127.0.0.1:0, its address read
// from its "listening" log line; then -healthcheck, which must exit 0, then
// SIGTERM, which must end it with exit 0; then -healthcheck again, which
// must exit 1 with the reason.
func RunBinary(t *testing.T, s Service) {
	mustRedis(t)
	bin := filepath.Join(t.TempDir(), s.Name)
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := append(os.Environ(),
		s.AddrVar+"=127.0.0.1:0",
		"LOG_FORMAT=json",
		"SVC_CODE_HOME="+t.TempDir(),
		"SVC_INTERNAL_SECRET=", // the key file in the data home, shared with -healthcheck
		"SVC_INTERNAL_SECRET_FILE=",
		"REDIS_URL="+testRedisURL(),
	)
	if len(s.Postgres) > 0 {
		dbURL := pgmigratetest.MustSchema(t)
		for _, pg := range s.Postgres {
			env = append(env, pg.Var+"="+dbURL)
		}
	}
	cmd := exec.CommandContext(t.Context(), bin)
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
			t.Logf("%s: %s", s.Name, sc.Text())
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
		t.Fatalf("%s exited before listening: %v", s.Name, exitErr)
	case <-time.After(30 * time.Second):
		t.Fatal("no listening line within 30s")
	}

	healthcheck := func() (string, error) {
		hc := exec.CommandContext(t.Context(), bin, "-healthcheck")
		hc.Env = append(env, s.AddrVar+"="+listening)
		out, err := hc.CombinedOutput()
		return string(out), err
	}
	if out, err := healthcheck(); err != nil {
		t.Errorf("-healthcheck of the running %s: %v\n%s", s.Name, err, out)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if exitErr != nil {
			t.Errorf("%s after SIGTERM: %v, want exit 0", s.Name, exitErr)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("%s did not exit within 15s of SIGTERM", s.Name)
	}

	out, err := healthcheck()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.HasPrefix(out, s.Name+": healthcheck") {
		t.Errorf("-healthcheck of a stopped %s: %v %q, want exit 1 with the reason", s.Name, err, out)
	}
}
