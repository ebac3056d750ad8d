package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/turnsig"
	"github.com/svc-code/svc-code/services/analytics/internal/ingest"
	"github.com/svc-code/svc-code/services/analytics/internal/store"
)

// TurnStream is the name of chat's turns stream under REDIS_PREFIX.
const TurnStream = "turns"

// startIngest consumes the turns stream in the background until ctx ends,
// recording only the entries chat signed with the internal secret;
// the returned function waits for the consumer to stop (call it before
// closing the pools).
func startIngest(ctx context.Context, cfg Config, rdb *redis.Client, rec ingest.Recorder, secret internalauth.Secret, log *slog.Logger) func() {
	stream := redisx.Keys{Prefix: cfg.RedisPrefix}.Key(TurnStream)
	key := turnsig.New(secret)
	c := ingest.New(ingest.Config{
		Redis:    rdb,
		Stream:   stream,
		Consumer: cfg.Consumer,
		Recorder: rec,
		Log:      log,
		Verify:   func(values map[string]any) bool { return key.Verify(stream, values) },
	})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// grantReadonly gives the read-only pool's role SELECT on the analytics
// tables (schema.Tables), unless it is the owner role itself.
func grantReadonly(ctx context.Context, db, readonly *pgxpool.Pool, log *slog.Logger) error {
	var owner, role string
	if err := db.QueryRow(ctx, `SELECT current_user`).Scan(&owner); err != nil {
		return fmt.Errorf("owner role: %w", err)
	}
	if err := readonly.QueryRow(ctx, `SELECT current_user`).Scan(&role); err != nil {
		return fmt.Errorf("read-only role: %w", err)
	}
	if role == owner {
		log.WarnContext(ctx, "read-only URL uses the owner role: no grants made", "role", role)
		return nil
	}
	_, err := store.Grant(ctx, db, role)
	return err
}
