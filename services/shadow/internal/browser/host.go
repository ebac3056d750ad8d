package browser

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
)

// errBadHost is a host a browser refuses (the URL does not parse).
var errBadHost = errors.New("bad host")

// ParseHost reads a URL's host (as url.URL.Hostname gives it: percent-
// decoded, without brackets) the way a browser does, following the WHATWG
// URL standard's host parser for http and https: an IPv6 literal; else,
// after the mapping of full-width digits and dots and lower-casing that
// IDNA applies, a host whose last label is a number is an IPv4 address in
// any of the forms browsers accept (127.1, 2130706433, 0x7f000001,
// 0177.0.0.1, a trailing dot) or is refused. ok is false for a DNS name.
// So the address a browser would reach is the one checked, and no such
// host is ever sent to DNS.
func ParseHost(host string) (addr netip.Addr, ok bool, err error) {
	if host == "" {
		return netip.Addr{}, false, fmt.Errorf("%w: empty", errBadHost)
	}
	if strings.Contains(host, ":") { // IPv6: Hostname has dropped the brackets
		a, err := netip.ParseAddr(host)
		if err != nil {
			return netip.Addr{}, false, fmt.Errorf("%w: %q is not an IPv6 address", errBadHost, host)
		}
		return a, true, nil
	}
	host = foldHost(host)
	if !endsInNumber(host) {
		return netip.Addr{}, false, nil
	}
	a, err := parseIPv4(host)
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("%w: %q: %v", errBadHost, host, err) //nolint:errorlint // the reason is shown, not matched
	}
	return a, true, nil
}

// foldHost maps what IDNA maps before the IPv4 parser sees a host: the
// full-width digits and letters, the ideographic and full-width full
// stops to ".", ASCII upper case to lower case.
func foldHost(host string) string {
	var b strings.Builder
	for _, r := range host {
		switch {
		case r == '\u3002' || r == '\uff0e' || r == '\uff61':
			r = '.'
		case r >= '\uff01' && r <= '\uff5e': // full-width ASCII
			r = r - 0xff01 + '!'
		}
		if r >= 'A' && r <= 'Z' {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// endsInNumber is the standard's "ends in a number" checker: the last
// label (a trailing empty one dropped) is all digits, or parses as an IPv4
// number (0x.. included).
func endsInNumber(host string) bool {
	parts := strings.Split(host, ".")
	if parts[len(parts)-1] == "" {
		if len(parts) == 1 {
			return false
		}
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, err := ipv4Number(last)
	return err == nil
}

// parseIPv4 is the standard's IPv4 parser: one to four numbers, each
// decimal, octal (a leading 0) or hexadecimal (0x); all but the last
// below 256, the last filling the bytes left.
func parseIPv4(host string) (netip.Addr, error) {
	parts := strings.Split(host, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return netip.Addr{}, errors.New("more than four parts")
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, err := ipv4Number(p)
		if err != nil {
			return netip.Addr{}, err
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, errors.New("a part is over 255")
		}
	}
	last := nums[len(nums)-1]
	if last >= uint64(1)<<(8*(5-len(nums))) {
		return netip.Addr{}, errors.New("the last part is too large")
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	//nolint:gosec // v < 1<<32 (checked above): each byte taken is in range
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), nil
}

// ipv4Number is the standard's IPv4 number parser.
func ipv4Number(s string) (uint64, error) {
	if s == "" {
		return 0, errors.New("an empty part")
	}
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	if s == "" {
		return 0, nil
	}
	for _, c := range s { // ParseUint would also take underscores
		if !isDigit(c, base) {
			return 0, fmt.Errorf("%q is not a base-%d number", s, base)
		}
	}
	n, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		// Too large for 64 bits: certainly too large for an address.
		return math.MaxUint64, nil //nolint:nilerr // the caller's range check refuses it
	}
	return n, nil
}

func isDigit(c rune, base int) bool {
	switch {
	case c >= '0' && c <= '9':
		return int(c-'0') < base
	case c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		return base == 16
	}
	return false
}
