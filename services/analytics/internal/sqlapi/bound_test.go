package sqlapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
)

// tailWriter counts what is written and keeps its last 4 KiB.
type tailWriter struct {
	n    int64
	tail []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	w.tail = append(w.tail, p...)
	if len(w.tail) > 4096 {
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-4096:]...)
	}
	return len(p), nil
}

// TestHugeResultIsCutInBoundedMemory: a query that would send ~300 MB
// (300 rows of 1 MB) is cut at the response bound with payload_too_large
// in its trailer, the rest never read, the heap small; before, all of it
// was streamed. Not parallel: it measures the process' heap.
func TestHugeResultIsCutInBoundedMemory(t *testing.T) {
	const bound = 8 << 20
	e := newEnv(t, envOptions{timeout: 60 * time.Second, maxResponse: bound})
	const sql = "SELECT g, repeat('x', 1000 * 1000) AS pad FROM generate_series(1, 300) g"
	for _, format := range []string{"", "tsv"} {
		var w tailWriter
		var status int
		start := time.Now()
		peak := sampleHeap(t, func() {
			resp := e.post(t, "text/plain", sql, format)
			status = resp.StatusCode
			_, _ = io.Copy(&w, resp.Body)
			resp.Body.Close()
		})
		tail := string(w.tail)
		if status != http.StatusOK || !strings.Contains(tail, "payload_too_large") || !strings.Contains(tail, "larger than the 8 MiB") {
			t.Errorf("format %q: %d, %d bytes ending %.300q; want a result cut with payload_too_large", format, status, w.n, tail)
		}
		if w.n > bound {
			t.Errorf("format %q: %d bytes sent, want at most the %d bound", format, w.n, bound)
		}
		if peak > 64<<20 {
			t.Errorf("format %q: the heap grew by %d MB", format, peak>>20)
		}
		t.Logf("format %q: %d bytes in %v, heap +%d MB", format, w.n, time.Since(start), peak>>20)
		if i := strings.LastIndex(tail, `],"count":`); format == "" && i >= 0 {
			var r jsonResult
			if err := json.Unmarshal([]byte("{"+tail[i+2:]), &r); err != nil || r.Count < 1 || r.Error != "payload_too_large" {
				t.Errorf("trailer %q: %+v, %v; want the count of the rows sent and the error", tail[i:], r, err)
			}
		}
	}
	if r := e.query(t, "SELECT 1 AS after"); len(r.Rows) != 1 {
		t.Errorf("next query: %+v", r)
	}
}

// TestHugeAggregateIsRefusedInBoundedMemory: string_agg building one
// value of 300 MB (PostgreSQL allows up to 1 GB) is refused with a clear
// sql_error, its row never read into memory; an aggregate that only
// measures it is fine.
func TestHugeAggregateIsRefusedInBoundedMemory(t *testing.T) {
	e := newEnv(t, envOptions{timeout: 60 * time.Second})
	var raw []byte
	var status int
	peak := sampleHeap(t, func() {
		resp := e.post(t, "text/plain", "SELECT string_agg(repeat('x', 1000 * 1000), '') AS big FROM generate_series(1, 300)", "")
		status = resp.StatusCode
		raw, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	})
	var body protocol.ErrorBody
	_ = json.Unmarshal(raw, &body)
	if status != http.StatusBadRequest || body.Error != "sql_error" || !strings.Contains(body.Message, "larger than the 16 MiB") {
		t.Errorf("got %d %.300s, want 400 sql_error about the row size", status, raw)
	}
	if peak > 64<<20 {
		t.Errorf("the heap grew by %d MB for a refused aggregate", peak>>20)
	}
	r := e.query(t, "SELECT length(string_agg(repeat('x', 1000 * 1000), '')) AS n FROM generate_series(1, 300)")
	if len(r.Rows) != 1 || r.Rows[0][0] != "300000000" {
		t.Errorf("length of the aggregate: %+v", r)
	}
}

func TestMaxResponseDefault(t *testing.T) {
	e := newEnv(t, envOptions{})
	if e.h.maxResponse != DefaultMaxResponseBytes {
		t.Errorf("default bound %d, want %d", e.h.maxResponse, DefaultMaxResponseBytes)
	}
	n := newEnv(t, envOptions{maxResponse: -1})
	if n.h.maxResponse != 0 {
		t.Errorf("negative MaxResponseBytes: bound %d, want none (0)", n.h.maxResponse)
	}
}
