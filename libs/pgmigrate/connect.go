package pgmigrate

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/libs/svcenv"
)

// connectTimeout bounds the first contact with PostgreSQL.
const connectTimeout = 5 * time.Second

// Connect opens a pool on the URL of variable key (value, what key was set
// to, else key's line in the data home's postgres.env; see
// svcenv.PostgresURL) and checks within 5 s that the server answers. Errors
// name the variable but never repeat the URL, which holds a password.
func Connect(ctx context.Context, dataHome, key, value string) (*pgxpool.Pool, error) {
	dsn, err := svcenv.PostgresURL(dataHome, key, value)
	if err != nil {
		return nil, err
	}
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", key, err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres pool (%s): %w", key, err)
	}
	pctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("reach postgres at %s:%d (%s): %w", pcfg.ConnConfig.Host, pcfg.ConnConfig.Port, key, err)
	}
	return pool, nil
}
