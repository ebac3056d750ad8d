package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// serverTimeoutMargin is how long before the caller's deadline the
// server gives up on an append batch (see AppendMessages).
const serverTimeoutMargin = 500 * time.Millisecond

// Append is a message for AppendMessages.
type Append struct {
	SessionID string
	Kind      string
	Payload   json.RawMessage
	// LockProvider also locks the session's provider (provider_locked),
	// in the same statement: a session's first prompt sent to its agent.
	LockProvider bool
	// After, when set, is a line the message's line must come after: the
	// last line the session's frames went out with. Lines are never given
	// twice, even after a crash of PostgreSQL lost commits whose frames
	// had been sent (see AppendMessages): the lost lines are a gap in the
	// log, and the next message comes after them.
	After int64
	// Key, when set, makes the append safe to send again: a message with
	// this key already in the session's log (an earlier try committed,
	// its answer lost with the connection) is returned as it is, not
	// stored twice. A UUID (NewAppendKey); "" for none.
	Key string
}

// NewAppendKey returns a new Append.Key.
func NewAppendKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// key is a's Key as appendSQL's $6.
func (a Append) key() any {
	if a.Key == "" {
		return nil
	}
	return a.Key
}

// AppendMessages stores several messages, of one or several sessions, as
// one transaction in one round trip (one commit for all: a group commit).
// Each gets the next line of its session's log, as AppendMessage gives it,
// the messages of one session in the order given. It returns, in the order
// of in, the stored messages and for each nil or why it was not stored
// (ErrNotFound: its session is gone; the others are stored). err is set
// when the batch failed as a whole: then none is stored.
//
// The statements run in session-id order, so that two concurrent batches
// take the sessions' row locks in the same order and cannot deadlock.
//
// A batch of agent messages alone is committed with synchronous_commit
// off (unless the Store was made with SyncAgentMessages): PostgreSQL
// makes the commit visible at once, to every instance and reader (of the
// primary), and writes it to disk by itself, within three times
// wal_writer_delay (600 ms by default) plus the flush's own time, instead
// of before it answers. The frames leave once the lines are committed, so
// a disk whose flushes stall (hundreds of milliseconds on some virtual
// machines) does not stall the stream; what it costs is that a crash of
// PostgreSQL (its server, or its machine) can lose the agent messages of
// that last moment, frames sent included. Their lines are then a gap in
// the log, never given again (Append.After, SkipLostLines). A crash of
// chat loses nothing. A batch with anything else (a user's prompt, whose
// user_message_stored tells its sender it is stored; a notice; a provider
// lock) waits for the disk.
//
// When ctx has a deadline, each statement gets a server-side timeout that
// ends serverTimeoutMargin before it: a batch that cannot finish in time
// (a row held elsewhere, a stalled server) is rolled back by PostgreSQL
// and fails with its error, so that none is stored for sure. Were the
// client to give up first, the server could still commit what the caller
// was told had failed.
func (s *Store) AppendMessages(ctx context.Context, in []Append) (out []Message, errs []error, err error) {
	if len(in) == 0 {
		return nil, nil, nil
	}
	order := make([]int, len(in))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(in[a].SessionID, in[b].SessionID) })
	batch := &pgx.Batch{}
	deadline, timed := ctx.Deadline()
	if timed {
		left := max(time.Until(deadline)-serverTimeoutMargin, time.Millisecond)
		batch.Queue(`SELECT set_config('statement_timeout', $1, true)`, strconv.FormatInt(left.Milliseconds()+1, 10)+"ms")
	}
	async := !s.syncAgent && allLazy(in)
	if async {
		batch.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	}
	for _, i := range order {
		batch.Queue(appendSQL, in[i].SessionID, in[i].Kind, string(in[i].Payload), in[i].LockProvider, in[i].After, in[i].key())
	}
	// A batch without transaction statements runs as one implicit
	// transaction: one Sync, one commit; an error rolls it all back.
	br := s.appends.SendBatch(ctx, batch)
	out, errs = make([]Message, len(in)), make([]error, len(in))
	settings := 0
	if timed {
		settings++
	}
	if async {
		settings++
	}
	for range settings {
		if _, err = br.Exec(); err != nil {
			err = fmt.Errorf("append %d messages: set the transaction's settings: %w", len(in), err)
			_ = br.Close()
			s.lost(err)
			return nil, nil, err
		}
	}
	for _, i := range order {
		m := Message{SessionID: in[i].SessionID, Kind: in[i].Kind, Payload: in[i].Payload}
		rows, serr := br.Query()
		if serr == nil {
			serr = scanAppended(rows, &m)
		}
		switch {
		case errors.Is(serr, pgx.ErrNoRows):
			errs[i] = notFound(serr, "append message to session", m.SessionID)
		case serr != nil:
			err = fmt.Errorf("append %d messages: %w", len(in), serr)
		default:
			out[i] = m
		}
		if err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("append %d messages: %w", len(in), cerr)
	}
	if err != nil {
		s.lost(err)
		return nil, nil, err
	}
	return out, errs, nil
}

// lost makes the appends' next tries get fresh connections when err says
// that PostgreSQL went away: the pool's other connections are most likely
// dead too (a restart ends them all), and a try on one of them would fail
// again, or wait for its timeout. Connections in use are closed once
// released, not cut.
func (s *Store) lost(err error) {
	if Unavailable(err) {
		s.appends.Reset()
	}
}

// Lazy reports whether a may be committed without waiting for the disk:
// an agent message that does not lock the provider (see AppendMessages,
// which does so for a batch of such messages only).
func (a Append) Lazy() bool { return a.Kind == KindAgent && !a.LockProvider }

// allLazy reports whether every message of in is Lazy.
func allLazy(in []Append) bool {
	for _, a := range in {
		if !a.Lazy() {
			return false
		}
	}
	return true
}
