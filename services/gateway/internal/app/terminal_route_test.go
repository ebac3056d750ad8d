package app

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/termhosts"
)

// TestTerminalRoutingByHost registers two terminal hosts the way terminal
// instances do and checks that the gateway sends each session to the host
// holding it, new sessions to the least loaded one, and a session of a
// dead host elsewhere with the lost host named.
func TestTerminalRoutingByHost(t *testing.T) {
	g := startGateway(t)
	hostA, hostB, rdb, reg := announceTwoHosts(t, g, 5, 1)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(reg.Claim(ctx, "held-by-a", "a"))
	tok := g.token()

	ws := func(session string) {
		t.Helper()
		c, _, err := g.dialWS("/ws/terminal?session="+session, http.Header{"Authorization": {"Bearer " + tok}})
		if err != nil {
			t.Fatalf("dial %s: %v", session, err)
		}
		c.Close()
	}
	ws("held-by-a")
	if hostA.hits.Load() != 1 || hostB.hits.Load() != 0 {
		t.Fatalf("held session: host a %d, host b %d hits; want it on a", hostA.hits.Load(), hostB.hits.Load())
	}
	ws("brand-new")
	if hostB.hits.Load() != 1 {
		t.Fatalf("new session did not go to the least loaded host b")
	}
	wantStatus(t, g.do(req{method: "DELETE", path: "/api/terminal/held-by-a", headers: bearer(tok)}), 200, "")
	if hostA.hits.Load() != 2 {
		t.Errorf("DELETE of a's session went elsewhere")
	}
	if g.backend.hits.Load() != 0 {
		t.Errorf("the fallback TERMINAL_URL was used although hosts are registered")
	}

	// Host a dies: its session goes to b, which is told what was lost.
	must(rdb.Del(ctx, g.prefix+"terminal:host:a").Err())
	ws("held-by-a")
	if hostB.hits.Load() != 2 {
		t.Fatalf("session of the dead host was not sent to b")
	}
	if got := hostB.last().Header.Get(protocol.HeaderTerminalLostHost); got != "a" {
		t.Errorf("lost-host header = %q, want a", got)
	}
	// A client cannot forge it.
	g.do(req{path: "/api/terminals", headers: map[string]string{"Authorization": "Bearer " + tok, protocol.HeaderTerminalLostHost: "forged"}})
	if got := hostB.last().Header.Get(protocol.HeaderTerminalLostHost); got != "" {
		t.Errorf("client-sent lost-host header reached the host: %q", got)
	}
}

// TestForgedSessionClaimCapturesNothing: a session held by host a is
// claimed in Redis for host b by someone without the internal secret (in
// the old plain form, and as a signed-looking claim). The socket still
// goes where a verified claim, or the least loaded host, says.
func TestForgedSessionClaimCapturesNothing(t *testing.T) {
	g := startGateway(t)
	hostA, hostB, rdb, reg := announceTwoHosts(t, g, 1, 5)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(reg.Claim(ctx, "victim", "a"))
	b, _, err := reg.Host(ctx, "b")
	must(err)
	tok := g.token()
	for i, forged := range []string{
		"b",
		`{"host":"b","boot":"` + b.Boot + `","mac":"` + strings.Repeat("ab", 32) + `"}`,
	} {
		must(rdb.Set(ctx, g.prefix+"terminal:session:victim", forged, 0).Err())
		c, _, err := g.dialWS("/ws/terminal?session=victim", http.Header{"Authorization": {"Bearer " + tok}})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		c.Close()
		if hostB.hits.Load() != 0 || hostA.hits.Load() != int64(i+1) {
			t.Fatalf("forged claim %q: host a %d, host b %d hits; want the socket on a", forged, hostA.hits.Load(), hostB.hits.Load())
		}
	}
}

// announceTwoHosts starts two terminal hosts and announces them to g's
// Redis as terminal instances do, a running loadA terminals and b loadB. It
// returns them with the Redis client and the registry that announced them.
func announceTwoHosts(t *testing.T, g *gateway, loadA, loadB int) (hostA, hostB *backend, rdb *redis.Client, reg *termhosts.Registry) {
	t.Helper()
	hostA, hostB = newBackend(t), newBackend(t)
	rdb, err := redisx.Connect(context.Background(), redisURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	reg = termhosts.New(rdb, redisx.Keys{Prefix: g.prefix}, internalauth.FromString(testSecret), nil)
	for _, h := range []termhosts.Host{{ID: "a", URL: hostA.srv.URL, Terminals: loadA}, {ID: "b", URL: hostB.srv.URL, Terminals: loadB}} {
		if err := reg.Announce(context.Background(), h); err != nil {
			t.Fatal(err)
		}
	}
	return hostA, hostB, rdb, reg
}
