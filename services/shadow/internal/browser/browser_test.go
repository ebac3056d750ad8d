package browser_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/shadow/internal/browser"
)

func TestPublicOnly(t *testing.T) {
	blocked := []string{
		"127.0.0.1", "127.1.2.3", "::1", "0.0.0.0", "::", "0.1.2.3",
		"10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "fc00::1", "fd12:3456::1",
		"169.254.169.254", "169.254.0.1", "fe80::1", "fd00:ec2::254",
		"224.0.0.1", "239.255.255.250", "ff02::1", "ff05::2",
		"100.64.0.1", "100.100.100.200", "100.127.255.255",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:0.0.0.0",
		"::127.0.0.1", "64:ff9b::a00:1", "2002:a00:1::1", "2001:0:a00:1::1",
		"192.0.2.1", "198.51.100.7", "203.0.113.9", "198.18.0.1", "240.0.0.1", "255.255.255.255",
		"2001:db8::1", "fec0::1", "100::1",
	}
	for _, s := range blocked {
		if err := browser.PublicOnly(netip.MustParseAddr(s)); err == nil {
			t.Errorf("%s allowed, want refused", s)
		}
	}
	allowed := []string{"1.1.1.1", "8.8.8.8", "93.184.216.34", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "::ffff:1.1.1.1"}
	for _, s := range allowed {
		if err := browser.PublicOnly(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s refused (%v), want allowed", s, err)
		}
	}
	if err := browser.PublicOnly(netip.Addr{}); err == nil {
		t.Error("the zero address is allowed")
	}
}

// fakeResolver answers from a table; a name with several answers gives
// them in turn (the DNS rebinding trick: public first, private next).
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]string
	calls   map[string]int
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	i := min(r.calls[host], len(list)-1)
	r.calls[host]++
	return []netip.Addr{netip.MustParseAddr(list[i])}, nil
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

// testPolicy lets the test server on 127.0.0.1 through and judges every
// other address as production does.
func testPolicy(ip netip.Addr) error {
	if ip == netip.MustParseAddr("127.0.0.1") {
		return nil
	}
	return browser.PublicOnly(ip)
}

type site struct {
	*httptest.Server
	port string
	hits atomic.Int64
	// seen holds the headers of the last request.
	mu   sync.Mutex
	seen http.Header
}

func newSite(t *testing.T, h http.HandlerFunc) *site {
	t.Helper()
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		s.seen = r.Header.Clone()
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	_, s.port, _ = net.SplitHostPort(s.Listener.Addr().String())
	return s
}

func wantBlocked(t *testing.T, err error) {
	t.Helper()
	var be *browser.BlockedError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a BlockedError", err)
	}
}

func TestFetchHappyPath(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/start" {
			http.Redirect(w, r, "/page", http.StatusFound)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "tracker", Value: "1"})
		w.Header().Set("Content-Type", "text/html; charset=utf-8; evil=1")
		fmt.Fprint(w, "<html><head><title>t</title></head><body>hello</body></html>")
	})
	res := &fakeResolver{answers: map[string][]string{"site.test": {"127.0.0.1"}}}
	f := browser.NewFetcher(browser.Options{Policy: testPolicy, Resolver: res})
	page, err := f.Fetch(context.Background(), "http://site.test:"+s.port+"/start")
	if err != nil {
		t.Fatal(err)
	}
	if page.Status != 200 || !strings.Contains(string(page.Body), "hello") {
		t.Errorf("got %d %q, want 200 with the page", page.Status, page.Body)
	}
	if page.URL.Path != "/page" {
		t.Errorf("final URL %s, want the redirect's target", page.URL)
	}
	if page.ContentType != "text/html; charset=utf-8" {
		t.Errorf("content type %q, want it cleaned to text/html; charset=utf-8", page.ContentType)
	}
	s.mu.Lock()
	seen := s.seen
	s.mu.Unlock()
	for _, h := range []string{"Cookie", "Authorization"} {
		if v := seen.Get(h); v != "" {
			t.Errorf("the fetch sent %s: %q", h, v)
		}
	}
	if got := string(browser.WithBase(page.Body, page.URL)); !strings.Contains(got, `<head><base href="http://site.test:`+s.port+`/page">`) {
		t.Errorf("WithBase: %q", got)
	}
}

func TestFetchBlockedLiterals(t *testing.T) {
	f := browser.NewFetcher(browser.Options{Resolver: &fakeResolver{}})
	for _, u := range []string{
		"http://127.0.0.1/", "http://127.0.0.1:8773/api/health/shadow", "http://[::1]/", "http://0.0.0.0/",
		"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://10.1.2.3/",
		"http://192.168.0.1/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://100.64.1.1/",
		"https://224.0.0.1/", "http://[fe80::1%25eth0]/",
	} {
		_, err := f.Fetch(context.Background(), u)
		wantBlocked(t, err)
	}
}

func TestFetchBlockedNames(t *testing.T) {
	res := &fakeResolver{answers: map[string][]string{
		"localhost":      {"127.0.0.1"},
		"metadata.test":  {"169.254.169.254"},
		"intranet.test":  {"10.0.0.5"},
		"mapped.test":    {"::ffff:192.168.1.1"},
		"sixmeta.test":   {"fd00:ec2::254"},
		"loopback6.test": {"::1"},
	}}
	f := browser.NewFetcher(browser.Options{Resolver: res})
	for host := range res.answers {
		_, err := f.Fetch(context.Background(), "http://"+host+"/")
		wantBlocked(t, err)
	}
	_, err := f.Fetch(context.Background(), "http://unknown.test/")
	if err == nil || errors.As(err, new(*browser.BlockedError)) {
		t.Errorf("unknown host: got %v, want a resolution error", err)
	}
}

func TestFetchRedirectToPrivate(t *testing.T) {
	var target string
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusFound)
	})
	res := &fakeResolver{answers: map[string][]string{"site.test": {"127.0.0.1"}, "intranet.test": {"10.0.0.5"}}}
	f := browser.NewFetcher(browser.Options{Policy: testPolicy, Resolver: res})
	for _, target = range []string{
		"http://169.254.169.254/latest/meta-data/", "http://intranet.test/", "http://[::1]:" + s.port + "/",
		"http://127.0.0.2:" + s.port + "/",
	} {
		_, err := f.Fetch(context.Background(), "http://site.test:"+s.port+"/")
		wantBlocked(t, err)
	}
	target = "file:///etc/passwd"
	if _, err := f.Fetch(context.Background(), "http://site.test:"+s.port+"/"); !errors.Is(err, browser.ErrBadURL) {
		t.Errorf("redirect to file: got %v, want ErrBadURL", err)
	}
}

// TestFetchDNSRebinding: the name answers a public address to the first
// lookup and a private one to the next. The first request is pinned to
// what was checked; the redirect back to the same name is looked up and
// checked again, and refused.
func TestFetchDNSRebinding(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			http.Redirect(w, r, "/again", http.StatusFound)
			return
		}
		fmt.Fprint(w, "reached a second time")
	})
	res := &fakeResolver{answers: map[string][]string{"rebind.test": {"127.0.0.1", "10.0.0.1"}}}
	f := browser.NewFetcher(browser.Options{Policy: testPolicy, Resolver: res})
	_, err := f.Fetch(context.Background(), "http://rebind.test:"+s.port+"/")
	wantBlocked(t, err)
	if got := s.hits.Load(); got != 1 {
		t.Errorf("the site got %d requests, want 1 (the second is refused before dialling)", got)
	}
	if got := res.count("rebind.test"); got != 2 {
		t.Errorf("%d lookups, want 2 (one per connection)", got)
	}
}

func TestFetchLimits(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			fmt.Fprint(w, strings.Repeat("x", 2048))
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		default: // endless redirects
			http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
		}
	})
	res := &fakeResolver{answers: map[string][]string{"site.test": {"127.0.0.1"}}}
	f := browser.NewFetcher(browser.Options{Policy: testPolicy, Resolver: res, MaxBytes: 1024, Timeout: 300 * time.Millisecond, MaxRedirects: 3})
	base := "http://site.test:" + s.port
	if _, err := f.Fetch(context.Background(), base+"/big"); !errors.Is(err, browser.ErrTooLarge) {
		t.Errorf("big: got %v, want ErrTooLarge", err)
	}
	if _, err := f.Fetch(context.Background(), base+"/slow"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow: got %v, want a deadline error", err)
	}
	before := s.hits.Load()
	if _, err := f.Fetch(context.Background(), base+"/r"); !errors.Is(err, browser.ErrTooManyRedirects) {
		t.Errorf("redirects: got %v, want ErrTooManyRedirects", err)
	}
	if got := s.hits.Load() - before; got != 4 {
		t.Errorf("%d requests for a redirect loop, want 4 (the first and 3 redirects)", got)
	}
}

func TestParseURL(t *testing.T) {
	for _, u := range []string{
		"", "ftp://example.com/", "file:///etc/passwd", "gopher://x/", "javascript:alert(1)", "//example.com/",
		"http://user:pass@example.com/", "http:///path", "example.com", "http://example.com:99999/",
		"http://example.com/" + strings.Repeat("a", 5000),
	} {
		if _, err := browser.ParseURL(u); !errors.Is(err, browser.ErrBadURL) {
			t.Errorf("ParseURL(%q): got %v, want ErrBadURL", u, err)
		}
	}
	if u, err := browser.ParseURL("https://example.com/a?b=c"); err != nil || u.Host != "example.com" {
		t.Errorf("a good URL: %v, %v", u, err)
	}
}

func TestWithBase(t *testing.T) {
	u, _ := url.Parse("https://example.com/dir/page?q=\"x\"")
	tests := []struct{ in, want string }{
		{"<!DOCTYPE html><html lang=en><HEAD class=x><title>", `<!DOCTYPE html><html lang=en><HEAD class=x><base href="https://example.com/dir/page?q=&#34;x&#34;"><title>`},
		{"<!doctype html><p>no head", `<!doctype html><base href="https://example.com/dir/page?q=&#34;x&#34;"><p>no head`},
		{"plain", `<base href="https://example.com/dir/page?q=&#34;x&#34;">plain`},
		{"<header>x</header>", `<base href="https://example.com/dir/page?q=&#34;x&#34;"><header>x</header>`},
	}
	for _, tt := range tests {
		if got := string(browser.WithBase([]byte(tt.in), u)); got != tt.want {
			t.Errorf("WithBase(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestWithPolicy(t *testing.T) {
	const policy = "sandbox; default-src 'none'; img-src 'self' data:; frame-ancestors 'self'; form-action 'none'"
	const meta = `<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; img-src &#39;self&#39; data:; form-action &#39;none&#39;">`
	tests := []struct{ in, want string }{
		{"<script>x()</script>", meta + "<script>x()</script>"},
		{"<!DOCTYPE html><html><script>x()</script>", "<!DOCTYPE html>" + meta + "<html><script>x()</script>"},
		{"\ufeff <!-- c --> <!doctype html>\n<p>", "\ufeff <!-- c --> <!doctype html>" + meta + "\n<p>"},
		{"<p><!doctype html>", meta + "<p><!doctype html>"},
		{"", meta},
	}
	for _, tt := range tests {
		if got := string(browser.WithPolicy([]byte(tt.in), policy)); got != tt.want {
			t.Errorf("WithPolicy(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}
