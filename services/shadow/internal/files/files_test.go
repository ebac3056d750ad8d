package files_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/shadow/internal/files"
)

type entry struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Target string `json:"target"`
	Size   int64  `json:"size"`
	Mtime  string `json:"mtime"`
}

type listing struct {
	Path      string  `json:"path"`
	Entries   []entry `json:"entries"`
	Truncated bool    `json:"truncated"`
}

type fileAnswer struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Size    int64  `json:"size"`
	Mtime   string `json:"mtime"`
	Version string `json:"version"`
}

func q(p string) string { return url.QueryEscape(p) }

func TestListDir(t *testing.T) {
	e := mustEnv(t, nil)
	l := decode[listing](t, e.get(t, "/api/files?path="+q(e.home)))
	var names []string
	for _, en := range l.Entries {
		names = append(names, en.Name+":"+en.Type+":"+en.Target)
	}
	want := []string{
		"%2e%2e:dir:", "dir:dir:", "link_in:symlink:dir", "link_out:symlink:dir",
		".hidden:file:", "a.txt:file:", "broken:symlink:broken", "dangling_out:symlink:broken",
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("entries\n got %q\nwant %q", names, want)
	}
	if l.Path != e.home || l.Truncated {
		t.Errorf("path %q truncated %v", l.Path, l.Truncated)
	}
	for _, en := range l.Entries {
		if en.Name == "a.txt" && (en.Size != 12 || en.Mtime == "") {
			t.Errorf("a.txt: size %d mtime %q, want 12 and a time", en.Size, en.Mtime)
		}
	}
	l = decode[listing](t, e.get(t, "/api/files?hidden=false&path="+q(e.home)))
	for _, en := range l.Entries {
		if strings.HasPrefix(en.Name, ".") {
			t.Errorf("hidden=false listed %s", en.Name)
		}
	}
	// Through a link inside the root: listed under the name asked.
	l = decode[listing](t, e.get(t, "/api/files?path="+q(e.home+"/link_in")))
	if l.Path != e.home+"/link_in" || len(l.Entries) != 2 {
		t.Errorf("link_in: %+v", l)
	}

	wantError(t, e.get(t, "/api/files?path="+q(e.home+"/a.txt")), 400, protocol.CodeBadRequest)
	wantError(t, e.get(t, "/api/files?path="+q(e.home+"/nope")), 404, protocol.CodeNotFound)
	wantError(t, e.get(t, "/api/files?path="+q(e.outside)), 403, protocol.CodeForbidden)
	wantError(t, e.get(t, "/api/files?path="+q(e.home+"/link_out")), 403, protocol.CodeForbidden)
	wantError(t, e.get(t, "/api/files"), 400, protocol.CodeBadRequest)
	wantError(t, e.get(t, "/api/files?hidden=maybe&path="+q(e.home)), 400, protocol.CodeBadRequest)

	roots := decode[struct {
		Roots []string `json:"roots"`
	}](t, e.get(t, "/api/files/roots"))
	if len(roots.Roots) != 1 || roots.Roots[0] != e.home {
		t.Errorf("roots %q, want [%s]", roots.Roots, e.home)
	}
}

func TestReadFile(t *testing.T) {
	e := mustEnv(t, nil)
	f := decode[fileAnswer](t, e.get(t, "/api/file?path="+q(e.home+"/a.txt")))
	sum := sha256.Sum256([]byte("hello\nworld\n"))
	if f.Content != "hello\nworld\n" || f.Size != 12 || f.Version != "sha256:"+hex.EncodeToString(sum[:]) || f.Path != e.home+"/a.txt" || f.Mtime == "" {
		t.Errorf("got %+v", f)
	}
	writeFiles(t, map[string]string{
		e.home + "/nul.bin":  "text\x00more",
		e.home + "/latin1":   "caf\xe9\n",
		e.home + "/utf8.txt": "café ✓\n",
		e.home + "/empty":    "",
	})
	if got := decode[fileAnswer](t, e.get(t, "/api/file?path="+q(e.home+"/utf8.txt"))); got.Content != "café ✓\n" {
		t.Errorf("utf8: %q", got.Content)
	}
	if got := decode[fileAnswer](t, e.get(t, "/api/file?path="+q(e.home+"/empty"))); got.Content != "" || got.Size != 0 {
		t.Errorf("empty: %+v", got)
	}
	big := e.home + "/big.txt"
	if err := os.WriteFile(big, bytes.Repeat([]byte("a"), files.MaxTextBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(e.home+"/fifo", 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		status     int
		code       string
	}{
		{"NUL bytes", e.home + "/nul.bin", 415, protocol.CodeUnsupportedMedia},
		{"invalid UTF-8", e.home + "/latin1", 415, protocol.CodeUnsupportedMedia},
		{"over-size", big, 413, protocol.CodePayloadTooLarge},
		{"directory", e.home + "/dir", 400, protocol.CodeBadRequest},
		{"FIFO (must not block)", e.home + "/fifo", 400, protocol.CodeBadRequest},
		{"missing", e.home + "/missing.txt", 404, protocol.CodeNotFound},
		{"broken link", e.home + "/broken", 404, protocol.CodeNotFound},
		{"outside", e.outside + "/secret.txt", 403, protocol.CodeForbidden},
		{"relative", "a.txt", 400, protocol.CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, e.get(t, "/api/file?path="+q(tt.path)), tt.status, tt.code)
		})
	}
}

// TestEncodedTraversal sends traversal attempts through the HTTP layer,
// percent-encoded as a client would, to every route that takes a path:
// none may answer with what lies outside the root.
func TestEncodedTraversal(t *testing.T) {
	e := mustEnv(t, nil)
	h := e.home
	hEnc := strings.ReplaceAll(q(h), "%2F", "/")
	targets := []struct {
		name, rawPath string // rawPath goes in the query as written
		status        int
	}{
		{"encoded dotdot", hEnc + "/%2e%2e/outside/secret.txt", 403},
		{"encoded dotdot upper", hEnc + "/%2E%2E/outside/secret.txt", 403},
		{"encoded slashes", hEnc + "%2f..%2foutside%2fsecret.txt", 403},
		{"all encoded", q(h + "/../outside/secret.txt"), 403},
		{"relative encoded", "%2e%2e%2f%2e%2e%2fetc%2fpasswd", 400},
		{"double encoded dotdot", hEnc + "/%252e%252e/outside/secret.txt", 404},
		{"double encoded slash", hEnc + "/..%252f..%252foutside%252fsecret.txt", 404},
		{"NUL", hEnc + "/a.txt%00.png", 400},
		{"NUL before dotdot", hEnc + "/%00/../../outside/secret.txt", 400},
		{"many dotdots", hEnc + "/..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd", 403},
		{"backslashes are names", hEnc + "/..%5c..%5coutside%5csecret.txt", 404},
		{"overlong UTF-8 dot", hEnc + "/%c0%ae%c0%ae/outside/secret.txt", 404},
		{"proc", "/proc/self/environ", 403},
		{"link out", hEnc + "/link_out/secret.txt", 403},
		{"sibling prefix", hEnc + "-sibling/secret.txt", 403},
		{"absolute outside", q(e.outside + "/secret.txt"), 403},
		{"plus is a space, not a slash", hEnc + "/..+/outside", 404},
	}
	routes := []string{"/api/files?path=", "/api/file?path=", "/api/file-raw?path=", "/view?path=", "/api/browser/render?path=", "/api/search?q=SECRET&path="}
	for _, tt := range targets {
		for _, route := range routes {
			t.Run(tt.name+" "+route, func(t *testing.T) {
				a := e.get(t, route+tt.rawPath)
				if bytes.Contains(a.body, []byte(secretText)) {
					t.Fatalf("ESCAPE: %s%s answered the secret: %s", route, tt.rawPath, a.body)
				}
				if a.status == http.StatusOK {
					t.Fatalf("%s%s: 200, want a refusal: %s", route, tt.rawPath, a.body)
				}
				want := tt.status
				if a.status != want {
					// A path that exists as a directory is refused by the
					// routes that want a file (400) or by search (400 for
					// a file); both are refusals, checked above.
					if a.status != 400 || want != 404 {
						t.Errorf("%s%s: status %d, want %d: %s", route, tt.rawPath, a.status, want, a.body)
					}
				}
			})
		}
		t.Run(tt.name+" write", func(t *testing.T) {
			p, err := url.QueryUnescape(tt.rawPath)
			if err != nil {
				t.Fatal(err)
			}
			a := e.write(t, map[string]any{"path": p, "content": "pwned"})
			if a.status == http.StatusOK && !strings.HasPrefix(filepath.Clean(p), h+"/") {
				t.Fatalf("ESCAPE: wrote %q", p)
			}
			if data, _ := os.ReadFile(e.outside + "/secret.txt"); string(data) != secretText {
				t.Fatal("ESCAPE: the file outside changed")
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	e := mustEnv(t, nil)
	p := e.home + "/new.txt"
	w := decode[fileAnswer](t, e.write(t, map[string]any{"path": p, "content": "one\n"}))
	if w.Path != p || w.Size != 4 || w.Version == "" || w.Mtime == "" {
		t.Fatalf("write answer %+v", w)
	}
	r := decode[fileAnswer](t, e.get(t, "/api/file?path="+q(p)))
	if r.Content != "one\n" || r.Version != w.Version {
		t.Fatalf("read back %+v, want the content and the write's version", r)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v, %v; want 0644", fi.Mode(), err)
	}

	// Update with the version read.
	w2 := decode[fileAnswer](t, e.write(t, map[string]any{"path": p, "content": "two\n", "expected_version": r.Version}))
	// A stale version: 409, nothing changed.
	wantError(t, e.write(t, map[string]any{"path": p, "content": "three\n", "expected_version": r.Version}), 409, protocol.CodeConflict)
	wantContent(t, p, "two\n")
	// "" means create only.
	wantError(t, e.write(t, map[string]any{"path": p, "content": "x", "expected_version": ""}), 409, protocol.CodeConflict)
	decode[fileAnswer](t, e.write(t, map[string]any{"path": e.home + "/fresh.txt", "content": "x", "expected_version": ""}))
	// A version for a file that is gone.
	wantError(t, e.write(t, map[string]any{"path": e.home + "/gone.txt", "content": "x", "expected_version": w2.Version}), 409, protocol.CodeConflict)
	if _, err := os.Stat(e.home + "/gone.txt"); err == nil {
		t.Error("a conflicting write created the file")
	}

	// The mode is kept.
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	decode[fileAnswer](t, e.write(t, map[string]any{"path": p, "content": "four\n"}))
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v after write, want 0600 kept", fi.Mode().Perm())
	}

	// Parent directories.
	deep := e.home + "/x/y/z.txt"
	wantError(t, e.write(t, map[string]any{"path": deep, "content": "z"}), 404, protocol.CodeNotFound)
	if _, err := os.Stat(e.home + "/x"); err == nil {
		t.Error("a refused write created directories")
	}
	decode[fileAnswer](t, e.write(t, map[string]any{"path": deep, "content": "z", "create_dirs": true}))
	wantContent(t, deep, "z")

	// Through a link inside the root: the target changes, the link stays.
	decode[fileAnswer](t, e.write(t, map[string]any{"path": e.home + "/link_in/b.go", "content": "package c\n"}))
	wantContent(t, e.home+"/dir/b.go", "package c\n")

	// Bad input: a clear error, nothing changed.
	bad := []struct {
		name   string
		body   map[string]any
		status int
		code   string
	}{
		{"NUL content", map[string]any{"path": p, "content": "bin\x00ary"}, 415, protocol.CodeUnsupportedMedia},
		{"over-size", map[string]any{"path": p, "content": strings.Repeat("a", files.MaxTextBytes+1)}, 413, protocol.CodePayloadTooLarge},
		{"outside", map[string]any{"path": e.outside + "/secret.txt", "content": "x"}, 403, protocol.CodeForbidden},
		{"new file outside", map[string]any{"path": e.outside + "/new.txt", "content": "x"}, 403, protocol.CodeForbidden},
		{"dangling link out", map[string]any{"path": e.home + "/dangling_out", "content": "x"}, 403, protocol.CodeForbidden},
		{"create dirs outside", map[string]any{"path": e.home + "/link_out/d/new.txt", "content": "x", "create_dirs": true}, 403, protocol.CodeForbidden},
		{"directory", map[string]any{"path": e.home + "/dir", "content": "x"}, 400, protocol.CodeBadRequest},
		{"parent is a file", map[string]any{"path": p + "/child", "content": "x", "create_dirs": true}, 400, protocol.CodeBadRequest},
		{"no path", map[string]any{"content": "x"}, 400, protocol.CodeBadRequest},
		{"no content", map[string]any{"path": p}, 400, protocol.CodeBadRequest},
		{"unknown field", map[string]any{"path": p, "content": "x", "mode": 777}, 400, protocol.CodeBadRequest},
		{"relative", map[string]any{"path": "new.txt", "content": "x"}, 400, protocol.CodeBadRequest},
		{"NUL in path", map[string]any{"path": p + "\x00", "content": "x"}, 400, protocol.CodeBadRequest},
		{"proc", map[string]any{"path": "/proc/self/comm", "content": "x"}, 403, protocol.CodeForbidden},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, e.write(t, tt.body), tt.status, tt.code)
			wantContent(t, p, "four\n")
			wantContent(t, e.outside+"/secret.txt", secretText)
			if _, err := os.Stat(e.outside + "/new.txt"); err == nil {
				t.Fatal("ESCAPE: created a file outside")
			}
		})
	}
	a := e.do(t, http.MethodPost, "/api/file/write", []byte(`{"path":"`+p+`","content":"x"}`), map[string]string{"Content-Type": "text/plain"})
	wantError(t, a, 415, protocol.CodeUnsupportedMedia)
	a = e.do(t, http.MethodPost, "/api/file/write", []byte(`{"path":"`+p+`","content":"x"} {}`), nil)
	wantError(t, a, 400, protocol.CodeBadRequest)
	wantContent(t, p, "four\n")

	// No temporary file is left behind.
	matches, _ := filepath.Glob(e.home + "/.*.tmp")
	if len(matches) != 0 {
		t.Errorf("temporary files left: %q", matches)
	}
}

// TestConcurrentWritesOneWins: writers that all read the same version race;
// exactly one succeeds, the others get 409.
func TestConcurrentWritesOneWins(t *testing.T) {
	e := mustEnv(t, nil)
	p := e.home + "/a.txt"
	v := decode[fileAnswer](t, e.get(t, "/api/file?path="+q(p))).Version
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			statuses[i] = e.write(t, map[string]any{"path": p, "content": fmt.Sprintf("writer %d\n", i), "expected_version": v}).status
		})
	}
	wg.Wait()
	ok, conflicts := 0, 0
	for _, s := range statuses {
		switch s {
		case 200:
			ok++
		case 409:
			conflicts++
		}
	}
	if ok != 1 || conflicts != n-1 {
		t.Errorf("statuses %v: want one 200 and %d 409", statuses, n-1)
	}
}

func wantContent(t *testing.T, p, want string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil || string(data) != want {
		t.Fatalf("%s holds %q (%v), want %q", p, data, err, want)
	}
}

func TestRawFile(t *testing.T) {
	e := mustEnv(t, nil)
	png := []byte("\x89PNG\r\n\x1a\n0123456789")
	writeFiles(t, map[string]string{
		e.home + "/img.png":    string(png),
		e.home + "/page.html":  "<script>alert(1)</script>",
		e.home + "/pic.svg":    "<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>",
		e.home + "/data.xml":   "<?xml version='1.0'?><x/>",
		e.home + "/noext":      "%PDF-1.4 sniffed",
		e.home + "/digits.txt": "0123456789",
		e.home + "/é space.md": "# title",
	})
	a := e.get(t, "/api/file-raw?path="+q(e.home+"/img.png"))
	if a.status != 200 || a.header.Get("Content-Type") != "image/png" || !bytes.Equal(a.body, png) {
		t.Errorf("png: %d %q %q", a.status, a.header.Get("Content-Type"), a.body)
	}
	if got := a.header.Get("Content-Security-Policy"); got != files.SandboxCSP {
		t.Errorf("CSP %q, want the sandbox policy", got)
	}
	if a.header.Get("X-Content-Type-Options") != "nosniff" || a.header.Get("Accept-Ranges") != "bytes" {
		t.Errorf("headers %v", a.header)
	}
	// Active content keeps its type but is only ever downloaded.
	for _, name := range []string{"page.html", "pic.svg", "data.xml"} {
		a = e.get(t, "/api/file-raw?path="+q(e.home+"/"+name))
		if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Security-Policy"), "sandbox;") ||
			!strings.HasPrefix(a.header.Get("Content-Disposition"), "attachment;") {
			t.Errorf("%s served as %q with CSP %q, disposition %q", name, a.header.Get("Content-Type"),
				a.header.Get("Content-Security-Policy"), a.header.Get("Content-Disposition"))
		}
	}
	if a = e.get(t, "/api/file-raw?path="+q(e.home+"/page.html")); !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
		t.Errorf("html type %q", a.header.Get("Content-Type"))
	}
	if a = e.get(t, "/api/file-raw?path="+q(e.home+"/digits.txt")); !strings.HasPrefix(a.header.Get("Content-Disposition"), "inline;") {
		t.Errorf("text disposition %q, want inline", a.header.Get("Content-Disposition"))
	}
	if a = e.get(t, "/api/file-raw?path="+q(e.home+"/noext")); a.header.Get("Content-Type") != "application/pdf" {
		t.Errorf("sniffed type %q, want application/pdf", a.header.Get("Content-Type"))
	}
	a = e.get(t, "/api/file-raw?download=1&path="+q(e.home+"/é space.md"))
	if cd := a.header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") || !strings.Contains(cd, "filename*=utf-8''%C3%A9%20space.md") {
		t.Errorf("Content-Disposition %q", cd)
	}

	digits := "/api/file-raw?path=" + q(e.home+"/digits.txt")
	ranges := []struct {
		rng, body, contentRange string
		status                  int
	}{
		{"bytes=2-5", "2345", "bytes 2-5/10", 206},
		{"bytes=7-", "789", "bytes 7-9/10", 206},
		{"bytes=-3", "789", "bytes 7-9/10", 206},
		{"bytes=8-100", "89", "bytes 8-9/10", 206},
		{"bytes=-100", "0123456789", "bytes 0-9/10", 206},
		{"bytes=0-0", "0", "bytes 0-0/10", 206},
		{"bytes=1-2,4-5", "0123456789", "", 200}, // several ranges: the whole file
		{"items=1-2", "0123456789", "", 200},
		{"bytes=5-2", "0123456789", "", 200},
	}
	for _, tt := range ranges {
		a := e.do(t, http.MethodGet, digits, nil, map[string]string{"Range": tt.rng})
		if a.status != tt.status || string(a.body) != tt.body || a.header.Get("Content-Range") != tt.contentRange {
			t.Errorf("Range %s: %d %q %q, want %d %q %q", tt.rng, a.status, a.body, a.header.Get("Content-Range"), tt.status, tt.body, tt.contentRange)
		}
	}
	a = e.do(t, http.MethodGet, digits, nil, map[string]string{"Range": "bytes=10-"})
	if a.status != 416 || a.header.Get("Content-Range") != "bytes */10" {
		t.Errorf("unsatisfiable: %d %q", a.status, a.header.Get("Content-Range"))
	}
	writeFiles(t, map[string]string{e.home + "/zero": ""})
	for _, rng := range []string{"bytes=-1", "bytes=0-"} {
		a = e.do(t, http.MethodGet, "/api/file-raw?path="+q(e.home+"/zero"), nil, map[string]string{"Range": rng})
		if a.status != 416 || a.header.Get("Content-Range") != "bytes */0" {
			t.Errorf("empty file, Range %s: %d %q, want 416", rng, a.status, a.header.Get("Content-Range"))
		}
	}
	if a = e.get(t, "/api/file-raw?path="+q(e.home+"/zero")); a.status != 200 || len(a.body) != 0 {
		t.Errorf("empty file: %d %q", a.status, a.body)
	}
	etag := e.get(t, digits).header.Get("ETag")
	if a = e.do(t, http.MethodGet, digits, nil, map[string]string{"If-None-Match": etag}); a.status != 304 {
		t.Errorf("If-None-Match: %d, want 304", a.status)
	}
	a = e.do(t, http.MethodGet, digits, nil, map[string]string{"Range": "bytes=0-1", "If-Range": `"stale"`})
	if a.status != 200 || string(a.body) != "0123456789" {
		t.Errorf("stale If-Range: %d %q, want the whole file", a.status, a.body)
	}
	wantError(t, e.get(t, "/api/file-raw?path="+q(e.home+"/dir")), 400, protocol.CodeBadRequest)
	wantError(t, e.get(t, "/api/file-raw?path="+q(e.outside+"/secret.txt")), 403, protocol.CodeForbidden)
	wantError(t, e.get(t, "/api/file-raw?path="+q(e.home+"/none")), 404, protocol.CodeNotFound)
}

type searchAnswer struct {
	Path    string `json:"path"`
	Matches []struct {
		Path   string `json:"path"`
		Line   int    `json:"line"`
		Column int    `json:"column"`
		Text   string `json:"text"`
	} `json:"matches"`
	Truncated bool   `json:"truncated"`
	Engine    string `json:"engine"`
}

func TestSearchRoute(t *testing.T) {
	e := mustEnv(t, nil)
	engines := []string{"go"}
	if e.searcher.Rg != "" {
		engines = append(engines, "rg")
	}
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			base := "/api/search?engine=" + engine + "&path=" + q(e.home)
			s := decode[searchAnswer](t, e.get(t, base+"&q=world"))
			if s.Engine != engine || len(s.Matches) != 1 || s.Matches[0].Path != e.home+"/a.txt" || s.Matches[0].Line != 2 || s.Matches[0].Text != "world" {
				t.Errorf("search: %+v", s)
			}
			s = decode[searchAnswer](t, e.get(t, base+"&regex=true&q="+q(`^(hello|package)\b`)+"&include=*.txt,*.go"))
			if len(s.Matches) != 2 {
				t.Errorf("regex with includes: %+v", s)
			}
			s = decode[searchAnswer](t, e.get(t, base+"&q=o&max_results=1"))
			if len(s.Matches) != 1 || !s.Truncated {
				t.Errorf("cap: %+v", s)
			}
			s = decode[searchAnswer](t, e.get(t, "/api/search?engine="+engine+"&q=package&path="+q(e.home+"/link_in")))
			if len(s.Matches) != 1 || s.Matches[0].Path != e.home+"/link_in/b.go" {
				t.Errorf("through a link: %+v", s)
			}
			wantError(t, e.get(t, base+"&regex=true&q="+q("(unclosed")), 400, protocol.CodeBadRequest)
			wantError(t, e.get(t, base+"&q=a&case=loud"), 400, protocol.CodeBadRequest)
			wantError(t, e.get(t, base+"&q=a&max_results=0"), 400, protocol.CodeBadRequest)
			wantError(t, e.get(t, base), 400, protocol.CodeBadRequest)
		})
	}
	// cwd names the project as on every project-scoped route; path, when
	// also given, narrows the search.
	s := decode[searchAnswer](t, e.get(t, "/api/search?q=world&cwd="+q(e.home)))
	if len(s.Matches) != 1 || s.Matches[0].Path != e.home+"/a.txt" {
		t.Errorf("search by cwd: %+v", s)
	}
	s = decode[searchAnswer](t, e.get(t, "/api/search?q=package&cwd="+q(e.home)+"&path="+q(e.home+"/link_in")))
	if len(s.Matches) != 1 || s.Matches[0].Path != e.home+"/link_in/b.go" {
		t.Errorf("search by cwd and path: %+v", s)
	}
	wantError(t, e.get(t, "/api/search?q=a"), 400, protocol.CodeBadRequest)
	wantError(t, e.get(t, "/api/search?q=a&cwd="+q(e.outside)), 403, protocol.CodeForbidden)
	wantError(t, e.get(t, "/api/search?q=a&engine=grep&path="+q(e.home)), 400, protocol.CodeBadRequest)
	wantError(t, e.get(t, "/api/search?q=a&path="+q(e.home+"/a.txt")), 400, protocol.CodeBadRequest)
	wantError(t, e.get(t, "/api/search?q=a&path="+q(e.home+"/none")), 404, protocol.CodeNotFound)
	wantError(t, e.get(t, "/api/search?q=a&path="+q(e.outside)), 403, protocol.CodeForbidden)
}

func TestView(t *testing.T) {
	e := mustEnv(t, nil)
	writeFiles(t, map[string]string{
		e.home + "/x.txt":    "<script>alert('x')</script> & more",
		e.home + "/pic.gif":  "GIF89a\x01\x00\x01\x00",
		e.home + "/doc.html": "<h1>hi</h1><script>steal()</script>",
		e.home + "/blob":     "\x00\x01\x02",
	})
	view := func(p string) answer { return e.get(t, "/view?path="+q(p)) }
	a := view(e.home + "/x.txt")
	if a.status != 200 || !strings.Contains(string(a.body), "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; more") || strings.Contains(string(a.body), "<script>") {
		t.Errorf("text view not escaped: %d %s", a.status, a.body)
	}
	if a.header.Get("Content-Security-Policy") != files.SandboxCSP || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
		t.Errorf("view headers: %v", a.header)
	}
	if a = view(e.home + "/pic.gif"); !strings.Contains(string(a.body), `<img src="data:image/gif;base64,R0lGODlh`) {
		t.Errorf("image view: %s", a.body)
	}
	a = view(e.home + "/doc.html")
	if !strings.HasPrefix(string(a.body), `<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;;`) ||
		!strings.HasSuffix(string(a.body), "<h1>hi</h1><script>steal()</script>") || a.header.Get("Content-Security-Policy") != files.SandboxCSP {
		t.Errorf("html view: %q with CSP %q", a.body, a.header.Get("Content-Security-Policy"))
	}
	if a = view(e.home + "/blob"); !strings.Contains(string(a.body), "binary file, 3 bytes") {
		t.Errorf("binary view: %s", a.body)
	}
	a = view(e.home)
	if !strings.Contains(string(a.body), `href="/view?path=`+q(e.home+"/a.txt")+`"`) || !strings.Contains(string(a.body), ">dir/<") {
		t.Errorf("directory view: %s", a.body)
	}
	if strings.Contains(string(a.body), ">up<") {
		t.Error("the root's view links to its parent, which is outside")
	}
	wantError(t, view(e.outside+"/page.html"), 403, protocol.CodeForbidden)
	wantError(t, view(e.home+"/none"), 404, protocol.CodeNotFound)
}

func TestRender(t *testing.T) {
	e := mustEnv(t, nil)
	writeFiles(t, map[string]string{e.home + "/p.HTM": "<b>bold</b>"})
	a := e.get(t, "/api/browser/render?path="+q(e.home+"/p.HTM"))
	if a.status != 200 || !strings.HasPrefix(string(a.body), `<meta http-equiv="Content-Security-Policy"`) ||
		!strings.HasSuffix(string(a.body), "<b>bold</b>") || a.header.Get("Content-Security-Policy") != files.SandboxCSP {
		t.Errorf("render: %d %q %v", a.status, a.body, a.header)
	}
	wantError(t, e.get(t, "/api/browser/render?path="+q(e.home+"/a.txt")), 415, protocol.CodeUnsupportedMedia)
	wantError(t, e.get(t, "/api/browser/render?path="+q(e.home+"/none.txt")), 404, protocol.CodeNotFound)
	wantError(t, e.get(t, "/api/browser/render?path="+q(e.outside+"/page.html")), 403, protocol.CodeForbidden)
	wantError(t, e.get(t, "/api/browser/render?path="+q(e.home+"/none.html")), 404, protocol.CodeNotFound)
}

func TestJSONAnswersAreEnvelopes(t *testing.T) {
	e := mustEnv(t, nil)
	a := e.get(t, "/api/file?path="+q(e.outside+"/secret.txt"))
	var body map[string]any
	if err := json.Unmarshal(a.body, &body); err != nil || body["error"] != "forbidden" {
		t.Errorf("outside: %s", a.body)
	}
}
