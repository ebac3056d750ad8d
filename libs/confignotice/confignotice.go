// Package confignotice carries the notice "the server configuration
// changed" between the services over Redis pub/sub, on the channel
// <prefix>config:changed. chat publishes it after every change stored by
// PUT /api/app/config; the services that read keys of that configuration
// (analytics: shadow_db.sql_timeout_s) re-read them on it, at once.
//
// The notice carries no value: whatever a message says, a receiver only
// re-reads the configuration from PostgreSQL, so a message forged by
// someone who can publish on Redis injects nothing; at worst it causes a
// re-read. Pub/sub is at-most-once (a receiver that is disconnected misses
// notices), so Watch also calls back after each (re)subscription, and
// receivers keep their periodic re-read as the fallback.
package confignotice

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/redisx"
)

// Message is what Publish sends; receivers ignore the content.
const Message = "changed"

// Channel is the channel of the notice under keys' prefix.
func Channel(keys redisx.Keys) string { return keys.Key("config", "changed") }

// Publish sends the notice.
func Publish(ctx context.Context, rdb *redis.Client, keys redisx.Keys) error {
	return rdb.Publish(ctx, Channel(keys), Message).Err()
}

// Watch calls changed on every notice, and after each (re)subscription
// (notices may have been missed meanwhile), until ctx ends. changed runs
// on Watch's goroutine: a slow one delays the next. go-redis keeps the
// subscription alive (pings) and subscribes again after a reconnection.
func Watch(ctx context.Context, rdb *redis.Client, keys redisx.Keys, changed func(ctx context.Context)) {
	ps := rdb.Subscribe(ctx, Channel(keys))
	defer ps.Close()
	msgs := ps.ChannelWithSubscriptions(redis.WithChannelSize(16))
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-msgs:
			if !ok {
				return
			}
			if s, isSub := msg.(*redis.Subscription); isSub && s.Kind != "subscribe" {
				continue
			}
			changed(ctx)
		}
	}
}
