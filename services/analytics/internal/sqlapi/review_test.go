package sqlapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
)

// TestStringContinuationKeepsEscapes: PostgreSQL continues a string
// across white space holding a newline ('a'\n'b' is 'ab'), and the
// continued part of an E'...' string keeps backslash escapes. A validator
// that read the continuation as a plain string would end it elsewhere
// than the server does and let a denied call through.
func TestStringContinuationKeepsEscapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	for _, sql := range []string{
		"SELECT E'a'\n'\\'' , pg_advisory_lock(42) AS pwned --'",
		"SELECT E'a' -- comment\n  '\\'' , pg_advisory_lock(42) AS pwned --'",
		"SELECT E'a'\r\n-- c\n\t'\\'' , pg_advisory_lock(42) AS pwned --'",
	} {
		resp := e.post(t, "text/plain", sql, "")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%q: status %d %s, want 400 (refused or a syntax error)", sql, resp.StatusCode, body)
		}
	}
}

// TestHugeRowIsRefusedInBoundedMemory: one value of 200 MB (PostgreSQL
// allows up to 1 GB) must not be taken into the process' memory, several
// times over by the encoders: the row is refused with sql_error, and the
// heap stays small. Not parallel: it measures the process' heap.
func TestHugeRowIsRefusedInBoundedMemory(t *testing.T) {
	e := newEnv(t, envOptions{timeout: 60 * time.Second})
	for _, format := range []string{"", "tsv"} {
		peak := sampleHeap(t, func() {
			resp := e.post(t, "text/plain", "SELECT repeat('x', 200 * 1000 * 1000) AS big", format)
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var body protocol.ErrorBody
			_ = json.Unmarshal(raw, &body)
			if resp.StatusCode != http.StatusBadRequest || body.Error != "sql_error" || !strings.Contains(body.Message, "larger than") {
				t.Errorf("format %q: got %d %.300s, want 400 sql_error about the row size", format, resp.StatusCode, raw)
			}
		})
		if peak > 64<<20 {
			t.Errorf("format %q: the heap grew by %d MB for a refused row", format, peak>>20)
		}
		// Cut mid-result: the rows before it arrive, the trailer says why.
		resp := e.post(t, "text/plain", "SELECT g, CASE WHEN g = 3 THEN repeat('x', 200 * 1000 * 1000) END AS big FROM generate_series(1, 3) g", format)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), "sql_error") || !strings.Contains(string(raw), "larger than") {
			t.Errorf("format %q: cut result: %d %.300s", format, resp.StatusCode, raw)
		}
	}
	// A large value within the limit still comes whole, in both formats.
	r := e.query(t, "SELECT length(repeat('y', 4000000)) AS n, repeat('y', 4000000) AS v")
	if len(r.Rows) != 1 || r.Rows[0][0] != "4000000" || len(r.Rows[0][1]) != 4000000 {
		t.Errorf("a 4 MB value: %d rows", len(r.Rows))
	}
	if r := e.query(t, "SELECT 1 AS after"); len(r.Rows) != 1 {
		t.Errorf("next query: %+v", r)
	}
}

// sampleHeap runs f and returns by how much the heap grew at most.
func sampleHeap(t *testing.T, f func()) int64 {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > peak.Load() {
					peak.Store(m.HeapAlloc)
				}
			}
		}
	}()
	f()
	close(done)
	<-sampled
	return int64(peak.Load()) - int64(base)
}

// TestHugeSQLIsRefusedInBoundedMemory: the validator keeps a token per
// word of the SQL, so a body of many tiny tokens ("1,1,1,...", 16 MiB,
// within the server's body limit) would take half a gigabyte before any
// check. The SQL is capped at MaxSQLBytes: 413, with little memory.
func TestHugeSQLIsRefusedInBoundedMemory(t *testing.T) {
	e := newEnv(t, envOptions{})
	// A server with a body limit like the service's (32 MiB by default).
	log := slog.New(slog.DiscardHandler)
	app := svchttp.New(svchttp.Config{
		Service: "analytics", Secret: internalauth.FromString(testSecret), BodyLimit: 32 << 20, Log: log,
	})
	e.h.Register(app)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
	big := &env{baseURL: "http://" + ln.Addr().String()}

	sql := "SELECT " + strings.Repeat("1,", 8<<20) + "1"
	for _, tt := range []struct{ ctype, body string }{
		{"text/plain", sql},
		{"application/json", `{"sql":` + strconv.Quote(sql) + `}`},
	} {
		var status int
		var body protocol.ErrorBody
		grew := sampleHeap(t, func() { status, body = big.postError(t, tt.ctype, tt.body, "") })
		if status != http.StatusRequestEntityTooLarge || body.Error != "payload_too_large" {
			t.Errorf("%s: got %d %+v, want 413 payload_too_large", tt.ctype, status, body)
		}
		if grew > 128<<20 {
			t.Errorf("%s: the heap grew by %d MB for a %d MB body", tt.ctype, grew>>20, len(tt.body)>>20)
		}
	}
	// Just within the cap still runs.
	within := "SELECT 1 AS x" + strings.Repeat(" ", MaxSQLBytes-len("SELECT 1 AS x"))
	if r := e.query(t, within); len(r.Rows) != 1 {
		t.Errorf("SQL of exactly MaxSQLBytes: %+v", r)
	}
}
