package redisx_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/redisx/redistest"
)

// TestPasswordProtectedRedis runs a redis-server of its own that requires
// a password, with an ACL user besides, and checks that each way the
// services use a connection authenticates with the URL's credentials:
// plain commands from the pool, a pub/sub subscription (its own
// connection) and a blocking stream read; and that a missing or wrong
// password is refused at Connect with an error that does not repeat it.
func TestPasswordProtectedRedis(t *testing.T) {
	const password, userPassword = "default-pw-4f1e", "alice-pw-9c2b"
	srv := redistest.Start(t, redis.Options{Password: password},
		"--requirepass", password,
		"--user", "alice", "on", ">"+userPassword, "~*", "&*", "+@all")
	ctx := context.Background()
	for name, url := range map[string]string{
		"password":     "redis://:" + password + "@" + srv.Addr + "/0",
		"ACL user":     "redis://alice:" + userPassword + "@" + srv.Addr + "/1",
		"default user": "redis://default:" + password + "@" + srv.Addr + "/2",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := redisx.Connect(ctx, url)
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			defer c.Close()
			if err := c.Set(ctx, "k", "v", time.Minute).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
			ps := c.Subscribe(ctx, "ch")
			defer ps.Close()
			if _, err := ps.Receive(ctx); err != nil {
				t.Fatalf("SUBSCRIBE: %v", err)
			}
			if err := c.Publish(ctx, "ch", "hello").Err(); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			msg, err := ps.ReceiveMessage(rctx)
			cancel()
			if err != nil || msg.Payload != "hello" {
				t.Fatalf("pub/sub message = %v, %v", msg, err)
			}
			if err := c.XGroupCreateMkStream(ctx, "s", "g", "0").Err(); err != nil {
				t.Fatal(err)
			}
			read := make(chan error, 1)
			go func() {
				_, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"s", ">"}, Block: 5 * time.Second}).Result()
				read <- err
			}()
			if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: map[string]any{"a": "b"}}).Err(); err != nil {
				t.Fatal(err)
			}
			if err := <-read; err != nil {
				t.Fatalf("blocking XREADGROUP: %v", err)
			}
		})
	}
	admin, err := redisx.Connect(ctx, "redis://:"+password+"@"+srv.Addr+"/0")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if n, err := redistest.AuthErrors(ctx, admin); err != nil || n != 0 {
		t.Errorf("the server refused %d commands for want of authentication (%v), want none", n, err)
	}

	for name, url := range map[string]string{
		"no password":    "redis://" + srv.Addr + "/0",
		"wrong password": "redis://:wrong-hunter2@" + srv.Addr + "/0",
		"wrong user":     "redis://bob:" + userPassword + "@" + srv.Addr + "/0",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := redisx.Connect(ctx, url)
			if err == nil {
				c.Close()
				t.Fatal("Connect succeeded")
			}
			msg := err.Error()
			if !strings.Contains(msg, "NOAUTH") && !strings.Contains(msg, "WRONGPASS") {
				t.Errorf("error %q does not say that authentication failed", msg)
			}
			if strings.Contains(msg, "hunter2") || strings.Contains(msg, userPassword) {
				t.Errorf("error %q repeats the password", msg)
			}
		})
	}
}
