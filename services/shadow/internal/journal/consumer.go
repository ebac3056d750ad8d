package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Consumer defaults.
const (
	// Group is the consumer group shadow reads the turn stream with.
	Group = "shadow"
	// DefaultLate: a turn_started handled this long after it was added no
	// longer shows the tree as it was at the turn's start, so it makes no
	// baseline commit (the turn's end commit then holds everything since
	// the branch's last commit).
	DefaultLate = 30 * time.Second
	// DefaultMinIdle: a pending entry idle this long (its consumer died or
	// its handling failed) is claimed again with XAUTOCLAIM.
	DefaultMinIdle = time.Minute
	// DefaultBlock bounds one blocking XREADGROUP.
	DefaultBlock = 5 * time.Second
	// FirstBacklog: how far back in the stream a new consumer group starts.
	FirstBacklog = time.Hour
	// MaxAttempts: an entry whose handling failed this many times is
	// acknowledged and logged, so one bad entry cannot stall the journal.
	MaxAttempts = 5
	batchSize   = 32
)

// Event is one entry of the turn stream (docs/api.md "Turn events").
type Event struct {
	// ID is the stream entry's id.
	ID         string
	Kind       string // turn_started or turn_ended
	SessionID  string
	TurnID     string
	TurnNumber int // 0 when the event does not carry one
	Prompt     string
	Cwd        string // "" when the event does not carry one
	// At is the event's started_at or ended_at, else the entry's time.
	At time.Time
	// Added is when the entry was added to the stream (from its id).
	Added time.Time
}

// ParseEvent reads a stream entry. Entries of other kinds are answered
// with Kind set and nothing else checked.
func ParseEvent(id string, values map[string]any) (Event, error) {
	str := func(k string) string {
		s, _ := values[k].(string)
		return s
	}
	ev := Event{
		ID: id, Kind: str("event"), SessionID: str("session_id"), TurnID: str("turn_id"),
		Prompt: str("prompt"), Cwd: str("cwd"),
	}
	ms, _, _ := strings.Cut(id, "-")
	if n, err := strconv.ParseInt(ms, 10, 64); err == nil {
		ev.Added = time.UnixMilli(n)
	}
	if ev.Kind != "turn_started" && ev.Kind != "turn_ended" {
		return ev, nil
	}
	if ev.SessionID == "" || ev.TurnID == "" {
		return ev, permanentError{fmt.Errorf("entry %s: %s without session_id or turn_id", id, ev.Kind)}
	}
	// A turn_number that is not a positive number counts as absent: the
	// journal numbers the turn itself.
	if n, err := strconv.Atoi(str("turn_number")); err == nil && n >= 1 {
		ev.TurnNumber = n
	}
	ev.At = ev.Added
	for _, k := range []string{"ended_at", "started_at"} {
		if t, err := time.Parse(time.RFC3339Nano, str(k)); err == nil {
			ev.At = t
			break
		}
	}
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	return ev, nil
}

// SessionCwds finds a session's working directory in chat's sessions.
type SessionCwds interface {
	SessionCwd(ctx context.Context, id string) (string, error)
}

// Consumer follows the turn stream with the consumer group "shadow" and
// journals each turn: XREADGROUP, XACK once the commit is made and
// recorded, XAUTOCLAIM for entries a dead or failing consumer left
// pending. shadow_turns makes it idempotent: an entry handled twice
// commits once. A consumer that was down reads on from where the group
// stopped.
type Consumer struct {
	rdb      *redis.Client
	stream   string
	name     string
	journal  *Journal
	turns    *Turns
	sessions SessionCwds
	log      *slog.Logger
	late     time.Duration
	minIdle  time.Duration
	block    time.Duration
	now      func() time.Time
	verify   func(values map[string]any) bool

	mu       sync.Mutex
	attempts map[string]int
}

// ConsumerOptions configure a Consumer; zero values take the defaults.
type ConsumerOptions struct {
	// Name is this consumer's name in the group (stable across restarts
	// of one instance); "shadow" when empty.
	Name    string
	Late    time.Duration
	MinIdle time.Duration
	Block   time.Duration
	Now     func() time.Time
	// Verify, when set, is asked about every entry first: one it refuses
	// (not signed by chat, libs/turnsig) is acknowledged and skipped, so
	// that writing to Redis cannot make shadow journal a directory. Nil
	// accepts every entry (the journal's own tests).
	Verify func(values map[string]any) bool
}

// NewConsumer returns a consumer of stream. sessions may be nil.
func NewConsumer(rdb *redis.Client, stream string, j *Journal, turns *Turns, sessions SessionCwds,
	log *slog.Logger, opts ConsumerOptions,
) *Consumer {
	c := &Consumer{
		rdb: rdb, stream: stream, name: opts.Name, journal: j, turns: turns, sessions: sessions, log: log,
		late: opts.Late, minIdle: opts.MinIdle, block: opts.Block, now: opts.Now, verify: opts.Verify, attempts: map[string]int{},
	}
	if c.name == "" {
		c.name = "shadow"
	}
	if c.late <= 0 {
		c.late = DefaultLate
	}
	if c.minIdle <= 0 {
		c.minIdle = DefaultMinIdle
	}
	if c.block <= 0 {
		c.block = DefaultBlock
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// EnsureGroup creates the consumer group when it does not exist yet,
// starting FirstBacklog before now: the turns of the hour before shadow's
// first start are journaled too, older ones are not (a first start on a
// long stream would otherwise snapshot its projects for every old turn).
// Once the group exists, a consumer that was down reads on from where the
// group stopped, however long ago.
func (c *Consumer) EnsureGroup(ctx context.Context) error {
	start := fmt.Sprintf("%d-0", c.now().Add(-FirstBacklog).UnixMilli())
	err := c.rdb.XGroupCreateMkStream(ctx, c.stream, Group, start).Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("create consumer group %s on %s: %w", Group, c.stream, err)
	}
	return nil
}

// Run follows the stream until ctx ends. Redis failures are logged and
// retried; it answers nil once ctx is done.
func (c *Consumer) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		err := c.run(ctx)
		if ctx.Err() != nil {
			return nil
		}
		c.log.WarnContext(ctx, "turn stream consumer failed, retrying", "stream", c.stream, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	return nil
}

func (c *Consumer) run(ctx context.Context) error {
	if err := c.EnsureGroup(ctx); err != nil {
		return err
	}
	if err := c.drainOwn(ctx); err != nil {
		return err
	}
	lastClaim := time.Time{}
	for ctx.Err() == nil {
		if time.Since(lastClaim) >= c.minIdle/2 {
			if err := c.Claim(ctx); err != nil {
				return err
			}
			lastClaim = time.Now()
		}
		streams, err := c.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: Group, Consumer: c.name, Streams: []string{c.stream, ">"}, Count: batchSize, Block: c.block,
		}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read turn stream: %w", err)
		}
		for _, s := range streams {
			c.handleAll(ctx, s.Messages)
		}
	}
	return nil
}

// drainOwn handles the entries this consumer read but did not acknowledge
// before it stopped.
func (c *Consumer) drainOwn(ctx context.Context) error {
	after := "0"
	for ctx.Err() == nil {
		streams, err := c.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: Group, Consumer: c.name, Streams: []string{c.stream, after}, Count: batchSize,
		}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("read own pending entries: %w", err)
		}
		if len(streams) == 0 || len(streams[0].Messages) == 0 {
			return nil
		}
		msgs := streams[0].Messages
		c.handleAll(ctx, msgs)
		after = msgs[len(msgs)-1].ID
	}
	return nil
}

// Claim takes over and handles the entries pending longer than the
// minimum idle time, whoever read them.
func (c *Consumer) Claim(ctx context.Context) error {
	start := "0-0"
	for ctx.Err() == nil {
		msgs, next, err := c.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: c.stream, Group: Group, Consumer: c.name, MinIdle: c.minIdle, Start: start, Count: batchSize,
		}).Result()
		if err != nil {
			return fmt.Errorf("claim idle entries: %w", err)
		}
		c.handleAll(ctx, msgs)
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
	return nil
}

func (c *Consumer) handleAll(ctx context.Context, msgs []redis.XMessage) {
	for _, m := range msgs {
		if ctx.Err() != nil {
			return
		}
		c.handleOne(ctx, m)
	}
}

// handleOne journals one entry and acknowledges it, unless the failure may
// pass (then the entry stays pending, to be claimed again).
func (c *Consumer) handleOne(ctx context.Context, m redis.XMessage) {
	var ev Event
	var err error
	if c.verify != nil && !c.verify(m.Values) {
		err = permanentError{fmt.Errorf("entry %s is not signed by chat: ignored", m.ID)}
	} else if ev, err = ParseEvent(m.ID, m.Values); err == nil {
		err = c.Handle(ctx, ev)
	}
	log := c.log.With("entry", m.ID, "event", ev.Kind, "session_id", ev.SessionID, "turn_id", ev.TurnID)
	if err != nil && ctx.Err() != nil {
		return // stopping: the entry stays pending and is handled after the restart
	}
	if err != nil && !permanent(err) {
		c.mu.Lock()
		c.attempts[m.ID]++
		n := c.attempts[m.ID]
		c.mu.Unlock()
		if n < MaxAttempts {
			log.WarnContext(ctx, "journal turn failed, will retry", "attempt", n, "err", err)
			return
		}
		log.ErrorContext(ctx, "journal turn failed, giving up", "attempts", n, "err", err)
	} else if err != nil {
		log.WarnContext(ctx, "turn event skipped", "err", err)
	}
	c.mu.Lock()
	delete(c.attempts, m.ID)
	c.mu.Unlock()
	if err := c.rdb.XAck(ctx, c.stream, Group, m.ID).Err(); err != nil {
		log.WarnContext(ctx, "acknowledge turn event", "err", err)
	}
}

// permanentError marks a failure that retrying cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(err error) bool {
	var p permanentError
	return errors.As(err, &p) || errors.Is(err, ErrNoProject)
}

// Handle journals one event: a baseline at turn_started, the turn's commit
// at turn_ended. An event already handled (by turn id) does nothing.
func (c *Consumer) Handle(ctx context.Context, ev Event) error {
	switch ev.Kind {
	case "turn_started":
		return c.started(ctx, ev)
	case "turn_ended":
		return c.ended(ctx, ev)
	default:
		return nil
	}
}

func (c *Consumer) started(ctx context.Context, ev Event) error {
	row, ok, err := c.turns.Get(ctx, ev.TurnID)
	if err != nil || (ok && (row.Started || row.Ended)) {
		return err
	}
	t, err := c.turn(ctx, ev, row, ok)
	if err != nil {
		return err
	}
	fresh := c.now().Sub(ev.Added) <= c.late
	res, err := c.journal.TurnStarted(ctx, t, fresh)
	if err != nil {
		return err
	}
	done, err := c.journaled(t, res)
	if err != nil {
		return err
	}
	done.BaseCommit = res.Commit
	return c.turns.MarkStarted(ctx, done, c.now())
}

func (c *Consumer) ended(ctx context.Context, ev Event) error {
	row, ok, err := c.turns.Get(ctx, ev.TurnID)
	if err != nil || (ok && row.Ended) {
		return err
	}
	t, err := c.turn(ctx, ev, row, ok)
	if err != nil {
		return err
	}
	note := ""
	if !ok {
		note = "The start of this turn was not journaled: this commit holds every change since the branch's last commit."
	}
	res, err := c.journal.TurnEnded(ctx, t, note)
	if err != nil {
		return err
	}
	done, err := c.journaled(t, res)
	if err != nil {
		return err
	}
	done.EndCommit, done.ChangedFiles = res.Commit, len(res.Changes)
	return c.turns.MarkEnded(ctx, done, c.now())
}

// turn checks an event's session id and finds its turn's working directory
// and number.
func (c *Consumer) turn(ctx context.Context, ev Event, row TurnRow, ok bool) (Turn, error) {
	if !ValidSession(ev.SessionID) {
		return Turn{}, permanentError{fmt.Errorf("session id %q cannot name a branch", ev.SessionID)}
	}
	cwd, err := c.cwd(ctx, ev, row, ok)
	if err != nil {
		return Turn{}, err
	}
	n, err := c.number(ctx, ev, row, ok)
	if err != nil {
		return Turn{}, err
	}
	return Turn{Session: ev.SessionID, ID: ev.TurnID, Number: n, Prompt: ev.Prompt, Cwd: cwd, At: ev.At}, nil
}

// journaled is the table row of turn t once the journal recorded it (res),
// with its project's path.
func (c *Consumer) journaled(t Turn, res Result) (TurnRow, error) {
	m, err := c.journal.store.Meta(res.Project)
	if err != nil {
		return TurnRow{}, err
	}
	return TurnRow{TurnID: t.ID, SessionID: t.Session, Project: res.Project, Cwd: m.Path, TurnNumber: t.Number}, nil
}

// cwd finds the turn's working directory: the event's, else the one
// recorded at its start, else its session's in chat's table.
func (c *Consumer) cwd(ctx context.Context, ev Event, row TurnRow, ok bool) (string, error) {
	switch {
	case ev.Cwd != "":
		return ev.Cwd, nil
	case ok && row.Cwd != "":
		return row.Cwd, nil
	case c.sessions != nil:
		cwd, err := c.sessions.SessionCwd(ctx, ev.SessionID)
		if err != nil {
			return "", err
		}
		if cwd != "" {
			return cwd, nil
		}
	}
	return "", permanentError{fmt.Errorf("no working directory known for session %s", ev.SessionID)}
}

func (c *Consumer) number(ctx context.Context, ev Event, row TurnRow, ok bool) (int, error) {
	switch {
	case ev.TurnNumber > 0:
		return ev.TurnNumber, nil
	case ok && row.TurnNumber > 0:
		return row.TurnNumber, nil
	}
	return c.turns.NextNumber(ctx, ev.SessionID)
}
