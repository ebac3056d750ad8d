package wetty

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func writePackage(t *testing.T, dir, name, version string) {
	t.Helper()
	d := filepath.Join(dir, "node_modules", name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "package.json"), []byte(`{"name":"`+name+`","version":"`+version+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestInstalledChecksVersions(t *testing.T) {
	tests := []struct {
		name     string
		packages map[string]string
		wantErr  string
	}{
		{"nothing installed", nil, "no such file"},
		{"old wetty", map[string]string{"wetty": "2.7.0", "socket.io-client": ClientVersion}, "wetty is 2.7.0, want " + Version},
		{"other client", map[string]string{"wetty": Version, "socket.io-client": "4.8.1"}, "socket.io-client is 4.8.1"},
		{"no client", map[string]string{"wetty": Version}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, v := range tt.packages {
				writePackage(t, dir, name, v)
			}
			err := installed(context.Background(), dir)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("installed = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestClientScriptParses(t *testing.T) {
	path := filepath.Join(t.TempDir(), clientFile)
	if err := os.WriteFile(path, clientScript, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("node", "--check", path).CombinedOutput(); err != nil {
		t.Errorf("node --check %s: %v\n%s", clientFile, err, out)
	}
}

// TestClientProtocol runs stand-ins for client.mjs through Prepare and Go.
func TestClientProtocol(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		want       Result
		prepareErr string
		goErr      string
	}{
		{
			"a cat",
			`const o = JSON.parse(process.argv[2]);
			if (o.op !== 'cat' || o.file !== '/f' || o.path !== '/wetty/socket.io') process.exit(3);
			console.log(JSON.stringify({ready: true}));
			process.stdin.once('data', () => { console.log(JSON.stringify({bytes: 5, ns: 7})); process.exit(0); });`,
			Result{Bytes: 5, NS: 7},
			"", "",
		},
		{
			"echoes",
			`console.log('{"ready":true}');
			process.stdin.once('data', () => { console.log('{"latencies_ns":[1,2,3]}'); process.exit(0); });`,
			Result{LatenciesNS: []int64{1, 2, 3}},
			"", "",
		},
		{"cannot connect", `console.log('{"error":"connect: refused"}'); process.exit(1);`, Result{}, "connect: refused", ""},
		{"dies before ready", `process.exit(2);`, Result{}, "unexpected EOF", ""},
		{
			"fails during the operation",
			`console.log('{"ready":true}');
			process.stdin.once('data', () => { console.log('{"error":"timed out waiting"}'); process.exit(1); });`,
			Result{},
			"", "timed out waiting",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, clientFile), []byte(tt.script), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s := &Server{URL: "http://127.0.0.1:1"}
			c, err := s.Prepare(ctx, dir, Op{Op: "cat", File: "/f", TimeoutMS: 1000})
			if tt.prepareErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.prepareErr) {
					t.Fatalf("Prepare = %v, want an error containing %q", err, tt.prepareErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got, err := c.Go()
			if tt.goErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.goErr) {
					t.Fatalf("Go = %v, want an error containing %q", err, tt.goErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Bytes != tt.want.Bytes || got.NS != tt.want.NS || len(got.LatenciesNS) != len(tt.want.LatenciesNS) {
				t.Errorf("Go = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestProblems(t *testing.T) {
	log := `{"level":"info","message":"Server started"}
{"level":"http","message":"GET /wetty 200"}
{"level":"warn","message":"slow"}
(node:1) Warning: something
{"level":"error","message":"boom"}
`
	want := "{\"level\":\"warn\",\"message\":\"slow\"}\n(node:1) Warning: something\n{\"level\":\"error\",\"message\":\"boom\"}"
	if got := problems(log); got != want {
		t.Errorf("Problems =\n%s\nwant\n%s", got, want)
	}
}
