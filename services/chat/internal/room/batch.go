package room

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// The per-message path batches its two round trips. Appends to the log
// (every session of this instance) wait in the appender's queue while a
// batch is being stored, then go in the next batch: one transaction, one
// round trip and one commit for all of them (group commit). Frames for the
// other instances wait in the publisher's queue while a pipeline runs, then
// go out in the next pipeline, in order. Under light load a batch holds one
// item and costs what a lone call did; under load the cost per item falls.

// Batch limits and timeouts.
const (
	maxAppendBatch  = 256
	maxPublishBatch = 512
	appendTimeout   = 10 * time.Second
	// maxPublishQueue bounds the frames waiting for Redis: past it the
	// oldest are dropped (and counted in the log). Logged frames are not
	// lost for the other instances: they fill gaps from the log.
	maxPublishQueue = 100000
)

// appendReq is one message waiting to be appended.
type appendReq struct {
	item store.Append
	done chan appendRes
}

type appendRes struct {
	msg store.Message
	err error
	// unsure: err is a failure to reach PostgreSQL, and a try may have
	// been committed all the same (its answer lost with the connection).
	unsure bool
}

// appender group-commits log appends, up to maxAppendsInFlight batches at
// once, each on a connection of its own. A session is in one batch at a
// time: its messages wait while one of its messages is being stored, so
// they get their lines in the order they were queued (two batches of one
// session in flight could take its row in either order). So a batch
// waits for the one in flight only when they share a session, and a
// session whose row is held (a slow statement, a lock) holds up its own
// messages, not every session's. Its zero value is not ready: see
// newAppender.
type appender struct {
	st *store.Store
	bg *bgGroup
	mu sync.Mutex
	q  []*appendReq
	// running counts the goroutines storing batches; busy, the sessions
	// with messages in a batch being stored.
	running int
	busy    map[string]bool
	// durable: a batch that waits for the disk is being stored.
	durable bool
	// down and up are told when a batch finds PostgreSQL unreachable,
	// and when one goes through (storage.go); nil for none.
	down func(error)
	up   func()
}

// maxAppendsInFlight bounds the batches stored at once.
const maxAppendsInFlight = 2

// AppendConns is how many connections the appender uses at most: the size
// of the store's append pool (store.AppendPool).
const AppendConns = maxAppendsInFlight

func newAppender(st *store.Store, bg *bgGroup) *appender {
	return &appender{st: st, bg: bg, busy: map[string]bool{}}
}

// append stores payload as the next line of session id's log and returns
// it, once committed. It takes no context: a caller that gave up could not
// tell whether the message was stored; the batch has its own timeout.
func (a *appender) append(id, kind string, payload json.RawMessage) (store.Message, error) {
	return a.appendItem(store.Append{SessionID: id, Kind: kind, Payload: payload})
}

// appendItem is append for an Append (one that may lock the provider).
func (a *appender) appendItem(item store.Append) (store.Message, error) {
	res := a.appendAll([]store.Append{item})[0]
	return res.msg, res.err
}

// appendPayloads is appendAll for messages of one kind, after line after
// (store.Append.After).
func (a *appender) appendPayloads(id, kind string, after int64, payloads []json.RawMessage) []appendRes {
	items := make([]store.Append, len(payloads))
	for i, p := range payloads {
		items[i] = store.Append{SessionID: id, Kind: kind, Payload: p, After: after}
	}
	return a.appendAll(items)
}

// appendAll is append for several messages of one session, queued
// together (so they share a commit when they fit in one batch) and stored
// in order. Each gets a key (store.Append.Key), so that a batch whose
// commit may or may not have happened can be sent again.
func (a *appender) appendAll(items []store.Append) []appendRes {
	reqs := make([]*appendReq, len(items))
	for i, it := range items {
		if it.Key == "" {
			it.Key = store.NewAppendKey()
		}
		reqs[i] = &appendReq{item: it, done: make(chan appendRes, 1)}
	}
	a.queue(reqs)
	out := make([]appendRes, len(reqs))
	for i, r := range reqs {
		out[i] = <-r.done
	}
	return out
}

// queue adds reqs to the queue, starting a goroutine to store it if
// fewer than maxAppendsInFlight run.
func (a *appender) queue(reqs []*appendReq) {
	a.mu.Lock()
	a.q = append(a.q, reqs...)
	start := a.running < maxAppendsInFlight
	if start {
		a.running++
	}
	a.mu.Unlock()
	if start {
		a.bg.Go(a.drain)
	}
}

// drain stores batches until none can be taken (the queue is empty, or
// what waits belongs to sessions being stored by another goroutine, which
// takes it after its batch).
func (a *appender) drain() {
	for {
		a.mu.Lock()
		batch := a.takeLocked()
		if len(batch) == 0 {
			a.running--
			if len(a.q) == 0 && a.running == 0 {
				a.q = nil
			}
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		a.store(batch)
		a.mu.Lock()
		for _, r := range batch {
			delete(a.busy, r.item.SessionID)
		}
		if !batch[0].item.Lazy() {
			a.durable = false
		}
		a.mu.Unlock()
	}
}

// takeLocked takes the next batch from the queue: up to maxAppendBatch
// messages, in queue order, of sessions not being stored (a session left
// waiting keeps its later messages waiting too), and marks their sessions
// busy. A batch holds either agent messages only, which the store commits
// without waiting for the disk, or only messages that wait for it (see
// store.AppendMessages): the kind of the first one it takes. One batch
// that waits for the disk is stored at a time (those waiting meanwhile
// share the next flush), so the other goroutine is always free for agent
// messages: a user's prompt whose flush stalls does not hold up the other
// sessions' streams. a.mu must be held.
func (a *appender) takeLocked() []*appendReq {
	var batch []*appendReq
	rest := a.q[:0]
	var held map[string]bool // sessions whose messages wait this time
	for _, r := range a.q {
		id := r.item.SessionID
		if len(batch) == maxAppendBatch || a.busy[id] || held[id] ||
			(len(batch) > 0 && batch[0].item.Lazy() != r.item.Lazy()) ||
			(len(batch) == 0 && a.durable && !r.item.Lazy()) {
			if held == nil {
				held = map[string]bool{}
			}
			held[id] = true
			rest = append(rest, r)
			continue
		}
		batch = append(batch, r)
	}
	clear(a.q[len(rest):])
	a.q = rest
	for _, r := range batch {
		a.busy[r.item.SessionID] = true
	}
	if len(batch) > 0 && !batch[0].item.Lazy() {
		a.durable = true
	}
	return batch
}

// store appends a batch in one transaction; if the batch fails as a whole
// and surely stored nothing, each message is tried alone, so that one bad
// message fails alone.
//
// PostgreSQL unreachable for a moment (restarting, crashed, failing over,
// a connection cut: store.Unavailable), the batch is tried again, on a
// fresh connection (store.Store resets its pool), until it goes through or
// appendTimeout has passed, rather than leave messages out of the log.
// That is safe even when the failure does not say whether the commit
// happened: each message has its key, and one already stored is returned
// as it is, not stored again.
func (a *appender) store(batch []*appendReq) {
	// Tries start within appendTimeout; the last one has minAppendTry
	// more to finish.
	retryUntil := time.Now().Add(appendTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), appendTimeout+minAppendTry)
	defer cancel()
	items := make([]store.Append, len(batch))
	for i, r := range batch {
		items[i] = r.item
	}
	msgs, errs, err := a.st.AppendMessages(ctx, items)
	unsure := false
	for delay := appendRetryDelay; err != nil && store.Unavailable(err); delay = min(2*delay, time.Second) {
		unsure = unsure || !store.NotSent(err)
		if a.down != nil {
			a.down(err)
		}
		if time.Until(retryUntil) < delay {
			break
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
			msgs, errs, err = a.st.AppendMessages(ctx, items)
			continue
		}
		break
	}
	if err == nil && a.up != nil {
		a.up()
	}
	// A batch refused by the server stored nothing (store.NotSent): each
	// message is tried alone, so that one bad message fails alone.
	if err != nil && len(batch) > 1 && !store.Unavailable(err) && store.NotSent(err) {
		for _, r := range batch {
			r.done <- a.storeOne(ctx, r.item)
		}
		return
	}
	for i, r := range batch {
		switch {
		case err != nil:
			r.done <- appendRes{err: err, unsure: unsure}
		default:
			r.done <- appendRes{msg: msgs[i], err: errs[i]}
		}
	}
}

// storeOne appends one message alone, as a batch of one.
func (a *appender) storeOne(ctx context.Context, item store.Append) appendRes {
	msgs, errs, err := a.st.AppendMessages(ctx, []store.Append{item})
	if err != nil {
		return appendRes{err: err}
	}
	return appendRes{msg: msgs[0], err: errs[0]}
}

// appendRetryDelay is the first wait before a batch is tried again after
// a transient failure; it doubles up to a second. minAppendTry is the time
// the last try, started before appendTimeout, has to finish (less would
// cut it short with its own statement timeout, a failure that is not the
// outage's).
var appendRetryDelay = 50 * time.Millisecond

const minAppendTry = time.Second

// pubItem is a message waiting to be published or, when do is set, a
// write to Redis that must keep its place among the frames (the perm
// hash's: a request is in the hash before its frame goes out, and out of
// it before its permission_resolved does).
type pubItem struct {
	channel string
	payload []byte
	do      func(ctx context.Context, pipe redis.Pipeliner)
}

// A pipeline that fails (Redis restarting, unreachable, a connection
// cut) is sent again, after publishRetryDelay, doubling up to a second,
// while the frames queued after it wait: publishing is at least once, in
// order. A pipeline that still fails after publishRetryFor (or once the
// Manager closes) is given up. Frames sent twice are harmless where it
// matters: logged frames are de-duplicated by line.
var (
	publishRetryDelay = 50 * time.Millisecond
	publishRetryFor   = 10 * time.Second
)

// publisher publishes to Redis in order, pipelining what queued up while
// the previous pipeline ran. Publish never waits for Redis.
type publisher struct {
	m   *Manager
	mu  sync.Mutex
	q   []pubItem
	run bool
}

// publish queues payload for channel.
func (p *publisher) publish(channel string, payload []byte) {
	p.queue(pubItem{channel: channel, payload: payload})
}

// queue queues it.
func (p *publisher) queue(it pubItem) {
	p.mu.Lock()
	if len(p.q) >= maxPublishQueue {
		// The older half of the frames go; the perm hash's writes stay
		// (a request dropped from it would never be replayed, one left
		// in it would be replayed for ever).
		half := len(p.q) / 2
		kept := p.q[:0]
		for i, it := range p.q {
			if i >= half || it.do != nil {
				kept = append(kept, it)
			}
		}
		p.m.log.Error("drop frames for the other instances: the Redis queue is full", "dropped", len(p.q)-len(kept))
		p.q = kept
	}
	p.q = append(p.q, it)
	start := !p.run
	p.run = true
	p.mu.Unlock()
	if start {
		p.m.bg.Go(p.drain)
	}
}

func (p *publisher) drain() {
	for {
		p.mu.Lock()
		n := min(len(p.q), maxPublishBatch)
		if n == 0 {
			p.run = false
			p.q = nil
			p.mu.Unlock()
			return
		}
		batch := p.q[:n:n]
		p.q = p.q[n:]
		p.mu.Unlock()
		p.send(batch)
	}
}

// send runs batch as one pipeline, again until it goes through (see
// publishRetryFor).
func (p *publisher) send(batch []pubItem) {
	var failed time.Time
	delay := publishRetryDelay
	for {
		err := p.exec(batch)
		var rerr redis.Error
		switch {
		case err == nil:
			if !failed.IsZero() {
				p.m.log.Info("published frames after a Redis failure", "frames", len(batch), "after_ms", time.Since(failed).Milliseconds())
			}
			return
		case errors.As(err, &rerr) && !strings.HasPrefix(rerr.Error(), "LOADING"):
			// Redis answered: every command ran, one was refused.
			p.m.log.Error("publish frames", "frames", len(batch), "err", err)
			return
		case failed.IsZero():
			failed = time.Now()
			p.m.log.Error("publish frames: sending them again", "frames", len(batch), "err", err)
		}
		if time.Since(failed) >= publishRetryFor || p.m.closing.Load() {
			p.m.log.Error("publish frames: given up", "frames", len(batch), "err", err)
			return
		}
		time.Sleep(delay)
		delay = min(2*delay, time.Second)
	}
}

func (p *publisher) exec(batch []pubItem) error {
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	_, err := p.m.cfg.Redis.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, it := range batch {
			if it.do != nil {
				it.do(ctx, pipe)
				continue
			}
			pipe.Publish(ctx, it.channel, it.payload)
		}
		return nil
	})
	return err
}
