package turnsig

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/redisx"
)

// TestSignedEntryVerifiesAfterRedis: an entry signed as chat gives it to
// XADD verifies as XREADGROUP returns it; altered, moved to another
// stream, unsigned, or signed with another secret, it does not.
func TestSignedEntryVerifiesAfterRedis(t *testing.T) {
	url := os.Getenv("TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	ctx := context.Background()
	rdb, err := redisx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("Redis must be reachable (TEST_REDIS_URL): %v", err)
	}
	defer rdb.Close()
	stream := "test:" + t.Name() + ":turns"
	t.Cleanup(func() { rdb.Del(context.Background(), stream) })
	k := New(internalauth.FromString("test-internal-secret-0123456789"))
	values := map[string]any{
		"event": "turn_ended", "session_id": "s", "turn_id": "s:1", "turn_number": 3,
		"duration_ms": int64(2500), "cwd": "/home/u/p", "tools": []byte(`[]`), "sig": "stale",
	}
	if err := k.Sign(stream, values); err != nil {
		t.Fatal(err)
	}
	id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: values}).Result()
	if err != nil {
		t.Fatal(err)
	}
	got, err := rdb.XRange(ctx, stream, id, id).Result()
	if err != nil || len(got) != 1 {
		t.Fatalf("XRANGE: %v %v", got, err)
	}
	read := got[0].Values
	if !k.Verify(stream, read) {
		t.Fatalf("the entry as read back does not verify: %v", read)
	}
	clone := func(change func(map[string]any)) map[string]any {
		c := map[string]any{}
		for f, v := range read {
			c[f] = v
		}
		change(c)
		return c
	}
	cases := []struct {
		name   string
		values map[string]any
		stream string
		key    Key
	}{
		{"cwd altered", clone(func(c map[string]any) { c["cwd"] = "/" }), stream, k},
		{"field added", clone(func(c map[string]any) { c["cost_usd"] = "99" }), stream, k},
		{"field removed", clone(func(c map[string]any) { delete(c, "prompt"); delete(c, "tools") }), stream, k},
		{"unsigned", clone(func(c map[string]any) { delete(c, Field) }), stream, k},
		{"another stream", read, "other:turns", k},
		{"another secret", read, stream, New(internalauth.FromString("another-secret-0123456789"))},
		{"no secret", read, stream, New(internalauth.Secret{})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.key.Verify(tc.stream, tc.values) {
				t.Error("verified")
			}
		})
	}
	if err := k.Sign(stream, map[string]any{"x": 1.5}); err == nil {
		t.Error("signed a value Redis would store in a form the signature does not fix")
	}
}
