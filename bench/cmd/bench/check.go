package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/svc-code/svc-code/bench/internal/backend"
	"github.com/svc-code/svc-code/bench/internal/gatewayproc"
)

// checkGates makes sure both paths are guarded as in production before
// anything is measured: the backend refuses requests without the internal
// credential (HTTP and WebSocket), and the gateway refuses requests without
// a client credential. Otherwise the direct path would skip a check the
// real services make, and the comparison would flatter the backend.
func checkGates(ctx context.Context, be *backend.Backend, gw *gatewayproc.Gateway) error {
	client := &http.Client{Timeout: 5 * time.Second}
	for _, url := range []string{
		"http://" + be.Addr() + backend.SessionsPath,
		gw.URL("http") + backend.SessionsPath,
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("check GET %s without credential: %w", url, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			return fmt.Errorf("GET %s without credential: status %d, want 401", url, resp.StatusCode)
		}
	}
	url := "ws://" + be.Addr() + backend.EchoPath
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	conn, resp, err := d.DialContext(ctx, url, nil)
	if resp != nil {
		_ = resp.Body.Close()
	}
	if err == nil {
		_ = conn.Close()
		return fmt.Errorf("WebSocket %s without credential was accepted", url)
	}
	if resp == nil || resp.StatusCode != http.StatusUnauthorized {
		return errors.Join(fmt.Errorf("WebSocket %s without credential: want 401", url), err)
	}
	return nil
}
