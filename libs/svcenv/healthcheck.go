package svcenv

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
)

// healthcheckTimeout bounds Healthcheck when ctx has no earlier deadline.
const healthcheckTimeout = 5 * time.Second

// LocalURL is the http URL of path on a service of this machine listening
// on addr (host:port). A wildcard host (empty, 0.0.0.0 or ::) is dialled as
// 127.0.0.1.
func LocalURL(addr, path string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + path, nil
}

// Healthcheck GETs url with the internal credential and succeeds only on
// 200. The error says why not, with the start of the answer's body. It is
// what a service binary's -healthcheck flag runs for docker.
func Healthcheck(ctx context.Context, url string, secret internalauth.Secret) error {
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck %s: %w", url, err)
	}
	req.Header.Set(protocol.HeaderInternal, secret.Value())
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
