package server

import (
	"errors"
	"net/netip"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/gateway/internal/peer"
)

// resolvePeer applies the host list and the trusted proxies to the
// request: 421 unknown_host for a host name the gateway does not answer
// to, 400 for a trusted proxy's unusable X-Forwarded-Proto.
func (s *Server) resolvePeer(c *fiber.Ctx) (peer.View, error) {
	remote, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	v, err := s.peers.Load().Resolve(peer.Request{
		Remote: remote,
		TLS:    c.Context().IsTLS(),
		Host:   string(c.Request().Host()),
		Header: func(k string) string { return c.Get(k) },
	})
	switch {
	case errors.Is(err, peer.ErrUnknownHost):
		return v, &protocol.Error{Code: protocol.CodeUnknownHost, Message: "this server does not answer to the host this request names; " +
			"add the name to SVC_HOSTS or the config key allowed_hosts if it is yours"}
	case err != nil:
		return v, protocol.Errorf(protocol.CodeBadRequest, "X-Forwarded-Proto from the proxy must be http or https")
	}
	return v, nil
}

// view is the request's resolved peer (set by the headers middleware).
func view(c *fiber.Ctx) peer.View {
	v, _ := c.Locals(localPeer).(peer.View)
	return v
}
