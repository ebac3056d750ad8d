// Package peer decides, for each request, which host and scheme it was
// sent to and which client sent it: the Host allow-list that keeps a
// DNS-rebinding page from talking to the gateway under a name of its own,
// and the trusted proxies whose X-Forwarded-* headers are believed. It is
// pure, so the rules can be table-tested and fuzzed on their own.
package peer

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// DefaultHosts are the names a gateway answers to with no configuration:
// the loopback names a browser on this machine uses.
var DefaultHosts = []string{"localhost", "127.0.0.1", "::1"}

// ErrUnknownHost is returned for a request addressed to a host name that
// is not on the list.
var ErrUnknownHost = errors.New("host not allowed")

// ErrBadForwarded is returned when a trusted proxy sent an
// X-Forwarded-Proto other than http or https.
var ErrBadForwarded = errors.New("bad X-Forwarded-Proto")

// Policy is the gateway's host list and trusted proxies.
type Policy struct {
	hosts   map[string]bool
	proxies []netip.Prefix
}

// NewPolicy builds a policy from host names (a bare name or IP, or
// host:port, whose port is ignored; letter case does not matter) and the
// trusted proxies' networks.
func NewPolicy(hosts []string, proxies []netip.Prefix) *Policy {
	p := &Policy{hosts: map[string]bool{}, proxies: proxies}
	for _, h := range hosts {
		if n := hostName(h); n != "" {
			p.hosts[n] = true
		}
	}
	return p
}

// ParseHosts splits a comma-separated list of host names, reporting
// entries that cannot be a host name.
func ParseHosts(list string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if hostName(f) == "" || strings.ContainsAny(f, "/@?#") {
			return nil, fmt.Errorf("%q is not a host name", f)
		}
		out = append(out, f)
	}
	return out, nil
}

// ParseProxies parses a comma-separated list of IP addresses and CIDR
// networks.
func ParseProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not an IP network", f)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address", f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// Request is what Resolve looks at.
type Request struct {
	Remote netip.Addr // the TCP peer
	TLS    bool       // the connection itself is TLS
	Host   string     // the Host header
	// Header returns a request header ("" when absent).
	Header func(name string) string
}

// View is who sent a request and where to.
type View struct {
	Scheme string     // "http" or "https"
	Host   string     // host[:port] the client addressed
	Client netip.Addr // the client's address (the proxy's client when trusted)
	// Proxied is true when the X-Forwarded-* headers of a trusted proxy
	// were used.
	Proxied bool
}

// Resolve applies the policy to one request. X-Forwarded-Proto, -Host and
// -For count only when the TCP peer is a trusted proxy; from anyone else
// they are ignored. The host the request was addressed to (X-Forwarded-Host
// from a trusted proxy, else Host) must be on the list.
func (p *Policy) Resolve(r Request) (View, error) {
	v := View{Scheme: "http", Host: r.Host, Client: r.Remote.Unmap()}
	if r.TLS {
		v.Scheme = "https"
	}
	if p.trusted(v.Client) {
		if proto := lastField(r.Header("X-Forwarded-Proto")); proto != "" {
			proto = strings.ToLower(proto)
			if proto != "http" && proto != "https" {
				return View{}, ErrBadForwarded
			}
			v.Scheme, v.Proxied = proto, true
		}
		if h := lastField(r.Header("X-Forwarded-Host")); h != "" {
			v.Host, v.Proxied = h, true
		}
		if c, ok := p.clientFrom(r.Header("X-Forwarded-For")); ok {
			v.Client, v.Proxied = c, true
		}
	}
	if !p.hosts[hostName(v.Host)] || strings.ContainsAny(v.Host, "/@?# \t") {
		return View{}, ErrUnknownHost
	}
	return v, nil
}

func (p *Policy) trusted(a netip.Addr) bool {
	for _, n := range p.proxies {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// clientFrom walks X-Forwarded-For from the right, skipping trusted
// proxies: the first address that is not one is the client. Addresses left
// of it were written by the client itself and prove nothing.
func (p *Policy) clientFrom(xff string) (netip.Addr, bool) {
	if strings.TrimSpace(xff) == "" {
		return netip.Addr{}, false
	}
	fields := strings.Split(xff, ",")
	var last netip.Addr
	for i := len(fields) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(fields[i]))
		if err != nil {
			return netip.Addr{}, false
		}
		last = a.Unmap()
		if !p.trusted(last) {
			return last, true
		}
	}
	return last, last.IsValid()
}

func lastField(v string) string {
	if i := strings.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return strings.TrimSpace(v)
}

// hostName is the lower-case name of host[:port] without the port (and an
// IPv6 literal without brackets), or "" when there is none.
func hostName(hostport string) string {
	h := strings.ToLower(strings.TrimSpace(hostport))
	if h == "" {
		return ""
	}
	if name, _, err := net.SplitHostPort(h); err == nil {
		h = name
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	h = strings.TrimSuffix(h, ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String()
	}
	return h
}
