package termhosts

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/redisx"
)

const testSecret = "test-internal-secret-0123456789"

func testRegistry(t *testing.T) *Registry {
	t.Helper()
	return testRegistryLog(t, nil)
}

// testRegistryLog is testRegistry logging to log.
func testRegistryLog(t *testing.T, log *slog.Logger) *Registry {
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
	return New(rdb, redisx.Keys{Prefix: prefix}, internalauth.FromString(testSecret), log)
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

	if h, ok, _ := r.Host(ctx, "a"); !ok || h.Terminals != 1 || h.URL != "http://127.0.0.1:1" {
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

// sibling is another registry over r's Redis and prefix, signing with
// secret: another process (another run of a host, or an attacker who
// does not have the internal secret).
func sibling(r *Registry, secret string) *Registry {
	return New(r.rdb, r.keys, internalauth.FromString(secret), nil)
}

// TestForgedEntriesAreAbsent: whoever writes Redis without the internal
// secret cannot add a host, move a session, or list terminals: entries
// that do not verify count as absent, and each is logged once with its
// key name.
func TestForgedEntriesAreAbsent(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	r := testRegistryLog(t, slog.New(slog.NewTextHandler(&logs, nil)))
	must(t, r.Publish(ctx, Host{ID: "a", URL: "http://127.0.0.1:1"}, []Terminal{{Session: "s1"}}))
	must(t, r.Publish(ctx, Host{ID: "b", URL: "http://127.0.0.1:2"}, []Terminal{{Session: "s2"}, {Session: "s3"}}))
	must(t, r.Claim(ctx, "s1", "a"))
	genuineA, err := r.rdb.Get(ctx, r.hostKey("a")).Result()
	must(t, err)

	forge := func(key string, v any) {
		t.Helper()
		b, ok := v.(string)
		if !ok {
			j, err := json.Marshal(v)
			must(t, err)
			b = string(j)
		}
		must(t, r.rdb.Set(ctx, key, b, time.Minute).Err())
	}
	expires := time.Now().Add(time.Minute)
	var h Host
	must(t, json.Unmarshal([]byte(genuineA), &h))
	altered := h
	altered.URL = "http://127.0.0.1:6666"

	cases := []struct {
		name  string
		write func()
	}{
		{"unsigned host (the old format)", func() {
			forge(r.hostKey("evil"), Host{ID: "evil", URL: "http://127.0.0.1:6666", Expires: expires})
		}},
		{"host signed with another secret", func() {
			e := sibling(r, "not-the-internal-secret-000")
			must(t, e.Announce(ctx, Host{ID: "evil", URL: "http://127.0.0.1:6666"}))
		}},
		{"genuine host's signature on another URL", func() { forge(r.hostKey("a"), altered) }},
		{"genuine host entry copied under another id", func() { forge(r.hostKey("evil"), genuineA) }},
		{"garbage", func() { forge(r.hostKey("evil"), "http://127.0.0.1:6666") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must(t, r.rdb.SAdd(ctx, r.hostsKey(), "evil").Err())
			tc.write()
			live, err := r.Live(ctx)
			must(t, err)
			for _, h := range live {
				if h.URL == "http://127.0.0.1:6666" || h.ID == "evil" {
					t.Errorf("Live lists the forged %+v", h)
				}
			}
			for _, sid := range []string{"", "s1", "new"} {
				h, _, err := r.Route(ctx, sid)
				must(t, err)
				if h.URL == "http://127.0.0.1:6666" || h.ID == "evil" {
					t.Errorf("Route(%q) chose the forged %+v", sid, h)
				}
			}
			forge(r.hostKey("a"), genuineA)
			must(t, r.rdb.Del(ctx, r.hostKey("evil")).Err())
		})
	}

	// A genuine entry replayed after its life: Redis keeps it (the
	// attacker set no TTL), its signed expiry has passed.
	r.now = func() time.Time { return time.Now().Add(HostTTL + time.Second) }
	if _, ok, _ := r.Host(ctx, "a"); ok {
		t.Error("an expired announcement still routes")
	}
	r.now = time.Now

	// Claims: a forged claim moves nothing; a claim of an earlier run
	// of the host routes nowhere (its PTY is gone) but names the host.
	forge(r.sessionKey("s1"), claim{Host: "b", Boot: h.Boot, MAC: "00"})
	if got, _, _ := r.Route(ctx, "s1"); got.ID != "a" {
		// s1's claim is invalid: least loaded is a (1 terminal vs 2).
		t.Errorf("forged claim: s1 routed to %q, want a (the claim ignored, a least loaded)", got.ID)
	}
	forge(r.sessionKey("s4"), "b")
	if got, lost, _ := r.Route(ctx, "s4"); got.ID != "a" || lost != "" {
		t.Errorf("old-format claim of s4 to b: routed to %q (lost %q), want a", got.ID, lost)
	}
	if id, _ := r.SessionHost(ctx, "s4"); id != "" {
		t.Errorf("SessionHost of a forged claim = %q, want none", id)
	}
	earlier := sibling(r, testSecret) // same secret, another run
	must(t, earlier.Claim(ctx, "s5", "b"))
	if got, lost, _ := r.Route(ctx, "s5"); lost != "b" || got.ID != "a" {
		t.Errorf("claim of an earlier run of b: routed to %q, lost %q; want a, lost b", got.ID, lost)
	}
	// A genuine claim copied to another session does not verify.
	v, err := r.rdb.Get(ctx, r.sessionKey("s5")).Result()
	must(t, err)
	forge(r.sessionKey("s6"), v)
	if id, _ := r.SessionHost(ctx, "s6"); id != "" {
		t.Errorf("claim copied from s5 to s6 verified: %q", id)
	}

	// Terminal lists: an unsigned or altered list adds nothing.
	forge(r.terminalsKey("b"), []Terminal{{Session: "fake", Host: "b"}})
	got, err := r.Terminals(ctx)
	must(t, err)
	if len(got) != 1 || got[0].Session != "s1" {
		t.Errorf("Terminals with b's list forged = %+v, want only a's s1", got)
	}

	out := logs.String()
	for _, key := range []string{r.hostKey("evil"), r.hostKey("a"), r.sessionKey("s1"), r.sessionKey("s4"), r.sessionKey("s6"), r.terminalsKey("b")} {
		if n := strings.Count(out, "key="+key+" "); n != 1 {
			t.Errorf("invalid entry %s logged %d times, want once:\n%s", key, n, out)
		}
	}
}

// TestNoSecretNoRegistry: a registry without the internal secret neither
// announces nor believes anything.
func TestNoSecretNoRegistry(t *testing.T) {
	ctx := context.Background()
	r := testRegistry(t)
	must(t, r.Announce(ctx, Host{ID: "a", URL: "http://127.0.0.1:1"}))
	none := New(r.rdb, r.keys, internalauth.Secret{}, nil)
	if err := none.Announce(ctx, Host{ID: "z", URL: "http://127.0.0.1:1"}); !errors.Is(err, ErrNoKey) {
		t.Errorf("Announce without a secret: %v, want ErrNoKey", err)
	}
	if err := none.Claim(ctx, "s", "z"); !errors.Is(err, ErrNoKey) {
		t.Errorf("Claim without a secret: %v, want ErrNoKey", err)
	}
	if _, ok, _ := none.Host(ctx, "a"); ok {
		t.Error("a registry without the secret verified an entry")
	}
}
