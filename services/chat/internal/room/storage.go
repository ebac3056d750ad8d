package room

import (
	"context"
	"time"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// PostgreSQL outages (docs/api.md, "When PostgreSQL fails"). A call to
// the store that finds PostgreSQL unreachable (store.Unavailable) is tried
// again, on a fresh connection, for up to storeRetryFor: appends (made
// safe to send twice by their keys, batch.go), prompts queued (by their
// queue id), reads. Meanwhile every socket of this instance is told, once,
// with a `storage` frame (available: false), and again when PostgreSQL
// answers (available: true): the first call that goes through, or the
// probe that runs while it is down, whichever comes first.

// storeRetryFor is how long a call is tried again while PostgreSQL cannot
// be reached; probeEvery, how often the probe pings it meanwhile.
var (
	storeRetryFor = appendTimeout
	probeEvery    = 250 * time.Millisecond
)

// Messages of the storage frames (and the prompt's error when it is
// given up).
const (
	storageDownText = "storage unavailable, retrying"
	storageUpText   = "storage available again"
)

// storageFailed notes that a call found PostgreSQL unreachable: the first
// time, every socket gets the storage frame and the probe starts.
func (m *Manager) storageFailed(err error) {
	m.storeMu.Lock()
	first := !m.storeDown
	if first {
		m.storeDown, m.storeDownAt = true, time.Now()
	}
	m.storeMu.Unlock()
	if !first {
		return
	}
	m.log.Warn("postgres unreachable: retrying", "err", err)
	m.cfg.Store.Reset()
	m.sendAll(NewFrame(0, protocol.StorageFrame{
		Type: protocol.FrameStorage, Available: false, Code: protocol.CodeStorageUnavailable, Message: storageDownText,
	}))
	m.bg.Go(m.probeStorage)
}

// storageOK notes that a call went through: if PostgreSQL was down, every
// socket is told it is back.
func (m *Manager) storageOK() {
	m.storeMu.Lock()
	was, at := m.storeDown, m.storeDownAt
	m.storeDown = false
	m.storeMu.Unlock()
	if !was {
		return
	}
	m.log.Info("postgres reachable again", "down_ms", time.Since(at).Milliseconds())
	m.sendAll(NewFrame(0, protocol.StorageFrame{Type: protocol.FrameStorage, Available: true, Message: storageUpText}))
}

// storageIsDown reports whether PostgreSQL was last found unreachable.
func (m *Manager) storageIsDown() bool {
	m.storeMu.Lock()
	defer m.storeMu.Unlock()
	return m.storeDown
}

// probeStorage pings PostgreSQL until it answers (then storageOK), the
// outage ends otherwise, or the Manager closes.
func (m *Manager) probeStorage() {
	for m.storageIsDown() && !m.closing.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := m.cfg.Store.Ping(ctx)
		cancel()
		if err == nil {
			m.storageOK()
			return
		}
		time.Sleep(probeEvery)
	}
}

// sendAll sends f to every socket attached on this instance (not to the
// other instances: each tells its own sockets).
func (m *Manager) sendAll(f Frame) {
	m.mu.Lock()
	rooms := make([]*Room, 0, len(m.rooms))
	for _, r := range m.rooms {
		rooms = append(rooms, r)
	}
	m.mu.Unlock()
	for _, r := range rooms {
		r.mu.Lock()
		sinks := r.sinkList()
		r.mu.Unlock()
		for _, s := range sinks {
			s.Send(f)
		}
	}
}

// retryStore runs fn until it succeeds, fails otherwise than with
// PostgreSQL unreachable (store.Unavailable), or storeRetryFor has passed
// (or ctx ends, or the Manager closes), and returns its last error. fn is
// called with a context that ends minAppendTry after that window (the
// time the last try has to finish). Only what is safe to
// run twice goes through here (a read, a write by a key of its own); with
// safe false, fn is tried again only when it surely changed nothing
// (store.NotSent).
func (m *Manager) retryStore(ctx context.Context, safe bool, fn func(context.Context) error) error {
	retryUntil := time.Now().Add(storeRetryFor)
	ctx, cancel := context.WithTimeout(ctx, storeRetryFor+minAppendTry)
	defer cancel()
	delay := appendRetryDelay
	for {
		err := fn(ctx)
		if err == nil {
			m.storageOK()
			return nil
		}
		if !store.Unavailable(err) {
			return err
		}
		m.storageFailed(err)
		if !safe && !store.NotSent(err) || m.closing.Load() || time.Until(retryUntil) < delay {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}

// storageError is the error frame of a prompt that could not be stored
// or queued: unsure when a try may have been committed.
func storageError(unsure bool) Frame {
	msg := "could not store the message: storage unavailable (retried for 10 s); it was not stored: send it again"
	if unsure {
		msg = "could not store the message: storage unavailable (retried for 10 s); it may have been stored: " +
			"if it is not in the conversation once storage is back, send it again"
	}
	return NewFrame(0, protocol.ErrorFrame{Type: protocol.FrameError, Code: protocol.CodeStorageUnavailable, Message: msg})
}
