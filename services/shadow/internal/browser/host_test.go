package browser_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/svc-code/svc-code/services/shadow/internal/browser"
)

func TestParseHost(t *testing.T) {
	tests := []struct {
		host string
		want string // the address; "" a DNS name; "bad" refused
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0X7F000001", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"127.0.0.1.", "127.0.0.1"},
		{"0x7f.0.0.0x1.", "127.0.0.1"},
		{"0", "0.0.0.0"},
		{"0x", "0.0.0.0"},
		{"10.1", "10.0.0.1"},
		{"0xa9.0xfe.0xa9.0xfe", "169.254.169.254"},
		{"134744072", "8.8.8.8"},
		{"8.8.8.8", "8.8.8.8"},
		{"１２７.０.０.１", "127.0.0.1"},
		{"127。0。0。1", "127.0.0.1"},
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1"},
		{"::1", "::1"},
		{"example.com", ""},
		{"example.com.", ""},
		{"localhost", ""},
		{"1.2.3.4.example", ""},
		{"0x7f000001x", ""},
		{"a.b.c.d.e", ""},
		{"09", "bad"},
		{"0x7g", ""}, // not a number: a name, as in browsers
		{"1.2.3.4.5", "bad"},
		{"256.0.0.1", "bad"},
		{"1.256.0.0", "bad"},
		{"4294967296", "bad"},
		{"0x100000000", "bad"},
		{"99999999999999999999999", "bad"},
		{"example.0x", "bad"},
		{"example.123", "bad"},
		{"1..2", "bad"},
		{"::ffff:zz", "bad"},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			ip, ok, err := browser.ParseHost(tt.host)
			got := ""
			switch {
			case err != nil:
				got = "bad"
			case ok:
				got = ip.String()
			}
			if got != tt.want {
				t.Errorf("ParseHost(%q) = %q (ok %v, err %v), want %q", tt.host, got, ok, err, tt.want)
			}
		})
	}
}

// lookupRecorder finds no name and remembers every lookup: a host that is an
// address literal must never reach DNS.
type lookupRecorder struct {
	mu    sync.Mutex
	hosts []string
}

func (r *lookupRecorder) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hosts = append(r.hosts, host)
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *lookupRecorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.hosts...)
}

// Hosts a browser reads as loopback or private addresses are refused with
// a BlockedError by the production policy, and none is looked up.
func TestFetchNumericHostsRefusedWithoutLookup(t *testing.T) {
	res := &lookupRecorder{}
	f := browser.NewFetcher(browser.Options{Resolver: res})
	for _, host := range []string{
		"127.1", "2130706433", "0x7f000001", "0177.0.0.1", "127.0.0.1.", "[::ffff:127.0.0.1]", "0x7f.1",
		"017700000001", "10.1", "0xa9fea9fe", "192.168.1", "0", "１２７.０.０.１",
	} {
		for _, port := range []string{"", ":8773"} {
			_, err := f.Fetch(context.Background(), "http://"+host+port+"/api/health/shadow")
			var be *browser.BlockedError
			if !errors.As(err, &be) {
				t.Errorf("%s%s: got %v, want a BlockedError", host, port, err)
			}
		}
	}
	if got := res.seen(); len(got) > 0 {
		t.Errorf("looked up %v; no address literal may reach DNS", got)
	}
	for _, u := range []string{"http://09/", "http://1.2.3.4.5/", "http://256.1/", "http://0x100000000/", "http://example.123/", "http://%31%32%37.1/"} {
		if _, err := f.Fetch(context.Background(), u); !errors.Is(err, browser.ErrBadURL) {
			t.Errorf("%s: got %v, want ErrBadURL", u, err)
		}
	}
	if got := res.seen(); len(got) > 0 {
		t.Errorf("looked up %v for refused URLs", got)
	}
}

// A redirect to a numeric loopback host is refused the same way.
func TestFetchRedirectToNumericLoopback(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://2130706433:"+strings.Split(r.Host, ":")[1]+"/secret", http.StatusFound)
	}))
	t.Cleanup(s.Close)
	res := &lookupRecorder{}
	f := browser.NewFetcher(browser.Options{Policy: testPolicyOnce(t), Resolver: res})
	_, err := f.Fetch(context.Background(), s.URL+"/start")
	wantBlocked(t, err)
	if got := res.seen(); len(got) > 0 {
		t.Errorf("looked up %v", got)
	}
}

// testPolicyOnce lets the first dial to 127.0.0.1 through (the test site)
// and judges every later one as production does.
func testPolicyOnce(t *testing.T) browser.Policy {
	t.Helper()
	var mu sync.Mutex
	used := false
	return func(ip netip.Addr) error {
		mu.Lock()
		defer mu.Unlock()
		if !used && ip == netip.MustParseAddr("127.0.0.1") {
			used = true
			return nil
		}
		return browser.PublicOnly(ip)
	}
}

func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"127.1", "0x7f000001", "0177.0.0.1", "127.0.0.1.", "::1", "example.com", "1..2", "１２７.０.０.１"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		ip, ok, err := browser.ParseHost(host)
		if err != nil || !ok || !ip.Is4() {
			return
		}
		// An address read once reads the same again, in its dotted form.
		again, ok2, err2 := browser.ParseHost(ip.String())
		if err2 != nil || !ok2 || again != ip {
			t.Errorf("ParseHost(%q) = %v, but ParseHost(%q) = %v, %v, %v", host, ip, ip.String(), again, ok2, err2)
		}
	})
}
