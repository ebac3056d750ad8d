// Package ingest records chat's turn events in analytics' PostgreSQL. It
// reads the turns stream (<prefix>turns) through a consumer group: each
// entry is recorded (idempotently, by turn id) and acknowledged only after
// its transaction committed, so an analytics that was down catches up from
// the stream when it returns, and an entry left pending by a consumer that
// died is claimed by another (XAUTOCLAIM). An entry that can never be
// recorded is logged, copied to the dead-letter stream (<prefix>turns:dead)
// and acknowledged, so it does not block the ones after it.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/services/analytics/internal/store"
)

// Defaults of Config.
const (
	DefaultGroup      = "analytics"
	DefaultBatch      = 100
	DefaultBlock      = 2 * time.Second
	DefaultClaimIdle  = 30 * time.Second
	DefaultClaimEvery = 10 * time.Second
	DeadMaxLen        = 10000
	maxBackoff        = 10 * time.Second
)

// Recorder is where events are recorded: *store.Store.
type Recorder interface {
	RecordStart(ctx context.Context, t store.TurnStart) error
	RecordEnd(ctx context.Context, t store.TurnEnd) error
}

var _ Recorder = (*store.Store)(nil)

// Config configures a Consumer.
type Config struct {
	Redis *redis.Client
	// Stream is the turns stream; its dead letters go to Stream + ":dead".
	Stream string
	// Group is the consumer group (DefaultGroup); Consumer this instance's
	// name in it, stable across restarts of the instance so that it takes
	// up its own pending entries at once.
	Group, Consumer string
	Recorder        Recorder
	// Batch, Block: entries per read and how long a read waits.
	Batch int
	Block time.Duration
	// ClaimIdle: an entry pending that long on another consumer is taken
	// over; ClaimEvery: how often that is checked.
	ClaimIdle, ClaimEvery time.Duration
	Log                   *slog.Logger
	// Verify, when set, is asked about every entry first: one it refuses
	// (not signed by chat, libs/turnsig) is parked in the dead-letter
	// stream, not recorded, so that writing to Redis cannot add turns or
	// costs. Nil accepts every entry (this package's own tests).
	Verify func(values map[string]any) bool
}

// Consumer is one member of the turns stream's consumer group.
type Consumer struct {
	cfg Config
}

// New returns a Consumer; Run starts it.
func New(cfg Config) *Consumer {
	if cfg.Group == "" {
		cfg.Group = DefaultGroup
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Block <= 0 {
		cfg.Block = DefaultBlock
	}
	if cfg.ClaimIdle <= 0 {
		cfg.ClaimIdle = DefaultClaimIdle
	}
	if cfg.ClaimEvery <= 0 {
		cfg.ClaimEvery = DefaultClaimEvery
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Consumer{cfg: cfg}
}

// DeadStream is the dead-letter stream of stream.
func DeadStream(stream string) string { return stream + ":dead" }

// Run consumes until ctx ends. Redis or PostgreSQL failures are logged and
// retried with backoff; the entries involved stay pending and are done
// again.
func (c *Consumer) Run(ctx context.Context) error {
	log := c.cfg.Log.With("stream", c.cfg.Stream, "consumer", c.cfg.Consumer)
	backoff := time.Duration(0)
	var lastClaim time.Time
	ownPending := true // first take up what this consumer left unacknowledged
	lostAt := ""       // where a loss to trimming was last reported (checkTrimmed)
	for ctx.Err() == nil {
		if backoff > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
		}
		err := c.ensureGroup(ctx)
		// Own pending entries first: XAUTOCLAIM would silently drop those
		// the stream no longer holds, which handle reports.
		if err == nil && !ownPending && time.Since(lastClaim) >= c.cfg.ClaimEvery {
			err = c.checkTrimmed(ctx, log, &lostAt)
			if err == nil {
				err = c.claim(ctx)
			}
			if err == nil {
				lastClaim = time.Now()
			}
		}
		if err == nil {
			var n int
			n, err = c.read(ctx, ownPending)
			if err == nil && ownPending && n == 0 {
				ownPending = false
			}
		}
		if err == nil {
			backoff = 0
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		ownPending = true // what failed is pending: do it again first
		backoff = min(max(2*backoff, 100*time.Millisecond), maxBackoff)
		log.WarnContext(ctx, "ingest turn events, retrying", "backoff", backoff.String(), "err", err)
	}
	return nil
}

// ensureGroup creates the consumer group, reading the stream from its
// start, and the stream itself when missing.
func (c *Consumer) ensureGroup(ctx context.Context) error {
	err := c.cfg.Redis.XGroupCreateMkStream(ctx, c.cfg.Stream, c.cfg.Group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("create consumer group %s: %w", c.cfg.Group, err)
	}
	return nil
}

// checkTrimmed reports entries the stream lost before the group read them:
// chat trims the stream (MAXLEN ~ 100000), so an analytics that was down
// long enough finds its next entries gone. They cannot be recovered; the
// loss is logged once (lostAt: the first entry id it was seen at). Trimming
// takes the oldest entries, so there is a loss only when the stream's first
// entry comes after the last one the group read; then every entry left is
// unread, and the lost ones are those added since minus those left.
func (c *Consumer) checkTrimmed(ctx context.Context, log *slog.Logger, lostAt *string) error {
	info, err := c.cfg.Redis.XInfoStream(ctx, c.cfg.Stream).Result()
	if err != nil {
		if strings.HasPrefix(err.Error(), "ERR no such key") {
			return nil
		}
		return fmt.Errorf("inspect %s: %w", c.cfg.Stream, err)
	}
	if info.Length == 0 || info.FirstEntry.ID == *lostAt {
		return nil
	}
	groups, err := c.cfg.Redis.XInfoGroups(ctx, c.cfg.Stream).Result()
	if err != nil {
		return fmt.Errorf("inspect the groups of %s: %w", c.cfg.Stream, err)
	}
	for _, g := range groups {
		// entries-read is unknown (0 here) when the group was moved by
		// hand; at 0-0 nothing was read.
		known := g.EntriesRead > 0 || g.LastDeliveredID == "0-0"
		if g.Name != c.cfg.Group || !known || !idAfter(info.FirstEntry.ID, g.LastDeliveredID) {
			continue
		}
		lost := info.EntriesAdded - g.EntriesRead - info.Length
		if lost <= 0 {
			continue
		}
		*lostAt = info.FirstEntry.ID
		log.ErrorContext(ctx, "turn events trimmed from the stream before analytics read them: those turns are not recorded",
			"group", c.cfg.Group, "lost", lost, "last_read_id", g.LastDeliveredID, "first_entry_id", info.FirstEntry.ID)
	}
	return nil
}

// idAfter reports whether stream entry id a ("ms-seq") comes after b.
func idAfter(a, b string) bool {
	am, as := splitID(a)
	bm, bs := splitID(b)
	return am > bm || (am == bm && as > bs)
}

func splitID(id string) (ms, seq uint64) {
	m, s, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(m, 10, 64)
	seq, _ = strconv.ParseUint(s, 10, 64)
	return ms, seq
}

// read reads a batch, this consumer's pending entries (pending) or new
// ones, and handles it; it reports how many entries it read.
func (c *Consumer) read(ctx context.Context, pending bool) (int, error) {
	id, block := ">", c.cfg.Block
	if pending {
		id, block = "0", -1
	}
	streams, err := c.cfg.Redis.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: c.cfg.Group, Consumer: c.cfg.Consumer, Streams: []string{c.cfg.Stream, id},
		Count: int64(c.cfg.Batch), Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		if isNoGroup(err) {
			return 0, c.ensureGroup(ctx)
		}
		return 0, fmt.Errorf("read %s: %w", c.cfg.Stream, err)
	}
	n := 0
	for _, s := range streams {
		n += len(s.Messages)
		if err := c.handleAll(ctx, s.Messages); err != nil {
			return n, err
		}
	}
	return n, nil
}

// claim takes over the entries pending longer than ClaimIdle on other
// consumers (dead or stuck) and handles them.
func (c *Consumer) claim(ctx context.Context) error {
	start := "0-0"
	for {
		msgs, next, err := c.cfg.Redis.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: c.cfg.Stream, Group: c.cfg.Group, Consumer: c.cfg.Consumer,
			MinIdle: c.cfg.ClaimIdle, Start: start, Count: int64(c.cfg.Batch),
		}).Result()
		if err != nil {
			if isNoGroup(err) {
				return c.ensureGroup(ctx)
			}
			return fmt.Errorf("claim pending entries of %s: %w", c.cfg.Stream, err)
		}
		if err := c.handleAll(ctx, msgs); err != nil {
			return err
		}
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
}

// handleAll handles msgs in order, stopping at the first failure (which
// leaves it and the rest pending).
func (c *Consumer) handleAll(ctx context.Context, msgs []redis.XMessage) error {
	for _, m := range msgs {
		if err := c.handle(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// handle records one entry and acknowledges it after the commit; a
// malformed entry is parked in the dead-letter stream and acknowledged.
func (c *Consumer) handle(ctx context.Context, m redis.XMessage) error {
	var err error
	if m.Values == nil {
		// A pending entry the stream no longer holds (trimmed while this
		// consumer was down): nothing to record or to park.
		c.cfg.Log.ErrorContext(ctx, "pending turn event trimmed from the stream before it was recorded: that turn event is lost",
			"stream", c.cfg.Stream, "entry_id", m.ID)
	} else {
		err = c.record(ctx, m.Values)
	}
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && permanent(pgErr) {
			err = &MalformedError{Reason: pgErr.Message}
		}
		if !IsMalformed(err) {
			return err
		}
		if err := c.park(ctx, m, err); err != nil {
			return err
		}
	}
	if err := c.cfg.Redis.XAck(ctx, c.cfg.Stream, c.cfg.Group, m.ID).Err(); err != nil {
		return fmt.Errorf("acknowledge %s: %w", m.ID, err)
	}
	return nil
}

func (c *Consumer) record(ctx context.Context, values map[string]any) error {
	if c.cfg.Verify != nil && !c.cfg.Verify(values) {
		return &MalformedError{Reason: "not signed by chat"}
	}
	p, err := Parse(values)
	if err != nil {
		return err
	}
	if p.Start != nil {
		return c.cfg.Recorder.RecordStart(ctx, *p.Start)
	}
	return c.cfg.Recorder.RecordEnd(ctx, *p.End)
}

// park copies a malformed entry to the dead-letter stream, with why and
// its original id.
func (c *Consumer) park(ctx context.Context, m redis.XMessage, why error) error {
	c.cfg.Log.ErrorContext(ctx, "turn event parked in the dead-letter stream",
		"stream", c.cfg.Stream, "entry_id", m.ID, "event", fmt.Sprint(m.Values["event"]), "err", why)
	values := make(map[string]any, len(m.Values)+2)
	for k, v := range m.Values {
		values[k] = v
	}
	values["dead_entry_id"] = m.ID
	values["dead_reason"] = why.Error()
	err := c.cfg.Redis.XAdd(ctx, &redis.XAddArgs{
		Stream: DeadStream(c.cfg.Stream), MaxLen: DeadMaxLen, Approx: true, Values: values,
	}).Err()
	if err != nil {
		return fmt.Errorf("park %s: %w", m.ID, err)
	}
	return nil
}

// permanent reports whether PostgreSQL refused the data itself: data
// exceptions (22), constraint violations (23) and limits the values pass
// (54: an index entry or a tsvector too big, ...). Retrying cannot help,
// and retrying would hold up every entry after this one.
func permanent(e *pgconn.PgError) bool {
	switch e.Code[:min(2, len(e.Code))] {
	case "22", "23", "54":
		return true
	}
	return false
}

func isNoGroup(err error) bool { return strings.HasPrefix(err.Error(), "NOGROUP") }
