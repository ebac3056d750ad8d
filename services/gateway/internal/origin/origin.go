// Package origin decides whether a request that carries an ambient
// credential (the svc_auth cookie or a tkn link) may change state: the
// Origin/CSRF gate. It is pure and small so that it can be table-tested and
// fuzzed on its own.
package origin

import (
	"net/url"
	"strings"
)

// Checker holds the gateway's extra allowed origins (server config key
// allowed_origins), normalised.
type Checker struct{ allowed map[string]bool }

// NewChecker normalises the allowed origins; entries that are not origins
// (a path, a query, no scheme) are reported so the config can be fixed.
func NewChecker(allowed []string) (*Checker, []string) {
	c := &Checker{allowed: map[string]bool{}}
	var bad []string
	for _, a := range allowed {
		n, ok := Normalize(a)
		if !ok {
			bad = append(bad, a)
			continue
		}
		c.allowed[n] = true
	}
	return c, bad
}

// Request is what the gate looks at.
type Request struct {
	// Scheme and Host are the gateway's own origin as this request reached
	// it ("http", "127.0.0.1:8765").
	Scheme, Host string
	// Origin and SecFetchSite are the request's headers ("" when absent).
	Origin, SecFetchSite string
}

// Allowed reports whether the request passes the gate: its Origin is the
// gateway's own origin or an allowed one, or it sent no Origin but
// Sec-Fetch-Site: same-origin. A browser's own word that the request is
// cross-site fails even with a matching Origin. Everything else, including
// no headers at all and Origin "null", fails.
func (c *Checker) Allowed(r Request) bool {
	site := strings.ToLower(strings.TrimSpace(r.SecFetchSite))
	if r.Origin == "" {
		return site == "same-origin"
	}
	o, ok := Normalize(r.Origin)
	if !ok {
		return false
	}
	if c != nil && c.allowed[o] {
		return true
	}
	if site != "" && site != "same-origin" {
		return false
	}
	own, ok := Normalize(strings.ToLower(r.Scheme) + "://" + r.Host)
	return ok && o == own
}

// Normalize returns scheme://host[:port] in lower case with the default port
// dropped, or false when s is not a bare http(s) origin.
func Normalize(s string) (string, bool) {
	if s == "" || s == "null" || strings.ContainsAny(s, " \t\r\n\\@") {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", false
	}
	if u.Path != "" && u.Path != "/" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", false
	}
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		return scheme + "://" + host + ":" + port, true
	}
	return scheme + "://" + host, true
}

// AllowedExtra reports whether a normalised origin is listed in
// allowed_origins (used to grant CORS).
func (c *Checker) AllowedExtra(normalized string) bool {
	return c != nil && c.allowed[normalized]
}
