// Package cwdstore remembers each session's terminal working directory in
// Redis, so that a session's shell starts where its first one did, on any
// host, after the shell exited or its host died.
//
// Sessions belong to the chat service, whose session table does not exist
// yet; until it does, this store is the terminal's own record, kept under
// terminal:cwd:<session> and forgotten after TTL without a terminal
// connection (each connection that reads it renews it). When chat stores
// sessions, their cwd should become the source and this store a cache.
package cwdstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/redisx"
)

// TTL is how long a stored directory outlives the last connection to its
// session.
const TTL = 30 * 24 * time.Hour

// Store reads and writes the stored directories.
type Store struct {
	rdb  *redis.Client
	keys redisx.Keys
}

// New returns a store over rdb under keys' prefix.
func New(rdb *redis.Client, keys redisx.Keys) *Store { return &Store{rdb: rdb, keys: keys} }

func (s *Store) key(session string) string { return s.keys.Key("terminal", "cwd", session) }

// Get returns the session's stored directory ("" when none) and renews it.
func (s *Store) Get(ctx context.Context, session string) (string, error) {
	dir, err := s.rdb.GetEx(ctx, s.key(session), TTL).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read stored cwd of %s: %w", session, err)
	}
	return dir, nil
}

// Set stores the session's directory.
func (s *Store) Set(ctx context.Context, session, dir string) error {
	if err := s.rdb.Set(ctx, s.key(session), dir, TTL).Err(); err != nil {
		return fmt.Errorf("store cwd of %s: %w", session, err)
	}
	return nil
}
