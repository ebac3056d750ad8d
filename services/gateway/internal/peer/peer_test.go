package peer

import (
	"errors"
	"net/netip"
	"testing"
)

func hdr(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestResolve(t *testing.T) {
	proxies, err := ParseProxies("10.0.0.0/8, 192.168.1.5")
	if err != nil {
		t.Fatal(err)
	}
	p := NewPolicy(append(DefaultHosts, "127.0.0.1:8765", "Code.Example.com"), proxies)
	loop := netip.MustParseAddr("127.0.0.1")
	proxy := netip.MustParseAddr("10.1.2.3")
	tests := []struct {
		name    string
		remote  netip.Addr
		host    string
		headers map[string]string
		want    View
		err     error
	}{
		{"loopback ip", loop, "127.0.0.1:8765", nil, View{Scheme: "http", Host: "127.0.0.1:8765", Client: loop}, nil},
		{"localhost any port", loop, "localhost:9", nil, View{Scheme: "http", Host: "localhost:9", Client: loop}, nil},
		{"ipv6 loopback", loop, "[::1]:8765", nil, View{Scheme: "http", Host: "[::1]:8765", Client: loop}, nil},
		{"configured name, any case", loop, "code.EXAMPLE.com", nil, View{Scheme: "http", Host: "code.EXAMPLE.com", Client: loop}, nil},
		{"dns rebinding name", loop, "attacker.example:8765", nil, View{}, ErrUnknownHost},
		{"look-alike", loop, "localhost.evil.com", nil, View{}, ErrUnknownHost},
		{"empty host", loop, "", nil, View{}, ErrUnknownHost},
		{"userinfo trick", loop, "localhost@evil.com", nil, View{}, ErrUnknownHost},
		{
			"forged proto from an untrusted peer is ignored", loop, "localhost:8765",
			map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "code.example.com", "X-Forwarded-For": "1.2.3.4"},
			View{Scheme: "http", Host: "localhost:8765", Client: loop},
			nil,
		},
		{
			"forwarded host from an untrusted peer cannot launder a bad host", loop, "evil.example",
			map[string]string{"X-Forwarded-Host": "localhost"},
			View{},
			ErrUnknownHost,
		},
		{
			"trusted proxy", proxy, "upstream:8765",
			map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "code.example.com", "X-Forwarded-For": "6.6.6.6, 203.0.113.9, 10.9.9.9"},
			View{Scheme: "https", Host: "code.example.com", Client: netip.MustParseAddr("203.0.113.9"), Proxied: true},
			nil,
		},
		{
			"trusted proxy, forwarded host not allowed", proxy, "localhost",
			map[string]string{"X-Forwarded-Host": "evil.example"},
			View{},
			ErrUnknownHost,
		},
		{"trusted proxy, bad proto", proxy, "localhost", map[string]string{"X-Forwarded-Proto": "gopher"}, View{}, ErrBadForwarded},
		{
			"trusted proxy, no forwarded headers", netip.MustParseAddr("192.168.1.5"), "localhost", nil,
			View{Scheme: "http", Host: "localhost", Client: netip.MustParseAddr("192.168.1.5")},
			nil,
		},
		{
			"trusted proxy, garbage X-Forwarded-For keeps the peer", proxy, "localhost",
			map[string]string{"X-Forwarded-For": "nonsense"},
			View{Scheme: "http", Host: "localhost", Client: proxy},
			nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Resolve(Request{Remote: tt.remote, Host: tt.host, Header: hdr(tt.headers)})
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	if _, err := ParseProxies("10.0.0.0/33"); err == nil {
		t.Error("bad CIDR accepted")
	}
	if _, err := ParseProxies("not-an-ip"); err == nil {
		t.Error("name accepted as a proxy")
	}
	if _, err := ParseHosts("good.example, http://bad.example/"); err == nil {
		t.Error("URL accepted as a host name")
	}
	got, err := ParseHosts(" a.example ,, b.example:8080 ")
	if err != nil || len(got) != 2 {
		t.Errorf("ParseHosts = %v, %v", got, err)
	}
}

func FuzzResolve(f *testing.F) {
	f.Add("localhost:8765", "https", "1.2.3.4")
	f.Add("[::1]", "", "")
	f.Fuzz(func(t *testing.T, host, proto, xff string) {
		p := NewPolicy(DefaultHosts, nil)
		v, err := p.Resolve(Request{Remote: netip.MustParseAddr("127.0.0.1"), Host: host, Header: hdr(map[string]string{"X-Forwarded-Proto": proto, "X-Forwarded-For": xff})})
		if err != nil {
			return
		}
		if v.Scheme != "http" || v.Proxied {
			t.Errorf("untrusted peer's headers used: %+v", v)
		}
		if n := hostName(v.Host); n != "localhost" && n != "127.0.0.1" && n != "::1" {
			t.Errorf("host %q passed", v.Host)
		}
	})
}
