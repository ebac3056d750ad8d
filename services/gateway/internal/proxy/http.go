// Package proxy forwards authenticated requests to the backend services:
// plain HTTP with the response streamed through (never buffered whole), and
// WebSocket upgrades tunnelled over a spliced TCP connection. It adds the
// internal credential and strips the client's credentials and any
// internal header a client tried to send.
package proxy

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
)

// CookieName is the browser credential, never forwarded to a backend.
const CookieName = "svc_auth"

// Meta is what the gateway tells the backend about the request.
type Meta struct {
	AuthKind  string
	RequestID string
	// Headers are extra X-Svc-* headers from the routing decision (for
	// example the terminal host a session was lost on).
	Headers map[string]string
	// Client, Host and Scheme are who sent the request and where to, as
	// the gateway decided (a trusted proxy's X-Forwarded-* included); they
	// go out as X-Forwarded-For, -Host and -Proto.
	Client, Host, Scheme string
	// BodyLimit bounds the request body streamed to the backend.
	BodyLimit int
}

// LocalBodyDone is the fiber local set to true once the request body has
// been read to its end (by the proxy or the gateway itself).
const LocalBodyDone = "svc_body_done"

// ErrBodyTooLarge is returned by HTTP when the client sent more than
// Meta.BodyLimit (a chunked body, whose size was not declared).
var ErrBodyTooLarge = &protocol.Error{Code: protocol.CodePayloadTooLarge, Message: "the request body is larger than the limit"}

// requestBody streams the client's body to the backend, counting it.
type requestBody struct {
	r     io.Reader
	limit int64
	size  int64 // declared, -1 when chunked
	n     int64
	eof   bool
	over  bool
}

func (b *requestBody) Read(p []byte) (int, error) {
	if b.over {
		return 0, ErrBodyTooLarge
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.limit {
		b.over = true
		return 0, ErrBodyTooLarge
	}
	if errors.Is(err, io.EOF) || b.n == b.size {
		b.eof = true
	}
	return n, err
}

// Proxy forwards requests to backends.
type Proxy struct {
	secret           internalauth.Secret
	log              *slog.Logger
	client           *fasthttp.Client
	dialTimeout      time.Duration
	handshakeTimeout time.Duration
	tunnels          *Registry
}

// New returns a proxy that authenticates to backends with secret.
func New(secret internalauth.Secret, log *slog.Logger) *Proxy {
	dialer := &fasthttp.TCPDialer{Concurrency: 0}
	return &Proxy{
		secret: secret,
		log:    log,
		client: &fasthttp.Client{
			Name:                          "svc-code-gateway",
			NoDefaultUserAgentHeader:      true,
			StreamResponseBody:            true,
			DisableHeaderNamesNormalizing: true,
			DisablePathNormalizing:        true,
			MaxConnsPerHost:               1024,
			MaxIdleConnDuration:           30 * time.Second,
			ReadBufferSize:                16 << 10,
			Dial: func(addr string) (net.Conn, error) {
				return dialer.DialTimeout(addr, 5*time.Second)
			},
		},
		dialTimeout:      5 * time.Second,
		handshakeTimeout: 15 * time.Second,
		tunnels:          NewRegistry(),
	}
}

// Tunnels is the registry of open WebSocket tunnels.
func (p *Proxy) Tunnels() *Registry { return p.tunnels }

// hopHeaders are connection-scoped and never forwarded (RFC 9110 §7.6.1).
// Expect is answered by the gateway itself, never passed on.
var hopHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Expect",
}

// strippedRequestHeader reports whether a client header must not reach a
// backend: credentials, and any header in the gateway's own namespace.
func strippedRequestHeader(k []byte) bool {
	return len(k) >= 6 && strings.EqualFold(string(k[:6]), "x-svc-") ||
		strings.EqualFold(string(k), "Authorization") ||
		strings.EqualFold(string(k), "X-Forwarded-For") ||
		strings.EqualFold(string(k), "X-Forwarded-Host") ||
		strings.EqualFold(string(k), "X-Forwarded-Proto") ||
		strings.EqualFold(string(k), "Forwarded") ||
		strings.EqualFold(string(k), protocol.HeaderRequestID)
}

func (p *Proxy) setForwardHeaders(set func(k, v string), m Meta) {
	set(protocol.HeaderInternal, p.secret.Value())
	set(protocol.HeaderAuthKind, m.AuthKind)
	set(protocol.HeaderRequestID, m.RequestID)
	set("X-Forwarded-For", m.Client)
	set("X-Forwarded-Host", m.Host)
	set("X-Forwarded-Proto", m.Scheme)
	for k, v := range m.Headers {
		set(k, v)
	}
}

// requestURI is the path and query sent to the backend: the normalised
// path the auth rules saw, escaped again, and the query without tkn.
func requestURI(c *fiber.Ctx) []byte {
	u := c.Request().URI()
	var b bytes.Buffer
	writeEscapedPath(&b, u.Path())
	q := u.QueryString()
	if len(q) == 0 {
		return b.Bytes()
	}
	if u.QueryArgs().Has("tkn") {
		args := fasthttp.AcquireArgs()
		defer fasthttp.ReleaseArgs(args)
		u.QueryArgs().CopyTo(args)
		args.Del("tkn")
		q = args.QueryString()
	}
	if len(q) > 0 {
		b.WriteByte('?')
		writeEscapedQuery(&b, q)
	}
	return b.Bytes()
}

// HasControlByte reports whether a (decoded) path holds a byte that no
// request line may carry: NUL, the C0 controls (CR, LF, TAB, ...) or DEL.
func HasControlByte(path []byte) bool {
	for _, ch := range path {
		if ch < 0x20 || ch == 0x7f {
			return true
		}
	}
	return false
}

// writeEscapedPath writes a decoded path as a request-line path: bytes that
// RFC 3986 allows in a path segment ("/" included) stay as they are, every
// other byte is percent-encoded ("%" itself as %25, a space as %20, "?"
// as %3F), so the backend decodes exactly the path the gateway checked and
// nothing in it can end the request line or start a query.
func writeEscapedPath(b *bytes.Buffer, path []byte) {
	const hex = "0123456789ABCDEF"
	for _, ch := range path {
		if pathByteOK(ch) {
			b.WriteByte(ch)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[ch>>4])
		b.WriteByte(hex[ch&0x0f])
	}
}

// writeEscapedQuery writes a raw query string, percent-encoding the bytes
// that cannot stand in a request line (controls, space, "#", non-ASCII)
// and leaving the rest, escapes included, as the client sent them.
func writeEscapedQuery(b *bytes.Buffer, q []byte) {
	const hex = "0123456789ABCDEF"
	for _, ch := range q {
		if ch > 0x20 && ch < 0x7f && ch != '#' {
			b.WriteByte(ch)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[ch>>4])
		b.WriteByte(hex[ch&0x0f])
	}
}

func pathByteOK(ch byte) bool {
	switch {
	case 'a' <= ch && ch <= 'z', 'A' <= ch && ch <= 'Z', '0' <= ch && ch <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/", ch) >= 0
}

// HTTP forwards the request to target (host:port) and streams the answer.
func (p *Proxy) HTTP(c *fiber.Ctx, service, target string, m Meta) error {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	in := c.Request()

	req.Header.DisableNormalizing()
	req.Header.SetMethodBytes(in.Header.Method())
	req.SetRequestURIBytes(requestURI(c))
	req.URI().DisablePathNormalizing = true
	req.URI().SetScheme("http")
	req.URI().SetHost(target)
	for k, v := range in.Header.All() {
		if strippedRequestHeader(k) || strings.EqualFold(string(k), "Host") || strings.EqualFold(string(k), "Content-Length") {
			continue
		}
		req.Header.AddBytesKV(k, v)
	}
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	req.Header.DelCookie(CookieName)
	if len(req.Header.Peek("Cookie")) == 0 {
		req.Header.Del("Cookie")
	}
	p.setForwardHeaders(req.Header.Set, m)
	// The body is streamed as it arrives, never held whole.
	var body *requestBody
	if n := in.Header.ContentLength(); n != 0 && n != -2 { // -2: no body
		if stream := c.Context().RequestBodyStream(); stream != nil {
			body = &requestBody{r: stream, limit: int64(m.BodyLimit), size: int64(n)}
			req.SetBodyStream(body, n)
		} else {
			req.SetBodyRaw(in.Body())
		}
	}

	err := p.client.Do(req, resp)
	fasthttp.ReleaseRequest(req)
	if body == nil || body.eof {
		c.Locals(LocalBodyDone, true)
	}
	if body != nil && body.over {
		fasthttp.ReleaseResponse(resp)
		return ErrBodyTooLarge
	}
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		p.log.Warn("backend_unreachable", "backend", service, "err", err, "request_id", m.RequestID)
		return &protocol.Error{Code: protocol.CodeUnavailable, Message: "the " + service + " service is not reachable", Status: fiber.StatusBadGateway}
	}

	out := &c.Response().Header
	out.SetStatusCode(resp.StatusCode())
	for k, v := range resp.Header.All() {
		if strings.EqualFold(string(k), "Content-Length") {
			continue
		}
		out.AddBytesKV(k, v)
	}
	for _, h := range hopHeaders {
		out.Del(h)
	}
	if ct := resp.Header.ContentType(); len(ct) > 0 {
		out.SetContentTypeBytes(ct)
	}

	if bs := resp.BodyStream(); bs != nil {
		size := resp.Header.ContentLength()
		if size < 0 {
			size = -1
		}
		c.Response().SetBodyStream(&streamBody{r: bs, resp: resp}, size)
		return nil
	}
	c.Response().SetBody(resp.Body())
	fasthttp.ReleaseResponse(resp)
	return nil
}

// streamBody hands the backend's body to the client's response and frees
// the backend response (returning its connection to the pool) when done.
type streamBody struct {
	r    io.Reader
	resp *fasthttp.Response
	once sync.Once
}

func (s *streamBody) Read(p []byte) (int, error) { return s.r.Read(p) }

func (s *streamBody) Close() error {
	s.once.Do(func() {
		_ = s.resp.CloseBodyStream()
		fasthttp.ReleaseResponse(s.resp)
	})
	return nil
}
