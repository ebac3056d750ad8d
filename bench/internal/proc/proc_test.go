package proc

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestListeningAddr(t *testing.T) {
	tests := []struct {
		line   string
		want   string
		wantOK bool
	}{
		{`{"level":"INFO","msg":"listening","addr":"127.0.0.1:4321"}`, "127.0.0.1:4321", true},
		{`{"msg":"listening","addr":"[::1]:80"}`, "[::1]:80", true},
		{`{"msg":"listening","addr":"127.0.0.1"}`, "", false},
		{`{"msg":"listening"}`, "", false},
		{`{"msg":"started","addr":"127.0.0.1:4321"}`, "", false},
		{`listening on 127.0.0.1:4321`, "", false},
		{``, "", false},
	}
	for _, tt := range tests {
		got, ok := ListeningAddr([]byte(tt.line))
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ListeningAddr(%q) = %q, %v; want %q, %v", tt.line, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestRootOf(t *testing.T) {
	tests := []struct {
		gowork, want string
		wantErr      bool
	}{
		{"/work/main/go.work\n", "/work/main", false},
		{"/a/go.work", "/a", false},
		{"\n", "", true},
		{"off\n", "", true},
	}
	for _, tt := range tests {
		got, err := rootOf(tt.gowork)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("rootOf(%q) = %q, %v; want %q, error %v", tt.gowork, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot(context.Background())
	if err != nil {
		t.Skipf("not in the workspace: %v", err)
	}
	for _, f := range []string{"go.work", "bench/internal/proc/proc.go"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("RepoRoot = %s, which has no %s: %v", root, f, err)
		}
	}
}

func TestScratch(t *testing.T) {
	root, dir, remove, err := Scratch(context.Background(), "proc-test-")
	if err != nil {
		t.Skipf("not in the workspace: %v", err)
	}
	if root == "" || !strings.HasPrefix(filepath.Base(dir), "proc-test-") {
		t.Errorf("Scratch = %q, %q", root, dir)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after remove, Stat(%s) = %v", dir, err)
	}
}

func TestOneOf(t *testing.T) {
	tests := []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"libs"}, "libs"},
		{[]string{"services/gateway", "libs"}, "services/gateway or libs"},
		{[]string{"services/gateway", "libs", "web"}, "services/gateway, libs or web"},
	}
	for _, tt := range tests {
		if got := oneOf(tt.names); got != tt.want {
			t.Errorf("oneOf(%q) = %q, want %q", tt.names, got, tt.want)
		}
	}
}

func TestBufferLimit(t *testing.T) {
	b := &Buffer{Limit: 4}
	for _, s := range []string{" ab", "cd", "ef", "gh "} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := b.String(); got != "abcd" {
		t.Errorf("String = %q, want %q (trimmed, the rest dropped)", got, "abcd")
	}
}

func TestDeleteKeysRefusesEmptyPrefix(t *testing.T) {
	if err := DeleteKeys("redis://127.0.0.1:1/0", ""); err == nil {
		t.Error("DeleteKeys with an empty prefix: no error")
	}
}

// shell starts sh -c script as a child.
func shell(t *testing.T, c Config, script string) *Process {
	t.Helper()
	c.Name, c.Path, c.Args = "child", "/bin/sh", []string{"-c", script}
	if c.StopTimeout == 0 {
		c.StopTimeout = 5 * time.Second
	}
	p, err := Start(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return p
}

func TestWaitListening(t *testing.T) {
	var lines []string
	p := shell(t, Config{Lines: func(l string) { lines = append(lines, l) }},
		`echo '{"msg":"starting"}' >&2; echo '{"msg":"listening","addr":"127.0.0.1:9"}' >&2; echo out; exec sleep 30`)
	addr, err := p.WaitListening(context.Background(), 10*time.Second)
	if err != nil || addr != "127.0.0.1:9" {
		t.Fatalf("WaitListening = %q, %v", addr, err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || p.Log() != "" {
		t.Errorf("lines %q, log %q: want the two stderr lines, and no log", lines, p.Log())
	}
}

func TestWaitListeningExit(t *testing.T) {
	p := shell(t, Config{Lines: func(string) {}}, `echo nope >&2; exit 3`)
	_, err := p.WaitListening(context.Background(), 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "child exited before listening: exit status 3") {
		t.Errorf("WaitListening = %v", err)
	}
}

func TestWaitReady(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") != "k" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	p := shell(t, Config{}, `echo hello; exec sleep 30`)
	if err := p.WaitReady(context.Background(), 5*time.Second, GetOK(srv.URL, http.Header{"X-Key": []string{"k"}})); err != nil {
		t.Fatal(err)
	}
	err := p.WaitReady(context.Background(), 200*time.Millisecond, GetOK(srv.URL, nil))
	if err == nil || !strings.Contains(err.Error(), "status 401") {
		t.Errorf("WaitReady without the header = %v, want status 401", err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if p.Log() != "hello" {
		t.Errorf("Log = %q", p.Log())
	}
	err = p.WaitReady(context.Background(), 5*time.Second, func(context.Context) error { return errors.New("no") })
	if err == nil || !strings.Contains(err.Error(), "child exited before it was ready") || !strings.HasSuffix(err.Error(), "\nhello") {
		t.Errorf("WaitReady after exit = %v", err)
	}
}

func TestStopKills(t *testing.T) {
	for _, group := range []bool{false, true} {
		p := shell(t, Config{Group: group, StopTimeout: 200 * time.Millisecond, Lines: func(string) {}},
			`trap '' TERM; echo '{"msg":"listening","addr":"127.0.0.1:9"}' >&2; while :; do sleep 0.05; done`)
		if _, err := p.WaitListening(context.Background(), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		err := p.Stop()
		if err == nil || !strings.Contains(err.Error(), "child ignored SIGTERM for 200ms; killed") {
			t.Errorf("group %v: Stop = %v", group, err)
		}
		if err := p.Stop(); err != nil {
			t.Errorf("group %v: second Stop = %v", group, err)
		}
	}
}
