package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Limits of a fetch.
const (
	DefaultTimeout      = 15 * time.Second
	DefaultMaxBytes     = 5 << 20
	DefaultMaxRedirects = 5
	maxURLLength        = 4096
	userAgent           = "svc-code-viewer/1"
)

// Errors of a fetch; BlockedError says which address was refused.
var (
	ErrBadURL           = errors.New("bad URL")
	ErrTooLarge         = errors.New("page too large")
	ErrTooManyRedirects = errors.New("too many redirects")
)

// BlockedError is a host whose address the policy refused.
type BlockedError struct {
	Host   string
	Reason error
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%s: not a public address: %v", e.Host, e.Reason)
}

// Resolver looks up a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configure a Fetcher; zero values take the defaults.
type Options struct {
	// Policy defaults to PublicOnly. Only tests loosen it.
	Policy       Policy
	Resolver     Resolver // default net.DefaultResolver
	Timeout      time.Duration
	MaxBytes     int64
	MaxRedirects int
}

// Fetcher fetches public pages.
type Fetcher struct {
	opts   Options
	client *http.Client
}

// Page is a fetched answer.
type Page struct {
	// URL is the final URL, after redirects.
	URL         *url.URL
	Status      int
	ContentType string
	Body        []byte
}

// NewFetcher returns a Fetcher with opts.
func NewFetcher(opts Options) *Fetcher {
	if opts.Policy == nil {
		opts.Policy = PublicOnly
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxRedirects <= 0 {
		opts.MaxRedirects = DefaultMaxRedirects
	}
	f := &Fetcher{opts: opts}
	transport := &http.Transport{
		Proxy:                  nil, // never through HTTP(S)_PROXY: the dial below is the only way out
		DialContext:            f.dial,
		ForceAttemptHTTP2:      true,
		DisableKeepAlives:      true, // every request dials, and so is checked
		TLSHandshakeTimeout:    opts.Timeout,
		ResponseHeaderTimeout:  opts.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	f.client = &http.Client{
		Transport: transport,
		Timeout:   opts.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > opts.MaxRedirects {
				return fmt.Errorf("%w (more than %d)", ErrTooManyRedirects, opts.MaxRedirects)
			}
			return checkURL(req.URL)
		},
	}
	return f
}

// Fetch gets raw (an absolute http or https URL).
func (f *Fetcher) Fetch(ctx context.Context, raw string) (Page, error) {
	u, err := ParseURL(raw)
	if err != nil {
		return Page{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Page{}, fmt.Errorf("%w: %v", ErrBadURL, err) //nolint:errorlint // the URL error is shown, not matched
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	resp, err := f.client.Do(req)
	if err != nil {
		return Page{}, unwrapURLError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	if err != nil {
		return Page{}, fmt.Errorf("read %s: %w", resp.Request.URL.Redacted(), err)
	}
	if int64(len(body)) > f.opts.MaxBytes {
		return Page{}, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, f.opts.MaxBytes)
	}
	return Page{
		URL:         resp.Request.URL,
		Status:      resp.StatusCode,
		ContentType: cleanContentType(resp.Header.Get("Content-Type")),
		Body:        body,
	}, nil
}

// unwrapURLError keeps the cause of a client error: a blocked address, a
// refused redirect, a timeout.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("fetch %s: %w", ue.URL, context.DeadlineExceeded)
		}
		return fmt.Errorf("fetch %s: %w", ue.URL, ue.Err)
	}
	return err
}

// ParseURL accepts absolute http and https URLs with a host and no user
// information.
func ParseURL(raw string) (*url.URL, error) {
	if raw == "" || len(raw) > maxURLLength {
		return nil, fmt.Errorf("%w: want an http or https URL of at most %d bytes", ErrBadURL, maxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err) //nolint:errorlint // the parse error is shown, not matched
	}
	if err := checkURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// checkURL checks u (the first URL or a redirect's) and writes an IP
// address host the way a browser reads it (127.1 becomes 127.0.0.1), so
// the request goes where a browser's would and names that address.
func checkURL(u *url.URL) error {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%w: only http and https URLs can be viewed", ErrBadURL)
	case u.Hostname() == "":
		return fmt.Errorf("%w: no host", ErrBadURL)
	case u.User != nil:
		return fmt.Errorf("%w: URLs with user information are refused", ErrBadURL)
	}
	p := u.Port()
	if p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: bad port %q", ErrBadURL, p)
		}
	}
	ip, isIP, err := ParseHost(u.Hostname())
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadURL, err) //nolint:errorlint // the host error is shown, not matched
	}
	if isIP && ip.Is4() {
		u.Host = ip.String()
		if p != "" {
			u.Host = net.JoinHostPort(u.Host, p)
		}
	}
	return nil
}

// dial resolves addr's host once, checks every address, and dials the
// checked addresses only.
func (f *Fetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("dial %s: bad port: %w", addr, err)
	}
	ips, err := f.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, ip := range ips {
		if err := f.opts.Policy(ip); err != nil {
			return nil, &BlockedError{Host: host, Reason: err}
		}
	}
	var d net.Dialer
	var firstErr error
	for _, ip := range ips {
		target := netip.AddrPortFrom(ip.Unmap(), uint16(port))
		conn, err := d.DialContext(ctx, network, target.String())
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, fmt.Errorf("dial %s: %w", host, firstErr)
}

// lookup answers host's addresses: an address literal as a browser reads
// it (never sent to DNS), else what the resolver says.
func (f *Fetcher) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	ip, isIP, err := ParseHost(strings.Trim(host, "[]"))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err) //nolint:errorlint // the host error is shown, not matched
	case isIP:
		return []netip.Addr{ip}, nil
	}
	ips, err := f.opts.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("resolve %s: no address", host)
	}
	return ips, nil
}

// cleanContentType re-formats a media type, dropping anything it cannot
// parse (application/octet-stream then).
func cleanContentType(ct string) string {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "application/octet-stream"
	}
	keep := map[string]string{}
	if cs, ok := params["charset"]; ok {
		keep["charset"] = cs
	}
	if out := mime.FormatMediaType(mt, keep); out != "" {
		return out
	}
	return "application/octet-stream"
}

// WithBase puts <base href="u"> at the start of the page's head, so the
// page's relative links and resources point at its own site rather than at
// ours.
func WithBase(body []byte, u *url.URL) []byte {
	tag := []byte(`<base href="` + html.EscapeString(u.String()) + `">`)
	lower := bytes.ToLower(body[:min(len(body), 64<<10)])
	at := 0
	if i := headOpen.FindIndex(lower); i != nil {
		at = i[1]
	} else if i := htmlOpen.FindIndex(lower); i != nil {
		at = i[1]
	} else if i := doctype.FindIndex(lower); i != nil {
		at = i[1]
	}
	out := make([]byte, 0, len(body)+len(tag))
	out = append(out, body[:at]...)
	out = append(out, tag...)
	return append(out, body[at:]...)
}

var (
	headOpen = regexp.MustCompile(`<head(\s[^>]*)?>`)
	htmlOpen = regexp.MustCompile(`<html(\s[^>]*)?>`)
	doctype  = regexp.MustCompile(`<!doctype[^>]*>`)
)

// WithPolicy puts <meta http-equiv="Content-Security-Policy"> with policy
// first in the page (after its doctype, if any), before any element that
// could run: a second fence that holds when a proxy in front replaces the
// Content-Security-Policy header. Directives a meta element cannot carry
// (sandbox, frame-ancestors, report-uri) are dropped from policy.
func WithPolicy(body []byte, policy string) []byte {
	var kept []string
	for _, d := range strings.Split(policy, ";") {
		d = strings.TrimSpace(d)
		name, _, _ := strings.Cut(d, " ")
		switch name {
		case "", "sandbox", "frame-ancestors", "report-uri":
			continue
		}
		kept = append(kept, d)
	}
	tag := []byte(`<meta http-equiv="Content-Security-Policy" content="` + html.EscapeString(strings.Join(kept, "; ")) + `">`)
	at := 0
	if m := leadingDoctype.FindIndex(body); m != nil {
		at = m[1]
	}
	out := make([]byte, 0, len(body)+len(tag))
	out = append(out, body[:at]...)
	out = append(out, tag...)
	return append(out, body[at:]...)
}

// leadingDoctype is a doctype at the very start of a page (after a byte
// order mark, blanks and comments).
var leadingDoctype = regexp.MustCompile(`(?is)^(?:\x{FEFF})?(?:\s|<!--.*?-->)*<!doctype[^>]*>`)
