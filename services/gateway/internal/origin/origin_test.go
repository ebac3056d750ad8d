package origin

import "testing"

func TestAllowed(t *testing.T) {
	c, bad := NewChecker([]string{"https://ui.example.com", "not an origin", "http://LOCALHOST:5173/"})
	if len(bad) != 1 || bad[0] != "not an origin" {
		t.Fatalf("bad = %v", bad)
	}
	own := func(origin, site string) Request {
		return Request{Scheme: "http", Host: "127.0.0.1:8765", Origin: origin, SecFetchSite: site}
	}
	tests := []struct {
		name string
		req  Request
		want bool
	}{
		{"same origin", own("http://127.0.0.1:8765", ""), true},
		{"same origin with same-origin fetch site", own("http://127.0.0.1:8765", "same-origin"), true},
		{"upper-case origin", own("HTTP://127.0.0.1:8765", ""), true},
		{"trailing slash", own("http://127.0.0.1:8765/", ""), true},
		{"no origin, same-origin fetch site", own("", "same-origin"), true},
		{"allowed extra origin", own("https://ui.example.com", "cross-site"), true},
		{"allowed extra origin normalised", own("http://localhost:5173", "same-site"), true},

		{"no headers at all", own("", ""), false},
		{"no origin, cross-site", own("", "cross-site"), false},
		{"no origin, fetch site none", own("", "none"), false},
		{"null origin", own("null", ""), false},
		{"look-alike suffix host", own("http://127.0.0.1:8765.evil.com", ""), false},
		{"look-alike prefix host", own("http://evil127.0.0.1:8765", ""), false},
		{"scheme changed", own("https://127.0.0.1:8765", ""), false},
		{"port changed", own("http://127.0.0.1:8766", ""), false},
		{"port dropped", own("http://127.0.0.1", ""), false},
		{"matching origin but cross-site", own("http://127.0.0.1:8765", "cross-site"), false},
		{"matching origin but same-site", own("http://127.0.0.1:8765", "same-site"), false},
		{"userinfo trick", own("http://127.0.0.1:8765@evil.com", ""), false},
		{"path in origin", own("http://127.0.0.1:8765/x", ""), false},
		{"other scheme", own("file://127.0.0.1:8765", ""), false},
		{"garbage", own("%%%", ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Allowed(tt.req); got != tt.want {
				t.Errorf("Allowed(%+v) = %v, want %v", tt.req, got, tt.want)
			}
		})
	}
}

func TestDefaultPortsAreEquivalent(t *testing.T) {
	var c *Checker
	if !c.Allowed(Request{Scheme: "https", Host: "svc.example.com", Origin: "https://svc.example.com:443"}) {
		t.Error("https default port not treated as the same origin")
	}
	if !c.Allowed(Request{Scheme: "http", Host: "svc.example.com:80", Origin: "http://svc.example.com"}) {
		t.Error("http default port in Host not treated as the same origin")
	}
	if !c.Allowed(Request{Scheme: "http", Host: "[::1]:8765", Origin: "http://[::1]:8765"}) {
		t.Error("IPv6 origin not matched")
	}
}

func FuzzAllowed(f *testing.F) {
	f.Add("http://127.0.0.1:8765", "")
	f.Add("http://127.0.0.1:8765.evil.com", "same-origin")
	f.Add("null", "")
	f.Fuzz(func(t *testing.T, o, site string) {
		var c *Checker
		r := Request{Scheme: "http", Host: "127.0.0.1:8765", Origin: o, SecFetchSite: site}
		if !c.Allowed(r) {
			return
		}
		// Whatever passes must be the own origin, or no origin with an
		// explicit same-origin fetch site.
		if o == "" {
			if site == "" {
				t.Errorf("passed with no headers")
			}
			return
		}
		if n, _ := Normalize(o); n != "http://127.0.0.1:8765" {
			t.Errorf("origin %q passed as own origin (normalised %q)", o, n)
		}
	})
}
