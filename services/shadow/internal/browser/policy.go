// Package browser fetches public web pages for the URL viewer
// (/api/browser/proxy) without letting a page reach anything private.
//
// Every connection is dialled by Fetcher itself: it resolves the host
// once, refuses the request if any address is not public (Policy), and
// dials exactly the address it checked, so a name that answers a public
// address to the check and a private one afterwards (DNS rebinding) cannot
// reach our own services. Redirects go through the same door, each one
// resolved and checked again. Nothing of the user's request is forwarded:
// the fetch carries no cookie and no credential, and the answer's cookies
// are dropped.
package browser

import (
	"fmt"
	"net/netip"
)

// Policy decides whether an address may be dialled: nil to allow, an
// error saying why not.
type Policy func(ip netip.Addr) error

// blocked are the non-public ranges beyond what netip's predicates cover.
var blocked = mustPrefixes(
	"0.0.0.0/8",         // "this network"
	"100.64.0.0/10",     // carrier-grade NAT (and some clouds' metadata, 100.100.100.200)
	"192.0.0.0/24",      // IETF protocol assignments
	"192.0.2.0/24",      // TEST-NET-1
	"198.18.0.0/15",     // benchmarking
	"198.51.100.0/24",   // TEST-NET-2
	"203.0.113.0/24",    // TEST-NET-3
	"240.0.0.0/4",       // reserved, broadcast
	"::/96",             // IPv4-compatible (deprecated)
	"64:ff9b::/96",      // NAT64: may embed a private IPv4 address
	"64:ff9b:1::/48",    // local-use NAT64
	"100::/64",          // discard-only
	"2001::/32",         // Teredo: embeds an IPv4 address
	"2001:db8::/32",     // documentation
	"fec0::/10",         // site-local (deprecated)
	"2002::/16",         // 6to4: embeds an IPv4 address
	"fd00:ec2::254/128", // AWS metadata over IPv6 (already in fc00::/7)
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// PublicOnly is the production policy: loopback, private (RFC 1918, ULA),
// link-local (cloud metadata 169.254.169.254 included), multicast,
// unspecified, carrier-grade NAT, documentation, reserved and
// IPv4-embedding IPv6 ranges are refused; IPv4-mapped IPv6 addresses are
// judged as the IPv4 address they carry.
func PublicOnly(ip netip.Addr) error {
	if !ip.IsValid() {
		return fmt.Errorf("invalid address")
	}
	ip = ip.Unmap()
	switch {
	case ip.IsUnspecified():
		return fmt.Errorf("%s is unspecified", ip)
	case ip.IsLoopback():
		return fmt.Errorf("%s is loopback", ip)
	case ip.IsPrivate():
		return fmt.Errorf("%s is private", ip)
	case ip.IsLinkLocalUnicast():
		return fmt.Errorf("%s is link-local", ip)
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return fmt.Errorf("%s is multicast", ip)
	}
	for _, p := range blocked {
		if p.Contains(ip) {
			return fmt.Errorf("%s is in the reserved range %s", ip, p)
		}
	}
	return nil
}
