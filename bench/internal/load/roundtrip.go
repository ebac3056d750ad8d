package load

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"
)

// ioTimeout bounds every network operation, so a stuck path fails the run
// instead of hanging it.
const ioTimeout = 10 * time.Second

// NewHTTPClient is a keep-alive client with a connection for each worker.
func NewHTTPClient(workers int) *fasthttp.Client {
	return &fasthttp.Client{
		Name:                     "svc-code-bench",
		MaxConnsPerHost:          workers,
		MaxIdleConnDuration:      time.Minute,
		ReadTimeout:              ioTimeout,
		WriteTimeout:             ioTimeout,
		NoDefaultUserAgentHeader: true,
	}
}

// HTTPGet is a worker that GETs url with header and expects 200 and want
// as the body.
func HTTPGet(client *fasthttp.Client, url string, header map[string]string, want []byte) Dial {
	return func(context.Context) (RoundTrip, func(), error) {
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		req.SetRequestURI(url)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		rt := func() error {
			if err := client.Do(req, resp); err != nil {
				return fmt.Errorf("GET %s: %w", url, err)
			}
			if resp.StatusCode() != fasthttp.StatusOK {
				return fmt.Errorf("GET %s: status %d: %.200s", url, resp.StatusCode(), resp.Body())
			}
			if !bytes.Equal(resp.Body(), want) {
				return fmt.Errorf("GET %s: unexpected body %.200q", url, resp.Body())
			}
			return nil
		}
		release := func() {
			fasthttp.ReleaseRequest(req)
			fasthttp.ReleaseResponse(resp)
		}
		return rt, release, nil
	}
}

// WebSocketEcho is a worker with its own connection to url (opened with
// header) that sends msg as a text message and waits for it to come back.
func WebSocketEcho(url string, header http.Header, msg []byte) Dial {
	return func(ctx context.Context) (RoundTrip, func(), error) {
		d := websocket.Dialer{HandshakeTimeout: ioTimeout}
		conn, resp, err := d.DialContext(ctx, url, header)
		if resp != nil {
			_ = resp.Body.Close()
		}
		if err != nil {
			if resp != nil {
				return nil, nil, fmt.Errorf("dial %s: %w (status %d)", url, err, resp.StatusCode)
			}
			return nil, nil, fmt.Errorf("dial %s: %w", url, err)
		}
		rt := func() error {
			deadline := time.Now().Add(ioTimeout)
			_ = conn.SetWriteDeadline(deadline)
			_ = conn.SetReadDeadline(deadline)
			if err := conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				return fmt.Errorf("send to %s: %w", url, err)
			}
			mt, got, err := conn.ReadMessage()
			if err != nil {
				return fmt.Errorf("read echo from %s: %w", url, err)
			}
			if mt != websocket.TextMessage || !bytes.Equal(got, msg) {
				return fmt.Errorf("echo from %s: got type %d %.100q, want the text sent", url, mt, got)
			}
			return nil
		}
		release := func() {
			closing := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
			_ = conn.WriteControl(websocket.CloseMessage, closing, time.Now().Add(time.Second))
			_ = conn.Close()
		}
		return rt, release, nil
	}
}
