package app

import (
	"context"
	"errors"
	"log/slog"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/turnsig"
	"github.com/svc-code/svc-code/services/shadow/internal/gitapi"
	"github.com/svc-code/svc-code/services/shadow/internal/journal"
	"github.com/svc-code/svc-code/services/shadow/internal/project"
	"github.com/svc-code/svc-code/services/shadow/internal/projectapi"
	"github.com/svc-code/svc-code/services/shadow/internal/roots"
	"github.com/svc-code/svc-code/services/shadow/internal/shadowapi"
)

// startJournal adds the journal's routes (/api/shadow, /api/git,
// /api/project, /api/sessions/{id}/changes) to api and starts the turn
// stream's consumer. The answer stops the consumer and waits for it.
//
// /api/git and /api/project work only inside the allowed roots of the file
// routes (home, known projects and sessions, extra_dirs); the journal's
// routes need a project with a journal, which only a session's turns make.
func startJournal(ctx context.Context, cfg Config, home string, api *fiber.App, rdb *redis.Client, db *pgxpool.Pool,
	secret internalauth.Secret, log *slog.Logger,
) (stop func()) {
	sessions := project.PGSessions{Pool: db}
	store := project.NewStore(cfg.DataHome, sessions)
	sizeCap := journal.AppSettingsCap(db, cfg.MaxFileMB, log)
	allowed := allowedRoots(cfg, home, db, log)
	jnl := journal.New(store, log, journal.Options{MaxFileMB: sizeCap, Private: allowed.Denied})
	turns := journal.NewTurns(db)
	allow := func(ctx context.Context, cwd string) error {
		_, err := allowed.Resolve(ctx, cwd)
		switch {
		case errors.Is(err, roots.ErrForbidden):
			return protocol.Errorf(protocol.CodeForbidden, "%s is outside the allowed roots", cwd)
		case errors.Is(err, roots.ErrInvalid):
			return protocol.Errorf(protocol.CodeBadRequest, "bad cwd: %s", cwd)
		}
		return err
	}
	shadowapi.Register(api, shadowapi.Deps{Journal: jnl, Turns: turns, Sessions: sessions, Log: log})
	gitapi.Register(api, gitapi.Deps{Allow: allow, Private: allowed.Denied})
	projectapi.Register(api, projectapi.Deps{Store: store, MaxFileMB: sizeCap, Allow: allow})

	stream := redisx.Keys{Prefix: cfg.RedisPrefix}.Key("turns")
	key := turnsig.New(secret)
	consumer := journal.NewConsumer(rdb, stream, jnl, turns, sessions, log.With("component", "journal"),
		journal.ConsumerOptions{Name: cfg.Consumer, Verify: func(values map[string]any) bool { return key.Verify(stream, values) }})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = consumer.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
		jnl.Wait()
	}
}
