// Package redisx holds thin helpers over go-redis shared by the services:
// connecting with a bounded first ping, and building prefixed key names so
// that several deployments (or test runs) can share one Redis.
package redisx

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Connect parses url (redis://host:port/db), connects and pings once with a
// deadline, so a wrong URL is reported at start rather than on first use.
func Connect(ctx context.Context, url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("parse REDIS_URL: %w", err)
	}
	c := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("reach redis at %s: %w", opt.Addr, err)
	}
	return c, nil
}

// Keys builds key and channel names under one prefix ("svc:" by default).
type Keys struct{ Prefix string }

// Key joins parts with ":" under the prefix: Keys{"svc:"}.Key("auth", "epochs")
// is "svc:auth:epochs".
func (k Keys) Key(parts ...string) string { return k.Prefix + strings.Join(parts, ":") }

// Pinger is c's health check, for a service's health route.
func Pinger(c *redis.Client) func(context.Context) error {
	return func(ctx context.Context) error { return c.Ping(ctx).Err() }
}
