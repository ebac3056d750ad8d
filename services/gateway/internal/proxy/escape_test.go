package proxy

import (
	"bytes"
	"net/url"
	"strings"
	"testing"
)

func TestWriteEscapedPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/api/files/a b", "/api/files/a%20b"},
		{"/a?b#c%d", "/a%3Fb%23c%25d"},
		{"/café", "/caf%C3%A9"},
		{"/keep/-._~!$&'()*+,;=:@", "/keep/-._~!$&'()*+,;=:@"},
		{"/x\r\nHost: y", "/x%0D%0AHost:%20y"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		writeEscapedPath(&b, []byte(tt.in))
		if b.String() != tt.want {
			t.Errorf("escape %q = %q, want %q", tt.in, b.String(), tt.want)
		}
	}
}

// FuzzEscapedPath: whatever the decoded path, the escaped one holds no
// byte that could end a request line or start a query or fragment, and
// decodes back to the same path.
func FuzzEscapedPath(f *testing.F) {
	f.Add("/api/files/ HTTP/1.1\r\nHost: x\r\n\r\nGET /api/files")
	f.Add("/a%2Fb?c#d")
	f.Fuzz(func(t *testing.T, p string) {
		var b bytes.Buffer
		writeEscapedPath(&b, []byte(p))
		out := b.String()
		if strings.ContainsAny(out, " \t\r\n\x00?#\x7f") {
			t.Fatalf("escaped %q to %q", p, out)
		}
		back, err := url.PathUnescape(out)
		if err != nil || back != p {
			t.Fatalf("%q escaped to %q decodes to %q (%v)", p, out, back, err)
		}
	})
}

func TestHasControlByte(t *testing.T) {
	for _, p := range []string{"/a\x00", "/a\r", "/a\n", "/a\t", "/a\x7f", "/a\x1b"} {
		if !HasControlByte([]byte(p)) {
			t.Errorf("%q passed", p)
		}
	}
	for _, p := range []string{"/a b", "/café", "/a?b"} {
		if HasControlByte([]byte(p)) {
			t.Errorf("%q refused", p)
		}
	}
}
