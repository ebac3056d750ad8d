package room

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// The events sockets (internal/events) are told of every change of a
// session that a session list shows: a Wake goes to this instance's
// listener at once and, with several instances, to the others on the
// Redis channel <prefix>chat:events, through the publisher's queue (so a
// pending request is in the perm hash, and a state in chat:state, before
// the Wake that announces it). A Wake is only that, a wake-up: the
// listener reads the session's state anew; a lost one is repaired by the
// listener's periodic check.

// Kinds of Wake.
const (
	WakeSession            = "session"             // re-read the session
	WakeDeleted            = "deleted"             // the session is gone
	WakePermissionRequest  = "permission_request"  // Request is new
	WakePermissionResolved = "permission_resolved" // Resolved retired a request
)

// Wake tells the events sockets that a session changed.
type Wake struct {
	From      string                            `json:"from"` // the instance that sent it
	Seq       uint64                            `json:"seq"`  // its relay sequence number (replay check)
	At        int64                             `json:"at"`   // unix ms (freshness check)
	SessionID string                            `json:"session_id"`
	Kind      string                            `json:"kind"`
	Request   *agent.PermissionRequest          `json:"request,omitempty"`
	Resolved  *protocol.PermissionResolvedFrame `json:"resolved,omitempty"`
}

// SetWakeListener sets the function every Wake of this instance is given
// to; it must not block. Set it before serving.
func (m *Manager) SetWakeListener(fn func(Wake)) {
	m.mu.Lock()
	m.wakeFn = fn
	m.mu.Unlock()
}

// Instance is this instance's id (Wake.From).
func (m *Manager) Instance() string { return m.instance }

// EventsChannel is the Redis channel of the Wakes; "" without several
// instances.
func (m *Manager) EventsChannel() string {
	if !m.multi() {
		return ""
	}
	return m.cfg.Prefix + "chat:events"
}

// notify hands w to the listener here and publishes it to the others.
func (m *Manager) notify(w Wake) {
	w.From = m.instance
	m.mu.Lock()
	fn := m.wakeFn
	m.mu.Unlock()
	if fn != nil {
		fn(w)
	}
	if m.multi() {
		// Sealed like the relay: a Wake forged on Redis (a fake
		// permission_request for the inbox) reaches no socket.
		w.Seq, w.At = m.auth.next()
		ch := m.EventsChannel()
		m.pub.publish(ch, m.sealRelayed(ch, w))
	}
}

// OpenWake is the Wake that another instance published on EventsChannel,
// when payload verifies (sealed under the relay's key, fresh, not seen
// before) and comes from another instance; ok false otherwise (logged once
// per channel).
func (m *Manager) OpenWake(payload string) (w Wake, ok bool) {
	ch := m.EventsChannel()
	if ch == "" || !m.openRelayed("wake", ch, payload, &w, &w.From, &w.Seq, &w.At) {
		return Wake{}, false
	}
	return w, w.From != m.instance
}

// SessionChanged implements api.Runtime: the session's record changed
// (created, renamed, forked, a setting, a favorite).
func (m *Manager) SessionChanged(_ context.Context, id string) {
	m.notify(Wake{SessionID: id, Kind: WakeSession})
}

// SessionDeleted implements api.Runtime.
func (m *Manager) SessionDeleted(_ context.Context, id string) {
	m.notify(Wake{SessionID: id, Kind: WakeDeleted})
}

// Live is the live state of a session.
type Live struct {
	Running, Compacting bool
	// Pending are its pending permission requests, oldest first.
	Pending []agent.PermissionRequest
}

// LiveStates returns the live state of each session of ids that has any
// (the others run nothing): the rooms this instance owns answer for
// themselves, the others' state is read from Redis in one pipeline.
func (m *Manager) LiveStates(ctx context.Context, ids []string) (map[string]Live, error) {
	out := make(map[string]Live, len(ids))
	var remote []string
	for _, id := range ids {
		r := m.lookup(id)
		if r != nil && m.ownedHere(r) {
			r.mu.Lock()
			l := Live{Running: r.running, Compacting: r.compacting}
			for _, rid := range r.order {
				if p, ok := r.pending[rid]; ok {
					l.Pending = append(l.Pending, p)
				}
			}
			r.mu.Unlock()
			if l.Running || l.Compacting || len(l.Pending) > 0 {
				out[id] = l
			}
			continue
		}
		if m.multi() {
			remote = append(remote, id)
		}
	}
	if len(remote) == 0 {
		return out, nil
	}
	cctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	pipe := m.cfg.Redis.Pipeline()
	states := make([]*redis.StringCmd, len(remote))
	perms := make([]*redis.MapStringStringCmd, len(remote))
	for i, id := range remote {
		states[i] = pipe.Get(cctx, m.key("state", id))
		perms[i] = pipe.HGetAll(cctx, m.key("perm", id))
	}
	if _, err := pipe.Exec(cctx); err != nil && !errors.Is(err, redis.Nil) {
		return out, err
	}
	for i, id := range remote {
		var l Live
		if v, err := states[i].Result(); err == nil {
			l.Running, l.Compacting = parseState(v)
		}
		l.Pending, _ = m.decodePending(m.key("perm", id), perms[i].Val())
		if l.Running || l.Compacting || len(l.Pending) > 0 {
			out[id] = l
		}
	}
	return out, nil
}
