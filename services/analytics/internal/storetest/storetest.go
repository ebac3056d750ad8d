// Package storetest gives a test analytics' schema in a PostgreSQL schema
// of its own (libs/pgmigrate/pgmigratetest), migrated as the service does
// at start, and a Redis client with a key prefix of its own. PostgreSQL
// and Redis must be reachable (TEST_DATABASE_URL, TEST_REDIS_URL): a test
// fails, never skips, when they are not.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/pgmigrate"
	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/services/analytics/internal/app"
)

// DefaultRedisURL is the test Redis when TEST_REDIS_URL is not set.
const DefaultRedisURL = "redis://127.0.0.1:6379/0"

// RedisURL is TEST_REDIS_URL, else DefaultRedisURL.
func RedisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return DefaultRedisURL
}

// MustDB returns a pool on a fresh schema (dropped when the test ends) with
// analytics' migrations applied, and its URL.
func MustDB(tb testing.TB) (*pgxpool.Pool, string) {
	tb.Helper()
	url := pgmigratetest.MustSchema(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := pgxpool.New(ctx, url)
	if err != nil {
		tb.Fatalf("open %s: %v", url, err)
	}
	tb.Cleanup(db.Close)
	if err := pgmigrate.Apply(ctx, db, app.Service, app.Migrations()); err != nil {
		tb.Fatalf("apply analytics migrations: %v", err)
	}
	return db, url
}

// MustRedis returns a client on the test Redis and a key prefix unique to
// the test; every key under it is deleted when the test ends.
func MustRedis(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb, err := redisx.Connect(ctx, RedisURL())
	if err != nil {
		tb.Fatalf("Redis must be reachable at TEST_REDIS_URL (default %s): %v", DefaultRedisURL, err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	prefix := "test:" + tb.Name() + ":" + hex.EncodeToString(suffix) + ":"
	tb.Cleanup(func() {
		ctx := context.Background()
		keys, _ := rdb.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		_ = rdb.Close()
	})
	return rdb, prefix
}
