package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Generous: the first start provisions a database and the machine is shared.
const (
	readyTimeout = 120 * time.Second
	stopTimeout  = 40 * time.Second
)

// TestRunProfilesSideBySide starts two host profiles with run.sh in one
// HOME, as `SVC_CODE_PROFILE=NAME make run` does, and checks the promises of
// issue 15 items 1, 6, 8 and 10 that live in run.sh and provision.sh.
func TestRunProfilesSideBySide(t *testing.T) {
	root := repoRoot(t)
	bin := buildServices(t, root)
	home := t.TempDir()
	super := superuserURL()
	t.Cleanup(func() { dropDatabases(t, super, home, "a", "b") })

	// Like make test's own environment: run.sh must keep these from the services.
	common := []string{
		"TEST_DATABASE_URL=" + super,
		"TEST_REDIS_URL=redis://127.0.0.1:6379/0",
		"TEST_CANARY=run-sh-must-drop-this",
		"PROVISION_DATABASE_URL=" + super,
	}
	a := startStack(t, root, bin, home, "a", common)
	a.waitReady()
	b := startStack(t, root, bin, home, "b", append(common, "SVC_CODE_PASSWORD=b-chose-this-password"))
	b.waitReady()

	t.Run("one database and roles per data home", func(t *testing.T) {
		aURL, aRO := a.postgresEnv(t)
		bURL, bRO := b.postgresEnv(t)
		if dbName(aURL) == dbName(bURL) {
			t.Fatalf("both profiles use database %q", dbName(aURL))
		}
		for _, u := range []string{aURL, aRO, bURL, bRO} {
			if !regexp.MustCompile(`^svc_code_[0-9a-f]{8}$`).MatchString(dbName(u)) {
				t.Errorf("database %q is not named after its data home (svc_code_<hash>)", dbName(u))
			}
		}
		// b was provisioned after a: a's roles must still log in with a's passwords.
		for _, u := range []string{aURL, aRO, bURL, bRO} {
			if err := psqlLogin(u); err != nil {
				t.Errorf("login as %s after both provisioned: %v", roleName(u), err)
			}
		}
	})

	t.Run("services get no test or superuser variables", func(t *testing.T) {
		for _, s := range []*stack{a, b} {
			kids := s.services()
			for _, name := range []string{"gateway", "chat", "terminal", "shadow", "analytics"} {
				pid, ok := kids[name]
				if !ok {
					t.Fatalf("%s: no %s process among run.sh's children (%v)", s.profile, name, kids)
				}
				for _, kv := range environ(t, pid) {
					key, _, _ := strings.Cut(kv, "=")
					bad := strings.HasPrefix(key, "TEST_") || key == "PROVISION_DATABASE_URL"
					if name == "gateway" || name == "terminal" {
						bad = bad || strings.Contains(key, "DATABASE_URL")
					}
					if name != "gateway" {
						bad = bad || strings.HasPrefix(key, "SVC_CODE_PASSWORD")
					}
					if bad {
						t.Errorf("%s: %s's environment has %s", s.profile, name, key)
					}
				}
			}
		}
	})

	t.Run("shells see no test, database or Redis URL", func(t *testing.T) {
		out := a.exec(t, "env")
		redisPW := a.redisPassword(t)
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "TEST_") || strings.Contains(line, "postgres://") ||
				strings.Contains(line, "redis://") || strings.Contains(line, redisPW) {
				t.Errorf("/api/exec env shows %q", line)
			}
		}
	})

	t.Run("the first password stays out of the logs", func(t *testing.T) {
		// The file's password, when there is one, and the gateway's old wording, either way.
		pwFile := filepath.Join(home, ".config", "svc-code", "profiles", "a", "first-password")
		raw, readErr := os.ReadFile(pwFile)
		pw := strings.TrimSpace(string(raw))
		logs := filepath.Join(a.dataHome(), "logs")
		_ = filepath.WalkDir(logs, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, _ := os.ReadFile(p)
			if bytes.Contains(b, []byte("your password is")) || (len(pw) >= 8 && bytes.Contains(b, []byte(pw))) {
				t.Errorf("%s contains the generated password", p)
			}
			return nil
		})
		if readErr != nil {
			t.Fatalf("the generated password's file: %v", readErr)
		}
		if len(pw) < 8 {
			t.Fatalf("%s holds %q, want a password", pwFile, pw)
		}
		if st, err := os.Stat(pwFile); err != nil {
			t.Error(err)
		} else if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", pwFile, st.Mode().Perm())
		}
		if !strings.Contains(a.banner(), pw) {
			t.Error("the banner does not show the generated password on the terminal")
		}
		for _, s := range []*stack{a, b} {
			if strings.Contains(s.banner(), "above") {
				t.Errorf("%s: the banner still points at a password printed above:\n%s", s.profile, s.banner())
			}
		}
		if !strings.Contains(b.banner(), "SVC_CODE_PASSWORD") {
			t.Error("b: the banner does not say its password is the one given in SVC_CODE_PASSWORD")
		}
	})

	t.Run("each data home's Redis requires its password", func(t *testing.T) {
		for _, s := range []*stack{a, b} {
			if got := redisPing(t, s.ports.redis, ""); !strings.HasPrefix(got, "-NOAUTH") {
				t.Errorf("%s: PING without a password = %q, want -NOAUTH", s.profile, got)
			}
			if got := redisPing(t, s.ports.redis, s.redisPassword(t)); got != "+PONG" {
				t.Errorf("%s: PING with the password = %q, want +PONG", s.profile, got)
			}
		}
	})

	// The README's first session: a session over the API, its terminal with svc-ws.
	t.Run("first session", func(t *testing.T) {
		project := t.TempDir()
		var created struct {
			SessionID string `json:"session_id"`
		}
		status := a.api(t, http.MethodPost, "/api/sessions", `{"cwd": "`+project+`"}`, &created)
		if status != http.StatusCreated || created.SessionID == "" {
			t.Fatalf("POST /api/sessions: %d %+v", status, created)
		}
		cmd := exec.Command(filepath.Join(root, "deploy", "scripts", "svc-ws"),
			"/ws/terminal?session="+created.SessionID+"&cwd="+project)
		// The token from the profile's config file; the port is the test's own (no ports.env).
		cmd.Env = []string{
			"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SVC_CODE_PROFILE=a", "LANG=C.UTF-8",
			fmt.Sprintf("SVC_URL=http://127.0.0.1:%d", a.ports.svc),
		}
		cmd.Stdin = strings.NewReader("echo $((6*7))\nexit 3\n")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("svc-ws: %v\n%s", err, stderr.String())
		}
		for _, want := range []string{`"type":"connected"`, "42\r\n", `{"type":"exit","code":3}`} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("svc-ws output lacks %q:\n%s", want, stdout.String())
			}
		}
	})

	t.Run("Ctrl-C is a requested stop", func(t *testing.T) {
		for _, s := range []*stack{a, b} {
			kids := s.services()
			mark := s.out.Len()
			s.interrupt()
			code := s.wait(t)
			after := s.out.String()[mark:]
			if code != 0 {
				t.Errorf("%s: run.sh exited %d after Ctrl-C, want 0", s.profile, code)
			}
			for _, line := range strings.Split(after, "\n") {
				if strings.HasPrefix(line, "run: ") && (strings.Contains(line, "exited") || strings.Contains(line, "stopped because")) {
					t.Errorf("%s: a requested stop reads as a failure: %q", s.profile, line)
				}
			}
			for name, pid := range kids {
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("%s: %s (pid %d) still runs after run.sh ended", s.profile, name, pid)
				}
			}
		}
	})

	t.Run("a second run keeps the previous logs and the database", func(t *testing.T) {
		before, _ := a.postgresEnv(t)
		again := startStack(t, root, bin, home, "a", common)
		again.waitReady()
		after, _ := again.postgresEnv(t)
		if before != after {
			t.Errorf("the second run changed postgres.env: %s, then %s", dbName(before), dbName(after))
		}
		prev, err := os.ReadFile(filepath.Join(a.dataHome(), "logs", "gateway.log.1"))
		if err != nil {
			t.Fatalf("the first run's gateway log: %v", err)
		}
		if !bytes.Contains(prev, []byte("gateway_listening")) {
			t.Errorf("gateway.log.1 does not hold the first run's log:\n%s", prev)
		}
		if strings.Contains(again.out.String(), "generated on this first start") {
			t.Error("the second run claims a first start")
		}
		again.terminate()
		if code := again.wait(t); code != 0 {
			t.Errorf("run.sh exited %d after SIGTERM, want 0", code)
		}
	})
}

// --- the stack -------------------------------------------------------------------

type ports struct{ svc, chat, terminal, shadow, analytics, redis int }

// stack is one run.sh, in a process group of its own as a shell's foreground job is.
type stack struct {
	t       *testing.T
	profile string
	home    string
	ports   ports
	cmd     *exec.Cmd
	out     *syncBuffer
	done    chan struct{}
	code    int
}

func startStack(t *testing.T, root, bin, home, profile string, extra []string) *stack {
	t.Helper()
	p := freePorts(t)
	env := []string{
		"PATH=" + os.Getenv("PATH"), "LANG=C", "HOME=" + home,
		"SVC_CODE_PROFILE=" + profile,
		"SVC_ADDR=127.0.0.1:" + strconv.Itoa(p.svc),
		"CHAT_ADDR=127.0.0.1:" + strconv.Itoa(p.chat),
		"TERMINAL_ADDR=127.0.0.1:" + strconv.Itoa(p.terminal),
		"SHADOW_ADDR=127.0.0.1:" + strconv.Itoa(p.shadow),
		"ANALYTICS_ADDR=127.0.0.1:" + strconv.Itoa(p.analytics),
		"SVC_REDIS_PORT=" + strconv.Itoa(p.redis),
		"SVC_BIN_DIR=" + bin, "SVC_BUILD=false", "HEALTH_TIMEOUT=60",
	}
	// HOME moves Go's caches: keep this test's, should run.sh build after all.
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOTOOLCHAIN"} {
		if v, err := exec.Command("go", "env", k).Output(); err == nil && len(bytes.TrimSpace(v)) > 0 {
			env = append(env, k+"="+string(bytes.TrimSpace(v)))
		}
	}
	s := &stack{t: t, profile: profile, home: home, ports: p, out: &syncBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command("bash", filepath.Join(root, "deploy", "scripts", "run.sh"))
	s.cmd.Dir = root
	s.cmd.Env = append(env, extra...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A child inherits an ignored SIGINT (go test run in the background of a
	// script): a handler here makes exec give it the default back.
	if signal.Ignored(os.Interrupt) {
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt)
		t.Cleanup(func() { signal.Stop(c) })
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start run.sh: %v", err)
	}
	go func() {
		err := s.cmd.Wait()
		s.code = 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			s.code = ee.ExitCode()
		} else if err != nil {
			s.code = -1
		}
		close(s.done)
	}()
	t.Cleanup(s.cleanup)
	return s
}

func (s *stack) waitReady() {
	s.t.Helper()
	deadline := time.After(readyTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(s.out.String(), "svc-code is running at") {
		select {
		case <-s.done:
			s.t.Fatalf("%s: run.sh exited %d before it was ready:\n%s", s.profile, s.code, s.out.String())
		case <-deadline:
			s.t.Fatalf("%s: run.sh not ready within %v:\n%s", s.profile, readyTimeout, s.out.String())
		case <-tick.C:
		}
	}
}

// banner is what run.sh prints once every service is up, for the user.
func (s *stack) banner() string {
	out := s.out.String()
	i := strings.Index(out, "svc-code is running at")
	if i < 0 {
		return ""
	}
	out = out[i:]
	if j := strings.Index(out, "Stop "); j >= 0 {
		out = out[:j]
	}
	return out
}

// interrupt is Ctrl-C on the terminal: SIGINT to the foreground process group.
func (s *stack) interrupt() { _ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGINT) }

func (s *stack) terminate() { _ = s.cmd.Process.Signal(syscall.SIGTERM) }

// wait returns run.sh's exit code, failing the test when it does not end in time.
func (s *stack) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-s.done:
		return s.code
	case <-time.After(stopTimeout):
		t.Fatalf("%s: run.sh still runs %v after the stop:\n%s", s.profile, stopTimeout, s.out.String())
		return -1
	}
}

// cleanup stops whatever still runs: run.sh with SIGTERM (it stops its
// services), then SIGKILL to anything left, services included.
func (s *stack) cleanup() {
	select {
	case <-s.done:
		return
	default:
	}
	kids := s.services()
	s.terminate()
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
		s.t.Errorf("%s: run.sh did not stop on SIGTERM; killing it and its services", s.profile)
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

func (s *stack) dataHome() string {
	return filepath.Join(s.home, ".svc-code", "profiles", s.profile)
}

func (s *stack) configPath() string {
	return filepath.Join(s.home, ".config", "svc-code", "profiles", s.profile, "config.yaml")
}

// postgresEnv returns the data home's DATABASE_URL and READONLY_DATABASE_URL.
func (s *stack) postgresEnv(t *testing.T) (owner, readonly string) {
	t.Helper()
	vars := readEnvFile(t, filepath.Join(s.dataHome(), "postgres.env"))
	return vars["DATABASE_URL"], vars["READONLY_DATABASE_URL"]
}

func (s *stack) redisPassword(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dataHome(), "redis", "password"))
	if err != nil {
		t.Fatalf("%s: the data home's Redis password: %v", s.profile, err)
	}
	return strings.TrimSpace(string(b))
}

// services maps each program run.sh started (gateway, chat, ..., redis-server)
// to its pid.
func (s *stack) services() map[string]int {
	out := map[string]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(s.cmd.Process.Pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		name := filepath.Base(strings.Fields(argv0 + " x")[0])
		switch name {
		case "gateway", "chat", "terminal", "shadow", "analytics", "redis-server":
			out[name] = pid
		}
	}
	return out
}

// api sends a JSON body to the gateway with the profile's API token, decodes
// the answer into out and returns the status.
func (s *stack) api(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	cfg, err := os.ReadFile(s.configPath())
	if err != nil {
		t.Fatal(err)
	}
	token := ""
	for _, line := range strings.Split(string(cfg), "\n") {
		if v, ok := strings.CutPrefix(line, "api_token: "); ok {
			token = strings.TrimSpace(v)
		}
	}
	if token == "" {
		t.Fatalf("no api_token in %s", s.configPath())
	}
	req, _ := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", s.ports.svc, path), strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("%s %s: status %d, %v", method, path, resp.StatusCode, err)
	}
	return resp.StatusCode
}

// exec runs command through the gateway's /api/exec and returns its stdout.
func (s *stack) exec(t *testing.T, command string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"command": command, "cwd": s.home})
	var got struct {
		Stdout   string `json:"stdout"`
		ExitCode int    `json:"exit_code"`
	}
	if status := s.api(t, http.MethodPost, "/api/exec", string(body), &got); status != http.StatusOK || got.ExitCode != 0 {
		t.Fatalf("/api/exec %q: status %d, exit %d", command, status, got.ExitCode)
	}
	return got.Stdout
}

// --- helpers -----------------------------------------------------------------------

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "deploy", "scripts", "run.sh")); err != nil {
		t.Fatalf("repository root: %v", err)
	}
	return root
}

// buildServices builds the five services once, for both stacks (run.sh's
// SVC_BUILD=false), with this test's Go caches and race detector setting.
func buildServices(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"build", "-o", dir + "/"}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args,
		"./services/gateway/cmd/gateway", "./services/chat/cmd/chat", "./services/terminal/cmd/terminal",
		"./services/shadow/cmd/shadow", "./services/analytics/cmd/analytics")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// freePorts picks six ports nothing listens on: held open together, then released.
func freePorts(t *testing.T) ports {
	t.Helper()
	var ls []net.Listener
	var ps []int
	for range 6 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ps = append(ps, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports{ps[0], ps[1], ps[2], ps[3], ps[4], ps[5]}
}

func superuserURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			vars[k] = v
		}
	}
	return vars
}

var urlParts = regexp.MustCompile(`^postgres(?:ql)?://([^:/@]+):[^@]*@[^/]*/([^?]*)`)

func dbName(u string) string {
	if m := urlParts.FindStringSubmatch(u); m != nil {
		return m[2]
	}
	return ""
}

func roleName(u string) string {
	if m := urlParts.FindStringSubmatch(u); m != nil {
		return m[1]
	}
	return ""
}

func psqlLogin(u string) error {
	cmd := exec.Command("psql", u, "-X", "-Atq", "-c", "select 1")
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// dropDatabases removes what provisioning created for the profiles' data homes:
// only names of the svc_code_<hash> kind, never another instance's.
func dropDatabases(t *testing.T, super, home string, profiles ...string) {
	named := regexp.MustCompile(`^svc_code_[0-9a-f]{8}$`)
	for _, p := range profiles {
		b, err := os.ReadFile(filepath.Join(home, ".svc-code", "profiles", p, "postgres.env"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			v, ok := strings.CutPrefix(line, "DATABASE_URL=")
			if !ok || !named.MatchString(dbName(v)) {
				continue
			}
			db := dbName(v)
			ro := "svc_readonly_" + strings.TrimPrefix(db, "svc_code_")
			// One -c each: DROP DATABASE runs outside a transaction.
			cmd := exec.Command("psql", super, "-X", "-q", "-v", "ON_ERROR_STOP=1",
				"-c", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)",
				"-c", "DROP ROLE IF EXISTS "+db, "-c", "DROP ROLE IF EXISTS "+ro)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("drop %s: %v\n%s", db, err, out)
			}
		}
	}
}

// redisPing sends PING (after AUTH when password is set) and returns the reply line.
func redisPing(t *testing.T, port int, password string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 5*time.Second)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	if password != "" {
		fmt.Fprintf(c, "AUTH %s\r\n", password)
		if line, _ := r.ReadString('\n'); strings.TrimSpace(line) != "+OK" {
			return "AUTH: " + strings.TrimSpace(line)
		}
	}
	fmt.Fprint(c, "PING\r\n")
	line, err := r.ReadString('\n')
	if err != nil {
		return "read: " + err.Error()
	}
	return strings.TrimSpace(line)
}

func environ(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("environment of pid %d: %v", pid, err)
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// syncBuffer is a bytes.Buffer safe for the child's writers and the test's readers.
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
	return b.buf.String()
}

func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}
