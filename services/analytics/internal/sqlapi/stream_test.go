package sqlapi

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// slowTailSQL sends 49 rows of 2 KB at once (more than PostgreSQL's
// output buffer, so they leave the server), then sleeps before the last.
func slowTailSQL(sleep string) string {
	return `SELECT g, repeat('x', 2000) AS pad, CASE WHEN g = 50 THEN pg_sleep(` + sleep + `) END AS s
		FROM generate_series(1, 50) g`
}

// TestStreamsBeforeTheQueryEnds: the first rows reach the client while
// the statement is still running.
func TestStreamsBeforeTheQueryEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	start := time.Now()
	resp := e.post(t, "text/plain", slowTailSQL("2"), "")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	buf := make([]byte, 64<<10)
	var got []byte
	var firstRowAt time.Time
	for {
		n, err := resp.Body.Read(buf)
		got = append(got, buf[:n]...)
		if firstRowAt.IsZero() && bytes.Contains(got, []byte(`"rows":[["1"`)) {
			firstRowAt = time.Now()
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	end := time.Now()
	r, err := decodeJSONResult(got)
	if err != nil || r.Count != 50 || len(r.Rows) != 50 || r.Error != "" {
		t.Fatalf("body: %v, count %d, rows %d, error %q", err, r.Count, len(r.Rows), r.Error)
	}
	if firstRowAt.IsZero() || end.Sub(firstRowAt) < 1500*time.Millisecond {
		t.Errorf("first row at %v, end at %v after the start: the result was not streamed", firstRowAt.Sub(start), end.Sub(start))
	}
}

// TestStreamsMillionsOfRowsInBoundedMemory: a result far larger than the
// memory the process gains while serving it. Not parallel: it measures the
// process's heap, which other tests running beside it would grow.
func TestStreamsMillionsOfRowsInBoundedMemory(t *testing.T) {
	e := newEnv(t, envOptions{timeout: 120 * time.Second})
	const rows = 2_000_000
	// Read without keeping: count the bytes, keep the tail.
	var total int64
	tail := make([]byte, 0, 128)
	grew := sampleHeap(t, func() {
		resp := e.post(t, "text/plain", `SELECT g, 'row-' || g AS label FROM (SELECT generate_series(1, 2000000) AS g) s`, "")
		defer resp.Body.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			total += int64(n)
			tail = append(tail, buf[:n]...)
			if len(tail) > 64 {
				tail = append(tail[:0], tail[len(tail)-64:]...)
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	})
	if !strings.HasSuffix(string(tail), `,"count":2000000}`+"\n") {
		t.Fatalf("the result does not end with the count of %d rows: ...%s", rows, tail)
	}
	t.Logf("body %d MB, heap grew at most %d MB", total>>20, grew>>20)
	if total < 40<<20 {
		t.Fatalf("body of %d bytes: smaller than expected", total)
	}
	if grew > 16<<20 {
		t.Errorf("the heap grew by %d MB while streaming %d MB: the result is held in memory", grew>>20, total>>20)
	}
}

// TestDeadlineBeforeTheFirstRow: past the deadline the statement is
// cancelled inside PostgreSQL, the answer is INTERRUPT, and the backend
// is no longer running it within 1 s of the deadline.
func TestDeadlineBeforeTheFirstRow(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	e := newEnv(t, envOptions{timeout: timeout})
	const sql = "SELECT pg_sleep(20) AS sleeping_probe"
	seen := make(chan bool, 1)
	go func() { seen <- e.pollActivity(t, "sleeping_probe", true, 3*time.Second) }()
	start := time.Now()
	status, body := e.postError(t, "text/plain", sql, "")
	answered := time.Since(start)
	if status != http.StatusBadRequest || body.Error != "INTERRUPT" || !strings.Contains(body.Message, "deadline of 1s") {
		t.Fatalf("got %d %+v, want 400 INTERRUPT", status, body)
	}
	if answered < timeout || answered > timeout+time.Second {
		t.Errorf("answered after %v, want just after the %v deadline", answered, timeout)
	}
	if !<-seen {
		t.Fatal("the statement was never seen running in pg_stat_activity")
	}
	if !e.pollActivity(t, "sleeping_probe", false, time.Until(start.Add(timeout+time.Second))) {
		t.Error("the statement still runs in pg_stat_activity 1 s after the deadline")
	}
}

// TestDeadlineMidStream: when rows were already sent, the answer stays
// well-formed and says it was cut: JSON ends with "error":"INTERRUPT",
// TSV with the trailer line.
func TestDeadlineMidStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{timeout: time.Second})
	// JSON: still one well-formed object, with the envelope's members.
	resp := e.post(t, "text/plain", slowTailSQL("20"), "")
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	r, err := decodeJSONResult(body)
	if err != nil {
		t.Fatalf("cut JSON does not parse: %v", err)
	}
	if r.Error != "INTERRUPT" || !strings.Contains(r.Message, "deadline") || len(r.Rows) == 0 || int64(len(r.Rows)) != r.Count || len(r.Columns) != 3 {
		t.Errorf("cut JSON: error %q message %q, %d rows, count %d", r.Error, r.Message, len(r.Rows), r.Count)
	}
	// TSV: the rows sent, then the trailer line.
	resp = e.post(t, "text/plain", slowTailSQL("20"), "tsv")
	header, rows, trailer := decodeTSV(t, resp.Body)
	resp.Body.Close()
	if len(header) != 3 || len(rows) == 0 || len(trailer) != 2 || trailer[0] != "INTERRUPT" {
		t.Errorf("cut TSV: header %q, %d rows, trailer %q", header, len(rows), trailer)
	}
	if !e.pollActivity(t, "pg_sleep(20)", false, 2*time.Second) {
		t.Error("the cut statement still runs")
	}
}

// TestDeadlineWithAClientThatStopsReading: a client that takes the first
// bytes and then reads no more does not hold the connection, nor a slot,
// past the deadline.
func TestDeadlineWithAClientThatStopsReading(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{timeout: time.Second, maxConns: 1})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.baseURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	sql := `SELECT generate_series(1, 100000000) AS g, repeat('y', 1000) AS stuck_probe`
	req := "POST " + Path + " HTTP/1.1\r\nHost: x\r\nX-Svc-Internal: " + testSecret +
		"\r\nContent-Type: text/plain\r\nContent-Length: " + itoa(len(sql)) + "\r\n\r\n" + sql
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(make([]byte, 1024)); err != nil { // the head arrived; now stop reading
		t.Fatal(err)
	}
	// The only slot is free again after deadline + grace: another query
	// runs (each try waits for the slot up to its own 1 s deadline).
	start := time.Now()
	for {
		resp := e.post(t, "text/plain", "SELECT 1 AS after", "")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if !strings.Contains(string(body), "INTERRUPT") || time.Since(start) > 10*time.Second {
			t.Fatalf("second query: %d %s after %v", resp.StatusCode, body, time.Since(start))
		}
	}
	if waited := time.Since(start); waited > time.Second+writeGrace+2*time.Second {
		t.Errorf("the stuck query held the slot for %v", waited)
	}
	if !e.pollActivity(t, "stuck_probe", false, 2*time.Second) {
		t.Error("the stuck statement still runs")
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// pollActivity waits up to within for the role to have (want true) or
// not have (want false) a busy session whose query contains marker, and
// reports whether it happened.
func (e *env) pollActivity(t testing.TB, marker string, want bool, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		var n int
		err := e.admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE usename = $1 AND state = 'active' AND strpos(query, $2) > 0`, e.role, marker).Scan(&n)
		if err != nil {
			t.Error(err)
			return false
		}
		if (n > 0) == want {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClientGoneEndsTheStatement: a client that hangs up mid-result ends
// its statement long before the deadline, and frees its slot.
func TestClientGoneEndsTheStatement(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{timeout: 60 * time.Second, maxConns: 1})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.baseURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	// generate_series in the select list streams; in FROM it would
	// materialize all its rows first.
	sql := `SELECT generate_series(1, 100000000) AS g, repeat('z', 1000) AS gone_probe`
	req := "POST " + Path + " HTTP/1.1\r\nHost: x\r\nX-Svc-Internal: " + testSecret +
		"\r\nContent-Type: text/plain\r\nContent-Length: " + itoa(len(sql)) + "\r\n\r\n" + sql
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	if !e.pollActivity(t, "gone_probe", true, time.Second) {
		t.Fatal("the statement was not seen running")
	}
	conn.Close()
	if !e.pollActivity(t, "gone_probe", false, 3*time.Second) {
		t.Fatal("the statement still runs 3 s after its client hung up")
	}
	if r := e.query(t, "SELECT 1 AS next"); len(r.Rows) != 1 { // the only slot is free
		t.Errorf("next query: %+v", r)
	}
}
