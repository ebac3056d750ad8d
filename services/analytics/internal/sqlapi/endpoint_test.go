package sqlapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/libs/protocol"
)

// canonicalSQL selects one value of each kind the docs promise a form for.
const canonicalSQL = `SELECT
	1::int2 AS i2, -42::int4 AS i4, 9007199254740993::int8 AS i8, 12.50::numeric AS num,
	'NaN'::numeric AS num_nan, 0.1::float8 AS f8, 1e30::float8 AS f8_big, '-Infinity'::float8 AS f8_inf,
	true AS t, false AS f, NULL::text AS null_text, ''::text AS empty_text,
	'2024-05-01 12:00:00.123456+02'::timestamptz AS tstz, '2024-05-01 12:00:00'::timestamp AS ts,
	'infinity'::timestamptz AS tstz_inf, '2024-05-01'::date AS d, '1 day 2 hours'::interval AS iv,
	'{"b": 1, "a": [true, null]}'::jsonb AS jb, '{"x":  1}'::json AS js,
	ARRAY[1, 2, NULL]::int[] AS ints, ARRAY['a b', 'q"uote', 'back\slash', NULL, 'NULL']::text[] AS texts,
	ARRAY[[true, false], [false, true]] AS bools, ARRAY['2024-05-01 00:00:00+00'::timestamptz] AS tstzs,
	ARRAY['{"a":1}'::jsonb, 'null'::jsonb] AS jbs, ARRAY[1.5, 'NaN']::numeric[] AS nums, '{}'::int[] AS empty_arr,
	'[0:1]={7,8}'::int[] AS bounded, '\x00ff41'::bytea AS bytes, 'tab	nl
cr` + "\r" + `bs\' AS text_specials, '11111111-2222-3333-4444-555555555555'::uuid AS u,
	'10.0.0.1/8'::inet AS ip, 'héllo ☃'::text AS unicode`

var canonicalWant = map[string]string{
	"i2": "1", "i4": "-42", "i8": "9007199254740993", "num": "12.50", "num_nan": "NaN",
	"f8": "0.1", "f8_big": "1e+30", "f8_inf": "-Infinity", "t": "true", "f": "false",
	"null_text": "", "empty_text": "",
	"tstz": "2024-05-01T10:00:00.123456Z", "ts": "2024-05-01T12:00:00Z", "tstz_inf": "infinity",
	"d": "2024-05-01", "iv": "P1DT2H", "jb": `{"a": [true, null], "b": 1}`, "js": `{"x":  1}`,
	"ints": "[1,2,null]", "texts": `["a b","q\"uote","back\\slash",null,"NULL"]`,
	"bools": "[[true,false],[false,true]]", "tstzs": `["2024-05-01T00:00:00Z"]`,
	"jbs": `[{"a": 1},null]`, "nums": `[1.5,"NaN"]`, "empty_arr": "[]", "bounded": "[7,8]",
	"bytes": `\x00ff41`, "text_specials": "tab\tnl\ncr\rbs\\", "u": "11111111-2222-3333-4444-555555555555",
	"ip": "10.0.0.1/8", "unicode": "héllo ☃",
}

func TestCanonicalValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	r := e.query(t, canonicalSQL)
	if len(r.Rows) != 1 || r.Count != 1 {
		t.Fatalf("got %d rows, count %d, want 1", len(r.Rows), r.Count)
	}
	got := map[string]string{}
	for i, c := range r.Columns {
		got[c] = r.Rows[0][i]
	}
	if !reflect.DeepEqual(got, canonicalWant) {
		for k, want := range canonicalWant {
			if got[k] != want {
				t.Errorf("%s = %q, want %q", k, got[k], want)
			}
		}
	}

	// The same values through TSV, decoded, are the same strings.
	resp := e.post(t, "text/plain", canonicalSQL, "tsv")
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/tab-separated-values") {
		t.Errorf("Content-Type %q, want text/tab-separated-values", ct)
	}
	header, rows, trailer := decodeTSV(t, resp.Body)
	if trailer != nil {
		t.Fatalf("unexpected trailer %q", trailer)
	}
	if !reflect.DeepEqual(header, r.Columns) || len(rows) != 1 || !reflect.DeepEqual(rows[0], r.Rows[0]) {
		t.Errorf("TSV decodes to %q %q, want %q %q", header, rows, r.Columns, r.Rows)
	}
}

// decodeTSV reads a TSV answer: header, rows (unescaped), and the
// trailer's fields if the result was cut.
func decodeTSV(t testing.TB, r io.Reader) (header []string, rows [][]string, trailer []string) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	first := true
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, TSVTrailer+"\t") {
			trailer = decodeTSVLine(t, strings.TrimPrefix(line, TSVTrailer+"\t"))
			continue
		}
		if trailer != nil {
			t.Fatalf("line after the trailer: %q", line)
		}
		fields := decodeTSVLine(t, line)
		if first {
			header, first = fields, false
			continue
		}
		rows = append(rows, fields)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return header, rows, trailer
}

func decodeTSVLine(t testing.TB, line string) []string {
	t.Helper()
	var fields []string
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case '\t':
			fields = append(fields, b.String())
			b.Reset()
		case '\\':
			i++
			if i == len(line) {
				t.Fatalf("dangling backslash in %q", line)
			}
			switch line[i] {
			case '\\':
				b.WriteByte('\\')
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			default:
				t.Fatalf("unknown escape \\%c in %q", line[i], line)
			}
		default:
			b.WriteByte(c)
		}
	}
	return append(fields, b.String())
}

func TestTSVEscapeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "\t", "\n\r", "\\", `\t`, "a\\tb\tc\nd\\", "\\\\n", "héllo\t☃"} {
		line := string(appendTSV(nil, []byte(s)))
		if strings.ContainsAny(line, "\t\n\r") {
			t.Errorf("appendTSV(%q) = %q keeps a raw tab or line break", s, line)
		}
		if got := decodeTSVLine(t, line); len(got) != 1 || got[0] != s {
			t.Errorf("round trip of %q gives %q", s, got)
		}
	}
}

func TestJSONString(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a\"b\\c", "\x00\x1f\n\t", "héllo ☃", "\u2028\u2029", "<>&"} {
		var got string
		if err := json.Unmarshal(appendJSONString(nil, []byte(s)), &got); err != nil || got != s {
			t.Errorf("appendJSONString(%q) decodes to %q, %v", s, got, err)
		}
	}
	var got string
	if err := json.Unmarshal(appendJSONString(nil, []byte("a\xffb")), &got); err != nil || got != "a\ufffdb" {
		t.Errorf("invalid UTF-8 decodes to %q, %v; want U+FFFD", got, err)
	}
}

func TestBodyForms(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	want := jsonResult{Columns: []string{"n"}, Rows: [][]string{{"2"}}, Count: 1}
	for _, tt := range []struct{ name, contentType, body string }{
		{"text/plain", "text/plain; charset=utf-8", "SELECT count(*) AS n FROM probe_tags WHERE tag = 'red'"},
		{"curl default (form-urlencoded, taken raw)", "application/x-www-form-urlencoded", "SELECT count(*) AS n FROM probe_tags WHERE tag = 'red' AND 1+1 = 2"},
		{"no content type", "", "SELECT count(*) AS n FROM probe_tags WHERE tag = 'red'"},
		{"JSON", "application/json", `{"sql": "SELECT count(*) AS n FROM probe_tags WHERE tag = 'red'"}`},
	} {
		resp := e.post(t, tt.contentType, tt.body, "")
		var got jsonResult
		err := json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d, decode: %v", tt.name, resp.StatusCode, err)
			continue
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q, want application/json", tt.name, ct)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, want)
		}
	}
}

// TestCurl runs the documented command line: curl --data-binary @q.sql
// (which sends Content-Type application/x-www-form-urlencoded).
func TestCurl(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatalf("curl is needed for this test: %v", err)
	}
	e := newEnv(t, envOptions{})
	q := filepath.Join(t.TempDir(), "q.sql")
	sql := "-- tags & counts\nSELECT tag, count(*) AS n\nFROM probe_tags\nGROUP BY tag\nORDER BY tag;\n"
	if err := os.WriteFile(q, []byte(sql), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ format, want string }{
		{"", `{"columns":["tag","n"],"rows":[["blue","1"],["red","2"]],"count":2}` + "\n"},
		{"?format=tsv", "tag\tn\nblue\t1\nred\t2\n"},
	} {
		out, err := exec.CommandContext(context.Background(), curl, "-sS", "--fail-with-body",
			"-H", protocol.HeaderInternal+": "+testSecret,
			"--data-binary", "@"+q, e.baseURL+Path+tt.format).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %s: %v: %s", tt.format, err, out)
		}
		if string(out) != tt.want {
			t.Errorf("curl %s printed %q, want %q", tt.format, out, tt.want)
		}
	}
}

// TestBadInput: each bad request gets its documented error envelope and
// changes nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	before := e.snapshot(t)
	for _, tt := range []struct {
		name, contentType, body, format string
		status                          int
		code, message                   string
	}{
		{"empty body", "text/plain", "", "", 400, "bad_request", "empty query"},
		{"blank body", "text/plain", " \n\t", "", 400, "bad_request", "empty query"},
		{"empty JSON sql", "application/json", `{"sql": "  "}`, "", 400, "bad_request", "empty query"},
		{"invalid JSON", "application/json", `{"sql": `, "", 400, "bad_request", "malformed JSON body"},
		{"JSON not an object", "application/json", `"SELECT 1"`, "", 400, "bad_request", "malformed JSON body"},
		{"JSON unknown field", "application/json", `{"sql": "SELECT 1", "limit": 5}`, "", 400, "bad_request", "unknown field"},
		{"JSON missing sql", "application/json", `{}`, "", 400, "bad_request", `missing "sql"`},
		{"JSON trailing data", "application/json", `{"sql": "SELECT 1"} {}`, "", 400, "bad_request", "trailing data"},
		{"invalid UTF-8", "text/plain", "SELECT '\xff'", "", 400, "bad_request", "not valid UTF-8"},
		{"unsupported content type", "image/png", "SELECT 1", "", 415, "unsupported_media_type", "unsupported Content-Type"},
		{"unknown format", "text/plain", "SELECT 1", "csv", 400, "bad_request", `unknown format "csv"`},
		{"syntax error", "text/plain", "SELEC 1", "", 400, "forbidden", "only read statements"},
		{"syntax error in a read", "text/plain", "SELECT FROM WHERE", "", 400, "sql_error", `syntax error at or near "WHERE"`},
		{"unknown column", "text/plain", "SELECT nope FROM probe_turns", "", 400, "sql_error", `column "nope" does not exist`},
		{"division by zero", "text/plain", "SELECT 1/0", "", 400, "sql_error", "division by zero"},
		{"table not granted", "text/plain", "SELECT * FROM probe_secret", "", 400, "sql_error", "permission denied for table probe_secret"},
		{"forbidden statement", "text/plain", "DELETE FROM probe_turns", "", 400, "forbidden", "only read statements"},
		{"forbidden CTE", "text/plain", "WITH d AS (DELETE FROM probe_turns RETURNING *) SELECT * FROM d", "", 400, "forbidden", "DELETE"},
		{"two statements", "text/plain", "SELECT 1; DROP TABLE probe_turns", "", 400, "forbidden", "only one statement"},
		{"parameter without value", "text/plain", "SELECT $1::int", "", 400, "sql_error", "bind message supplies 0 parameters"},
	} {
		status, body := e.postError(t, tt.contentType, tt.body, tt.format)
		if status != tt.status || body.Error != tt.code || !strings.Contains(body.Message, tt.message) {
			t.Errorf("%s: got %d %+v, want %d %s containing %q", tt.name, status, body, tt.status, tt.code, tt.message)
		}
	}
	e.assertUnchanged(t, before)
}

func TestFormatParameter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	for _, format := range []string{"json", "JSON", ""} {
		r := e.post(t, "text/plain", "SELECT 1 AS one", format)
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if want := `{"columns":["one"],"rows":[["1"]],"count":1}` + "\n"; string(body) != want {
			t.Errorf("format %q: %q, want %q", format, body, want)
		}
	}
	r := e.post(t, "text/plain", "SELECT 1 AS one, 'x' AS \"two\tcols\" WHERE false", "tsv")
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if want := "one\ttwo\\tcols\n"; string(body) != want {
		t.Errorf("empty TSV result %q, want only the header %q", body, want)
	}
}

// TestZeroRowsAndExplain covers results without rows and EXPLAIN.
func TestZeroRowsAndExplain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	if r := e.query(t, "SELECT id FROM probe_turns WHERE false"); r.Count != 0 || len(r.Rows) != 0 || len(r.Columns) != 1 {
		t.Errorf("zero rows: %+v", r)
	}
	r := e.query(t, "EXPLAIN (COSTS OFF) SELECT * FROM probe_turns")
	if len(r.Columns) != 1 || r.Columns[0] != "QUERY PLAN" || r.Count == 0 {
		t.Errorf("EXPLAIN: %+v", r)
	}
	if r := e.query(t, "SHOW TimeZone"); len(r.Rows) != 1 || r.Rows[0][0] != "UTC" {
		t.Errorf("SHOW TimeZone inside the query's transaction: %+v, want UTC", r)
	}
}

var errNotJSON = errors.New("not JSON")

// decodeJSONResult decodes a (possibly cut) JSON answer strictly.
func decodeJSONResult(body []byte) (jsonResult, error) {
	var r jsonResult
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, errors.Join(errNotJSON, err)
	}
	return r, nil
}

// TestDeadPooledConnection: a pooled connection that died (here ended by
// the superuser) is replaced, not reported as an error.
func TestDeadPooledConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{maxConns: 1})
	e.query(t, "SELECT 1 AS warm")
	mustExec(t, e.admin, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, e.role)
	if r := e.query(t, "SELECT 2 AS after_kill"); len(r.Rows) != 1 || r.Rows[0][0] != "2" {
		t.Errorf("after the kill: %+v", r)
	}
}
