package server

import (
	"bufio"
	"errors"
	"io"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/gateway/internal/credential"
	"github.com/svc-code/svc-code/services/gateway/internal/proxy"
	"github.com/svc-code/svc-code/services/gateway/internal/route"
)

// Request bodies are never read before the credential is checked (the
// server streams them: fiber's StreamRequestBody), and never held whole
// unless small. See docs/api.md "Limits".
const (
	// SmallBodyLimit bounds every body the gateway reads itself: a request
	// without a credential (the login is the only one that needs a body)
	// and the gateway's own routes.
	SmallBodyLimit = 64 << 10
	// unauthDrain bounds how much of a refused body without a credential
	// is read and thrown away (twice this; see finishBody).
	unauthDrain = 1 << 20
)

var errBodyTooLarge = errors.New("request body too large")

func tooLarge(limit int) error {
	return protocol.Errorf(protocol.CodePayloadTooLarge, "the request body is larger than the limit of %d bytes here", limit)
}

// bodyGate runs after authentication. A body for a proxied route (with a
// credential) is left to the proxy, which streams it to the backend
// within BODY_LIMIT_MB; any other body is read here, at most
// SmallBodyLimit. A declared length over the limit is refused at once.
func (s *Server) bodyGate(c *fiber.Ctx) error {
	n := bodyLength(c)
	if n == 0 {
		c.Locals(proxy.LocalBodyDone, true)
		return c.Next()
	}
	_, authed := c.Locals(localIdentity).(credential.Identity)
	proxied := authed && route.Match(route.Table, c.Path()) != ""
	limit := SmallBodyLimit
	if proxied {
		limit = s.d.BodyLimit
	}
	if n > limit {
		return tooLarge(limit)
	}
	if proxied {
		return c.Next()
	}
	body, err := readAtMost(c.Context().RequestBodyStream(), limit)
	switch {
	case errors.Is(err, errBodyTooLarge):
		return tooLarge(limit)
	case err != nil:
		c.Context().SetConnectionClose()
		return protocol.Errorf(protocol.CodeBadRequest, "the request body could not be read")
	}
	c.Request().SetBodyRaw(body)
	c.Locals(proxy.LocalBodyDone, true)
	return c.Next()
}

// readAtMost reads a whole body of at most limit bytes.
func readAtMost(r io.Reader, limit int) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, errBodyTooLarge
	}
	return b, nil
}

// finishBody runs when the answer is decided. A body nobody read (a
// refusal: 401, 403, 413, ...) must never be taken for the next request,
// and a client still sending it should read the answer rather than a reset
// connection. So a small one (at most SmallBodyLimit declared) is read and
// thrown away here, keeping the connection; any other is drained after the
// answer is sent (with "Connection: close"): the connection is taken over,
// read and discarded up to twice a bound (1 MiB without a credential,
// BODY_LIMIT_MB with one) or for drainTimeout, then closed.
func (s *Server) finishBody(c *fiber.Ctx) {
	n := bodyLength(c)
	if n == 0 || c.Context().Hijacked() {
		return
	}
	if done, _ := c.Locals(proxy.LocalBodyDone).(bool); done {
		return
	}
	if r := c.Context().RequestBodyStream(); r != nil && n > 0 && n <= SmallBodyLimit {
		if _, err := io.Copy(io.Discard, r); err == nil {
			return
		}
	}
	bound := unauthDrain
	if _, authed := c.Locals(localIdentity).(credential.Identity); authed {
		bound = s.d.BodyLimit
	}
	// Framing (chunk sizes) may add a little to the bytes on the wire.
	most := int64(2*bound) + 64<<10
	// The answer goes out with "Connection: close", written here: fasthttp
	// would close the connection at once rather than hand it over.
	ctx := c.Context()
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(conn net.Conn) {
		ctx.Response.Header.SetConnectionClose()
		_ = conn.SetDeadline(time.Now().Add(drainTimeout))
		bw := bufio.NewWriter(conn)
		if err := ctx.Response.Write(bw); err != nil || bw.Flush() != nil {
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(conn, most))
	})
}

// drainTimeout bounds how long a refused body is read after the answer.
const drainTimeout = 30 * time.Second

// bodyLength is the declared body length: 0 for none, -1 for chunked.
func bodyLength(c *fiber.Ctx) int {
	n := c.Request().Header.ContentLength()
	if n == -2 { // no Content-Length and no Transfer-Encoding: no body
		return 0
	}
	return n
}
