package files_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/shadow/internal/browser"
	"github.com/svc-code/svc-code/services/shadow/internal/files"
)

type staticResolver map[string]string

func (r staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ip, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.MustParseAddr(ip)}, nil
}

func TestProxyRoute(t *testing.T) {
	var mu sync.Mutex
	var seen http.Header
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Header.Clone()
		mu.Unlock()
		if r.URL.Path == "/pic.svg" {
			w.Header().Set("Content-Type", "image/svg+xml")
			fmt.Fprint(w, "<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>")
			return
		}
		if r.URL.Path == "/to-metadata" {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "tracker", Value: "1"})
		w.Header().Set("Content-Security-Policy", "script-src *")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<html><head><title>x</title></head><body><script>x()</script><img src=logo.png></body></html>")
	}))
	t.Cleanup(site.Close)
	_, port, _ := net.SplitHostPort(site.Listener.Addr().String())
	fetcher := browser.NewFetcher(browser.Options{
		Policy:   testPolicy,
		Resolver: staticResolver{"site.test": "127.0.0.1", "intranet.test": "10.0.0.7", "localhost": "127.0.0.1"},
	})
	e := mustEnv(t, fetcher)
	pageURL := "http://site.test:" + port + "/page"
	a := e.do(t, http.MethodGet, "/api/browser/proxy?url="+q(pageURL), nil, map[string]string{
		"Cookie": "svc_auth=our-session", "Authorization": "Bearer our-token",
	})
	if a.status != 200 {
		t.Fatalf("proxy: %d %s", a.status, a.body)
	}
	if !strings.HasPrefix(string(a.body), `<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;;`) ||
		!strings.Contains(string(a.body), `<head><base href="`+pageURL+`"><title>`) {
		t.Errorf("no base: %s", a.body)
	}
	if got := a.header.Get("Content-Security-Policy"); got != files.ProxyCSP {
		t.Errorf("CSP %q, want ours, not the site's", got)
	}
	if a.header.Get("Set-Cookie") != "" {
		t.Errorf("the site's cookie came through: %q", a.header.Get("Set-Cookie"))
	}
	if a.header.Get("X-Proxy-Status") != "404" || a.header.Get("X-Proxy-Url") != pageURL || a.header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("headers %v", a.header)
	}
	mu.Lock()
	if seen.Get("Cookie") != "" || seen.Get("Authorization") != "" || seen.Get(protocol.HeaderInternal) != "" {
		t.Errorf("credentials reached the site: %v", seen)
	}
	mu.Unlock()
	svg := e.get(t, "/api/browser/proxy?url="+q("http://site.test:"+port+"/pic.svg"))
	if svg.status != 200 || svg.header.Get("Content-Disposition") != "attachment" || svg.header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("svg: %d %v", svg.status, svg.header)
	}

	for _, u := range []string{
		"http://intranet.test/", "http://[::ffff:127.0.0.1]:" + port + "/",
		"http://169.254.169.254/", "http://site.test:" + port + "/to-metadata", "http://localhost:" + port + "/x",
		"http://127.0.0.2:" + port + "/",
	} {
		a := e.get(t, "/api/browser/proxy?url="+q(u))
		if u == "http://localhost:"+port+"/x" {
			// localhost resolves to the test site's 127.0.0.1, which the
			// test policy lets through: only that address is allowed.
			if a.status != 200 {
				t.Errorf("%s: %d", u, a.status)
			}
			continue
		}
		wantError(t, a, 403, protocol.CodeForbidden)
	}
	wantError(t, e.get(t, "/api/browser/proxy?url="+q("file:///etc/passwd")), 400, protocol.CodeBadRequest)
	wantError(t, e.get(t, "/api/browser/proxy?url="+q("http://user:pw@site.test/")), 400, protocol.CodeBadRequest)
	wantError(t, e.get(t, "/api/browser/proxy"), 400, protocol.CodeBadRequest)
	wantError(t, e.get(t, "/api/browser/proxy?url="+q("http://unknown.test/")), 502, protocol.CodeUnavailable)
}

// TestProxyProductionPolicy: the default fetcher (no injection) refuses
// loopback, where our own services listen.
func TestProxyProductionPolicy(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "internal") }))
	t.Cleanup(site.Close)
	e := mustEnv(t, nil)
	wantError(t, e.get(t, "/api/browser/proxy?url="+q(site.URL)), 403, protocol.CodeForbidden)
	wantError(t, e.get(t, "/api/browser/proxy?url="+q(strings.Replace(site.URL, "127.0.0.1", "localhost", 1))), 403, protocol.CodeForbidden)
}

// countingResolver finds no name and counts the lookups.
type countingResolver struct {
	mu    sync.Mutex
	hosts []string
}

func (r *countingResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hosts = append(r.hosts, host)
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestProxyNumericLoopbackRefused: hosts a browser reads as loopback or
// private addresses are 403 without a DNS lookup, like dotted ones.
func TestProxyNumericLoopbackRefused(t *testing.T) {
	res := &countingResolver{}
	e := mustEnv(t, browser.NewFetcher(browser.Options{Resolver: res}))
	for _, host := range []string{
		"127.1", "2130706433", "0x7f000001", "0177.0.0.1", "127.0.0.1.", "[::ffff:127.0.0.1]", "10.1", "0xa9fea9fe",
	} {
		a := e.get(t, "/api/browser/proxy?url="+q("http://"+host+":8773/api/health/shadow"))
		wantError(t, a, 403, protocol.CodeForbidden)
	}
	res.mu.Lock()
	defer res.mu.Unlock()
	if len(res.hosts) > 0 {
		t.Errorf("looked up %v: an address literal must not reach DNS", res.hosts)
	}
}
