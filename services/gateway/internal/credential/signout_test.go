package credential

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/authtoken"
	"github.com/svc-code/svc-code/libs/configfile"
	"github.com/svc-code/svc-code/libs/redisx"
)

func testRedisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// TestSignedOutPrunedAfterExpiry: an instance forgets a signed-out cookie
// once it has expired, in memory and in Redis.
func TestSignedOutPrunedAfterExpiry(t *testing.T) {
	ctx := context.Background()
	rdb, err := redisx.Connect(ctx, testRedisURL())
	if err != nil {
		t.Fatal(err)
	}
	keys := redisx.Keys{Prefix: "test:" + t.Name() + ":"}
	t.Cleanup(func() {
		if ks, _ := rdb.Keys(ctx, keys.Prefix+"*").Result(); len(ks) > 0 {
			rdb.Del(ctx, ks...)
		}
		_ = rdb.Close()
	})
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, _, err := Open(ctx, Options{
		File: configfile.New(filepath.Join(t.TempDir(), "config.yaml")), Redis: rdb, Keys: keys,
		Params: authtoken.HashParams{Time: 1, MemoryKiB: 1024, Threads: 1}, CookieTTL: time.Hour, Now: clock,
	}, "a first password")
	if err != nil {
		t.Fatal(err)
	}
	ck, _, err := s.IssueCookie()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.SignOut(ctx, ck); got != SignOutRecorded || err != nil {
		t.Fatalf("SignOut = %v, %v; want recorded", got, err)
	}
	if _, err := s.CheckCookie(ck); err == nil {
		t.Fatal("a signed-out cookie passes")
	}
	if held, unsynced := s.SignedOutCount(); held != 1 || unsynced != 0 {
		t.Fatalf("held %d, unsynced %d; want 1, 0", held, unsynced)
	}

	mu.Lock()
	now = now.Add(time.Hour + time.Second)
	mu.Unlock()
	if err := s.syncSignedOut(ctx); err != nil {
		t.Fatal(err)
	}
	if held, unsynced := s.SignedOutCount(); held != 0 || unsynced != 0 {
		t.Errorf("after the cookie's expiry: held %d, unsynced %d; want 0, 0", held, unsynced)
	}
	// The next write prunes the expired entry from the set too.
	ck2, _, _ := s.IssueCookie()
	if got, _ := s.SignOut(ctx, ck2); got != SignOutRecorded {
		t.Fatalf("SignOut = %v, want recorded", got)
	}
	set := keys.Key("auth", "signedout", s.cur.ids.Cookie)
	if n, err := rdb.ZCard(ctx, set).Result(); err != nil || n != 1 {
		t.Errorf("entries in %s = %d (%v), want 1", set, n, err)
	}
}
