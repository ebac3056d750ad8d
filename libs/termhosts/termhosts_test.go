package termhosts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"slices"
	"strings"
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
	if prev, err := r.ClaimSwap(ctx, "s3", "b"); err != nil || prev != "" {
		t.Errorf("ClaimSwap of a new session = %q, %v; want no previous host", prev, err)
	}
	if prev, err := r.ClaimSwap(ctx, "s3", "a"); err != nil || prev != "b" {
		t.Errorf("ClaimSwap = %q, %v; want previous host b", prev, err)
	}
	if id, _ := r.SessionHost(ctx, "s3"); id != "a" {
		t.Errorf("after ClaimSwap s3 is held by %q, want a", id)
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

// TestPublishAndTerminals: each host's terminal list lives and dies with
// its heartbeat, and the host's load is the length of its list.
func TestPublishAndTerminals(t *testing.T) {
	ctx := context.Background()
	r := testRegistry(t)
	started := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	termA := Terminal{Session: "s1", PID: 10, Cwd: "/tmp", Started: started, Clients: 2, Host: "a"}
	termB := Terminal{Session: "s2", PID: 20, Cwd: "/", Started: started, Clients: 0, Host: "b"}
	must(t, r.Publish(ctx, Host{ID: "a", URL: "http://127.0.0.1:1", Terminals: 99}, []Terminal{termA}))
	must(t, r.Publish(ctx, Host{ID: "b", URL: "http://127.0.0.1:2"}, []Terminal{termB}))
	must(t, r.Publish(ctx, Host{ID: "c", URL: "http://127.0.0.1:3"}, nil))
	must(t, r.Announce(ctx, Host{ID: "d", URL: "http://127.0.0.1:4"}))

	if h, ok, _ := r.Host(ctx, "a"); !ok || h.Terminals != 1 {
		t.Errorf("host a = %+v, %v; want Terminals 1, the length of its list", h, ok)
	}
	got, err := r.Terminals(ctx)
	must(t, err)
	slices.SortFunc(got, func(x, y Terminal) int { return strings.Compare(x.Session, y.Session) })
	if want := []Terminal{termA, termB}; !slices.Equal(got, want) {
		t.Errorf("Terminals = %+v, want %+v", got, want)
	}
	got, err = r.Terminals(ctx, "a")
	must(t, err)
	if want := []Terminal{termB}; !slices.Equal(got, want) {
		t.Errorf("Terminals skipping a = %+v, want %+v", got, want)
	}

	// b dies: its list goes with it, even if its list key outlived it.
	must(t, r.rdb.Del(ctx, r.hostKey("b")).Err())
	got, err = r.Terminals(ctx)
	must(t, err)
	if want := []Terminal{termA}; !slices.Equal(got, want) {
		t.Errorf("Terminals after b died = %+v, want %+v", got, want)
	}
	// a withdraws: nothing of it is left.
	must(t, r.Withdraw(ctx, "a", nil))
	if n, _ := r.rdb.Exists(ctx, r.terminalsKey("a"), r.hostKey("a")).Result(); n != 0 {
		t.Errorf("%d keys of withdrawn host a remain", n)
	}
	if got, err := r.Terminals(ctx); err != nil || len(got) != 0 {
		t.Errorf("Terminals after a withdrew = %+v, %v; want none", got, err)
	}
}

func TestWithHostTTL(t *testing.T) {
	ctx := context.Background()
	r := testRegistry(t).WithHostTTL(2 * time.Second)
	if r.HostTTL() != 2*time.Second {
		t.Errorf("HostTTL() = %v, want 2s", r.HostTTL())
	}
	must(t, r.Publish(ctx, Host{ID: "a", URL: "http://x:1"}, []Terminal{{Session: "s"}}))
	for _, key := range []string{r.hostKey("a"), r.terminalsKey("a")} {
		ttl, err := r.rdb.PTTL(ctx, key).Result()
		if err != nil || ttl <= time.Second || ttl > 2*time.Second {
			t.Errorf("%s TTL = %v, %v; want about 2s", key, ttl, err)
		}
	}
	if got := testRegistry(t).WithHostTTL(time.Millisecond).HostTTL(); got != time.Second {
		t.Errorf("WithHostTTL(1ms).HostTTL() = %v, want the 1s floor", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
