// Package store is chat's PostgreSQL persistence: the sessions, their
// numbered message log and the server-wide settings (tables created by
// internal/app/migrations). It knows nothing of HTTP or of agent
// processes; callers tell its failures apart with errors.Is against
// ErrNotFound, ErrProviderLocked and ErrBadCursor.
//
// Every message of a session (user prompt, agent message, notice) gets the
// next line number of that session. AppendMessage allocates it by bumping
// sessions.next_line in the same statement that inserts the message, so the
// lines of a session are unique and gapless however many writers there are;
// the one gap is lines a crash of PostgreSQL lost (Append.After).
package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Errors callers tell apart with errors.Is.
var (
	// ErrNotFound: no session with that id.
	ErrNotFound = errors.New("session not found")
	// ErrProviderLocked: the session's provider can no longer be changed.
	ErrProviderLocked = errors.New("provider locked after the first turn")
	// ErrBadCursor: a list cursor this package did not produce.
	ErrBadCursor = errors.New("malformed cursor")
	// ErrBadLine: a line the session's log cannot be cut at.
	ErrBadLine = errors.New("bad line")
)

// Store reads and writes chat's tables through a pgx pool.
type Store struct {
	db *pgxpool.Pool
	// appends is the pool the log's appends use (db unless AppendPool).
	appends *pgxpool.Pool
	// syncAgent: agent messages are committed synchronously too (see
	// AppendMessages).
	syncAgent bool
}

// Option configures a Store.
type Option func(*Store)

// SyncAgentMessages makes every append batch wait for its commit to be
// on disk, agent messages included (see AppendMessages).
func SyncAgentMessages(on bool) Option { return func(s *Store) { s.syncAgent = on } }

// AppendPool gives the log's appends (AppendMessages, AppendMessage) a
// pool of their own, on the same database: every agent frame waits for
// its append, so it must not queue for a connection behind other work
// (turn records, lists, the replays of a thousand reconnecting sockets).
func AppendPool(p *pgxpool.Pool) Option { return func(s *Store) { s.appends = p } }

// New returns a Store on db, whose search_path leads to chat's tables.
func New(db *pgxpool.Pool, opts ...Option) *Store {
	s := &Store{db: db, appends: db}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Ping checks that PostgreSQL answers, on a connection of the appends'
// pool (the one whose failures matter most).
func (s *Store) Ping(ctx context.Context) error { return s.appends.Ping(ctx) }

// Reset closes the connections of both pools (idle ones at once, those in
// use once released), so that the next calls connect afresh: after a
// restart of PostgreSQL every pooled connection is dead, and a call on
// one would fail although the server answers again.
func (s *Store) Reset() {
	s.db.Reset()
	if s.appends != s.db {
		s.appends.Reset()
	}
}

// NewID returns a new session id: 26 characters of base32 (128 random
// bits), safe in paths and query strings.
func NewID() string { return rand.Text() }

// notFound turns pgx.ErrNoRows into ErrNotFound, naming the session.
func notFound(err error, op, id string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s %s: %w", op, id, ErrNotFound)
	}
	return fmt.Errorf("%s %s: %w", op, id, err)
}
