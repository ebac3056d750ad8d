package termhosts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/redisx"
)

func testRegistry(t *testing.T) *Registry {
	t.Helper()
	url := os.Getenv("TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	rdb, err := redisx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("Redis must be reachable for the tests (TEST_REDIS_URL): %v", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "test:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		keys, _ := rdb.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
		rdb.Close()
	})
	return New(rdb, redisx.Keys{Prefix: prefix})
}

func TestRouting(t *testing.T) {
	ctx := context.Background()
	r := testRegistry(t)
	if _, _, err := r.Route(ctx, "s1"); !errors.Is(err, ErrNoHost) {
		t.Fatalf("Route with no hosts: %v, want ErrNoHost", err)
	}
	must(t, r.Announce(ctx, Host{ID: "a", URL: "http://127.0.0.1:1", Terminals: 3}))
	must(t, r.Announce(ctx, Host{ID: "b", URL: "http://127.0.0.1:2", Terminals: 1}))

	h, lost, err := r.Route(ctx, "new")
	if err != nil || h.ID != "b" || lost != "" {
		t.Fatalf("new session routed to %+v %q %v, want least loaded b", h, lost, err)
	}
	must(t, r.Claim(ctx, "s1", "a"))
	if h, _, _ := r.Route(ctx, "s1"); h.ID != "a" {
		t.Errorf("held session routed to %s, want its host a", h.ID)
	}
	// Host a dies (its heartbeat key goes): s1 is reported lost on a and
	// goes to a live host.
	must(t, r.rdb.Del(ctx, r.hostKey("a")).Err())
	h, lost, err = r.Route(ctx, "s1")
	if err != nil || h.ID != "b" || lost != "a" {
		t.Errorf("session of a dead host: %+v lost=%q %v", h, lost, err)
	}
	live, _ := r.Live(ctx)
	if len(live) != 1 || live[0].ID != "b" {
		t.Errorf("Live = %+v, want only b", live)
	}
	// Release only removes the caller's own claim.
	must(t, r.Release(ctx, "s1", "b"))
	if id, _ := r.SessionHost(ctx, "s1"); id != "a" {
		t.Errorf("Release by another host removed the claim")
	}
	must(t, r.Release(ctx, "s1", "a"))
	if id, _ := r.SessionHost(ctx, "s1"); id != "" {
		t.Errorf("claim survived its release: %q", id)
	}
	must(t, r.Claim(ctx, "s2", "b"))
	must(t, r.Withdraw(ctx, "b", []string{"s2"}))
	if _, ok, _ := r.Host(ctx, "b"); ok {
		t.Error("withdrawn host still live")
	}
	if id, _ := r.SessionHost(ctx, "s2"); id != "" {
		t.Error("withdrawn host's session still claimed")
	}
}

func TestHeartbeatExpires(t *testing.T) {
	ctx := context.Background()
	r := testRegistry(t)
	must(t, r.Announce(ctx, Host{ID: "a", URL: "http://x:1"}))
	ttl, err := r.rdb.PTTL(ctx, r.hostKey("a")).Result()
	if err != nil || ttl <= 0 || ttl > HostTTL || ttl < HostTTL-time.Second {
		t.Errorf("host key TTL = %v, want about %v", ttl, HostTTL)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
