package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/svc-code/svc-code/libs/redisx"
)

// TestRunEndToEnd runs the whole benchmark, small, against the real
// terminal service and gateway (WeTTY left out: its install is npm's), and
// checks what it wrote and that it left nothing behind.
func TestRunEndToEnd(t *testing.T) {
	before := goleak.IgnoreCurrent()
	redisURL := os.Getenv("TEST_REDIS_URL")
	if redisURL == "" {
		redisURL = "redis://127.0.0.1:6379/0"
	}
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	gateway := "<!-- bench:gateway:start -->\ngateway figures\n<!-- bench:gateway:end -->\n"
	if err := os.WriteFile(out, []byte("# Benchmarks\n\n"+gateway), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout bytes.Buffer
	err := run(ctx, []string{
		"-size", "2", "-r", "1", "-echoes", "20", "-interrupts", "1", "-flood", "100ms",
		"-wetty=false", "-quiet-wait", "0", "-max-others", "100", "-o", out, "-redis", redisURL,
	}, &stdout)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stdout.String())
	}
	doc, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(doc), "# Benchmarks\n\n"+gateway+"\n"+startMarker+"\n") ||
		!strings.Contains(string(doc), endMarker+"\n\n"+flowStartMarker+"\n") || !strings.HasSuffix(string(doc), flowEndMarker+"\n") {
		t.Errorf("BENCHMARKS.md should keep the gateway section and append the terminal one, then the flow-control one:\n%s", doc)
	}
	// The flow-control rows: a slow flow=1 reader alone loses nothing.
	for _, p := range []string{"direct", "gateway"} {
		row := regexp.MustCompile(`\| ` + regexp.QuoteMeta(flowAlone) + ` \| ` + p + ` \| ([0-9]+) \| [0-9.]+ \| ([0-9]+) \| ([0-9]+) \|`).FindSubmatch(doc)
		if row == nil || string(row[2]) != "0" || string(row[3]) != "0" {
			t.Errorf("flow row for %s: %q, want nothing dropped and no screen", p, row)
		}
	}
	for _, path := range []string{"raw PTY (no socket)", "terminal service, direct", "through the gateway"} {
		row := regexp.MustCompile(`\| ` + regexp.QuoteMeta(path) + ` \| ([0-9.]+) MB/s( \([^)]*\))? \|`).FindSubmatch(doc)
		if row == nil {
			t.Errorf("no throughput row for %s:\n%s", path, doc)
			continue
		}
		if v, _ := strconv.ParseFloat(string(row[1]), 64); v <= 0 {
			t.Errorf("%s: throughput %s MB/s", path, row[1])
		}
	}
	if !strings.Contains(string(doc), "| throughput through the gateway ahead of wetty | – | not measured |") {
		t.Errorf("the wetty goal should read not measured:\n%s", doc)
	}

	// Nothing left behind: Redis keys, child processes, goroutines.
	prefix := regexp.MustCompile(`Redis keys under (\S+)`).FindStringSubmatch(stdout.String())
	if prefix == nil {
		t.Fatalf("the output does not name the Redis prefix:\n%s", stdout.String())
	}
	rdb, err := redisx.Connect(ctx, redisURL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if keys, err := rdb.Keys(ctx, prefix[1]+"*").Result(); err != nil || len(keys) > 0 {
		t.Errorf("Redis keys left under %s: %v (%v)", prefix[1], keys, err)
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("child processes left: %v", kids)
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	goleak.VerifyNone(t, before)
}

// children lists the running processes whose parent is this one.
func children(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == me {
			out = append(out, e.Name()+" "+string(b[:i+1]))
		}
	}
	return out
}
