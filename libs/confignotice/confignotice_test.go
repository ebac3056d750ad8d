package confignotice

import (
	"context"
	"crypto/rand"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/svc-code/svc-code/libs/redisx"
)

func testRedisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// TestWatchSeesPublish: Watch calls back once subscribed, then on every
// notice whatever it says, and returns when its context ends.
func TestWatchSeesPublish(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	rdb, err := redisx.Connect(ctx, testRedisURL())
	if err != nil {
		t.Fatalf("Redis must be reachable (TEST_REDIS_URL): %v", err)
	}
	defer rdb.Close()
	keys := redisx.Keys{Prefix: "test:" + rand.Text() + ":"}
	calls := make(chan struct{}, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, rdb, keys, func(context.Context) { calls <- struct{}{} })
	}()
	wait := func(what string) {
		t.Helper()
		select {
		case <-calls:
		case <-time.After(5 * time.Second):
			t.Fatalf("no call back for %s within 5s", what)
		}
	}
	wait("the subscription")
	if err := Publish(ctx, rdb, keys); err != nil {
		t.Fatal(err)
	}
	wait("a notice")
	// Another content (a forged message) is only a reason to re-read.
	if err := rdb.Publish(ctx, Channel(keys), `{"shadow_db.sql_timeout_s": 0}`).Err(); err != nil {
		t.Fatal(err)
	}
	wait("a message of another content")
	// Another prefix's notice is not ours.
	if err := Publish(ctx, rdb, redisx.Keys{Prefix: keys.Prefix + "other:"}); err != nil {
		t.Fatal(err)
	}
	if err := Publish(ctx, rdb, keys); err != nil {
		t.Fatal(err)
	}
	wait("the second notice")
	select {
	case <-calls:
		t.Error("a notice on another prefix's channel reached Watch")
	default:
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return within 5s of its context's end")
	}
}
