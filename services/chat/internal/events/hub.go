// Package events serves the events socket, GET /api/events: the sessions
// that are not archived and the pending permission requests of every
// session, on every chat instance, for a session list and an inbox,
// without a /chat socket per session.
//
// One Hub per instance keeps the sockets. It is woken by the Wakes of
// internal/room (its own instance's directly, the others' through the
// Redis channel <prefix>chat:events) and reads the woken sessions' state
// anew (PostgreSQL, and the live state of the instance that owns each),
// then sends every socket the same encoded frames. A Wake is only a
// wake-up: a socket's first frame is a snapshot of the whole state; the Hub
// keeps what it last sent (its view) and checks it against a fresh
// snapshot every CheckEvery, and at once when its Redis subscription comes
// back after a failure or a socket's queue overflows: when they differ,
// every socket gets the fresh snapshot. A lost Wake leaves a client wrong
// for at most CheckEvery.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/room"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// Defaults.
const (
	// DefaultCheckEvery is Config.CheckEvery's default.
	DefaultCheckEvery = 15 * time.Second
	// maxWakes is how many Wakes wait for the Hub; past it they are
	// dropped and the next check comes at once.
	maxWakes = 4096
	// readTimeout bounds the reads of one batch of Wakes or a snapshot.
	readTimeout = 10 * time.Second
)

// Live is the live state of sessions (room.Manager).
type Live interface {
	LiveStates(ctx context.Context, ids []string) (map[string]room.Live, error)
	SetWakeListener(fn func(room.Wake))
	Instance() string
	EventsChannel() string
	// OpenWake verifies and decodes a Wake another instance published.
	OpenWake(payload string) (room.Wake, bool)
}

// Config is what a Hub needs.
type Config struct {
	Store *store.Store
	Live  Live
	// Redis carries the other instances' Wakes (nil: this instance's only).
	Redis *redis.Client
	// CheckEvery is how often the Hub compares what it sent with a fresh
	// snapshot while sockets are connected; 0 means DefaultCheckEvery.
	CheckEvery time.Duration
	// Heartbeat is how long a socket may go without a frame before it is
	// sent a heartbeat; 0 means DefaultHeartbeat.
	Heartbeat time.Duration
	// MaxSockets bounds the events sockets of this instance; 0 means
	// DefaultMaxSockets.
	MaxSockets int
	Log        *slog.Logger
}

// Hub keeps this instance's events sockets up to date.
type Hub struct {
	cfg   Config
	log   *slog.Logger
	wakes chan room.Wake
	joins chan *conn
	leave chan *conn
	check chan struct{} // a check is due now (capacity 1)
	// stopped is closed when Run ends.
	stopped chan struct{}
	// count is the sockets registered or joining, for MaxSockets; closed
	// is set when Run ends, after which no socket is served (so wg.Add
	// never races wg.Wait).
	mu     sync.Mutex
	count  int
	closed bool
	wg     sync.WaitGroup

	// Owned by the run goroutine.
	conns map[*conn]bool
	view  view
}

// view is what the sockets were last told: a digest of each session they
// hold (the fields a list shows, not updated_at or last_line, which every
// message changes) and the pending requests.
type view struct {
	sessions map[string]string
	pending  map[string]string // request id to session id
}

// NewHub returns a Hub; Run starts it.
func NewHub(cfg Config) *Hub {
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = DefaultCheckEvery
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.MaxSockets <= 0 {
		cfg.MaxSockets = DefaultMaxSockets
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	h := &Hub{
		cfg: cfg, log: cfg.Log, wakes: make(chan room.Wake, maxWakes), joins: make(chan *conn),
		leave: make(chan *conn), check: make(chan struct{}, 1), stopped: make(chan struct{}), conns: map[*conn]bool{},
	}
	cfg.Live.SetWakeListener(h.wake)
	return h
}

// wake queues w without blocking; a full queue asks for a check instead.
func (h *Hub) wake(w room.Wake) {
	select {
	case h.wakes <- w:
	default:
		h.checkNow()
	}
}

func (h *Hub) checkNow() {
	select {
	case h.check <- struct{}{}:
	default:
	}
}

// Run serves until ctx ends, then closes every socket (1001) and returns
// once their goroutines have.
func (h *Hub) Run(ctx context.Context) {
	if ch := h.cfg.Live.EventsChannel(); h.cfg.Redis != nil && ch != "" {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.subscribe(ctx, ch)
		}()
	}
	t := time.NewTicker(h.cfg.CheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			h.mu.Lock()
			h.closed = true
			h.mu.Unlock()
			close(h.stopped)
			for c := range h.conns {
				c.close(closeGoingAway)
			}
			h.conns = nil
			h.wg.Wait()
			return
		case c := <-h.joins:
			// The sockets joining together share one snapshot.
			joining := []*conn{c}
			for more := true; more && len(joining) < 256; {
				select {
				case c := <-h.joins:
					joining = append(joining, c)
				default:
					more = false
				}
			}
			h.join(ctx, joining)
		case c := <-h.leave:
			delete(h.conns, c)
		case w := <-h.wakes:
			batch := []room.Wake{w}
			for len(batch) < 256 {
				select {
				case w := <-h.wakes:
					batch = append(batch, w)
					continue
				default:
				}
				break
			}
			h.apply(ctx, batch)
		case <-h.check:
			h.recheck(ctx)
		case <-t.C:
			h.recheck(ctx)
		}
	}
}

// subscribe feeds the other instances' Wakes to the Hub; every
// (re)subscription, after the first, asks for a check: Wakes may have been
// lost meanwhile.
func (h *Hub) subscribe(ctx context.Context, channel string) {
	ps := h.cfg.Redis.Subscribe(ctx, channel)
	defer ps.Close()
	first := true
	ch := ps.ChannelWithSubscriptions()
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			switch v := msg.(type) {
			case *redis.Subscription:
				if v.Kind == "subscribe" {
					if !first {
						h.checkNow()
					}
					first = false
				}
			case *redis.Message:
				if w, ok := h.cfg.Live.OpenWake(v.Payload); ok {
					h.wake(w)
				}
			}
		}
	}
}

// join sends the joining sockets a fresh snapshot and registers them;
// when the snapshot shows that the other sockets' state is stale, they get
// it too.
func (h *Hub) join(ctx context.Context, joining []*conn) {
	snap, err := h.snapshot(ctx)
	if err != nil {
		h.log.ErrorContext(ctx, "events snapshot", "err", err)
		for _, c := range joining {
			c.send(errorFrame("could not read the sessions: try again"))
			c.close(closeTryAgain)
		}
		return
	}
	f := encode(snap.frame)
	if !snap.view.equal(h.view) {
		for o := range h.conns {
			o.send(f)
		}
	}
	h.view = snap.view
	for _, c := range joining {
		c.send(f)
		h.conns[c] = true
	}
}

// recheck compares the view with a fresh snapshot; on a difference every
// socket gets the snapshot.
func (h *Hub) recheck(ctx context.Context) {
	if len(h.conns) == 0 {
		h.view = view{}
		return
	}
	snap, err := h.snapshot(ctx)
	if err != nil {
		h.log.ErrorContext(ctx, "events snapshot", "err", err)
		return
	}
	if snap.view.equal(h.view) {
		return
	}
	h.log.InfoContext(ctx, "events: the sockets' state was stale; sending a snapshot", "sockets", len(h.conns))
	h.view = snap.view
	h.broadcast(encode(snap.frame))
}

func (h *Hub) broadcast(f []byte) {
	for c := range h.conns {
		c.send(f)
	}
}

// apply turns a batch of Wakes into frames: the permission frames as they
// come, then each woken session's summary, read anew.
func (h *Hub) apply(ctx context.Context, batch []room.Wake) {
	if len(h.conns) == 0 {
		return // a joining socket reads everything anew
	}
	var dirty []string
	deleted := map[string]bool{}
	for _, w := range batch {
		if w.SessionID == "" {
			continue
		}
		switch w.Kind {
		case room.WakePermissionRequest:
			if w.Request == nil {
				continue
			}
			h.broadcast(encode(protocol.PermissionRequestEvent{
				Type: protocol.EventPermissionRequest, PendingPermission: pending(w.SessionID, *w.Request),
			}))
			h.view.addPending(w.Request.RequestID, w.SessionID)
		case room.WakePermissionResolved:
			if w.Resolved == nil {
				continue
			}
			r := w.Resolved
			h.broadcast(encode(protocol.PermissionResolvedEvent{
				Type: protocol.EventPermissionResolved, SessionID: w.SessionID, RequestID: r.RequestID,
				Behavior: r.Behavior, OK: r.OK, Reason: r.Reason, AnsweredBy: r.AnsweredBy,
			}))
			delete(h.view.pending, r.RequestID)
		case room.WakeDeleted:
			deleted[w.SessionID] = true
		}
		if !slices.Contains(dirty, w.SessionID) {
			dirty = append(dirty, w.SessionID)
		}
	}
	if len(dirty) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	sums, err := h.cfg.Store.Summaries(cctx, dirty)
	if err != nil {
		h.log.ErrorContext(ctx, "events: read sessions", "err", err)
		h.checkNow()
		return
	}
	live, err := h.cfg.Live.LiveStates(cctx, dirty)
	if err != nil {
		h.log.ErrorContext(ctx, "events: read live states", "err", err)
		h.checkNow()
	}
	byID := make(map[string]store.Summary, len(sums))
	for _, s := range sums {
		byID[s.ID] = s
	}
	for _, id := range dirty {
		s, ok := byID[id]
		if !ok {
			if deleted[id] || h.view.sessions[id] != "" {
				h.broadcast(encode(protocol.SessionDeletedEvent{Type: protocol.EventSessionDeleted, SessionID: id}))
			}
			delete(h.view.sessions, id)
			for rid, sid := range h.view.pending {
				if sid == id {
					delete(h.view.pending, rid)
				}
			}
			continue
		}
		sum := summary(s, live[id])
		h.broadcast(encode(protocol.SessionEvent{Type: protocol.EventSession, Session: sum}))
		if s.Archived {
			delete(h.view.sessions, id)
		} else {
			if h.view.sessions == nil {
				h.view.sessions = map[string]string{}
			}
			h.view.sessions[id] = digest(sum)
		}
	}
}

// snapshotResult is a snapshot frame and its view.
type snapshotResult struct {
	frame protocol.SnapshotEvent
	view  view
}

// snapshot reads the whole state: the recent sessions, their live states
// and pending requests.
func (h *Hub) snapshot(ctx context.Context) (snapshotResult, error) {
	cctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	sums, err := h.cfg.Store.RecentSummaries(cctx, protocol.MaxSnapshotSessions)
	if err != nil {
		return snapshotResult{}, err
	}
	ids := make([]string, len(sums))
	for i, s := range sums {
		ids[i] = s.ID
	}
	live, err := h.cfg.Live.LiveStates(cctx, ids)
	if err != nil {
		return snapshotResult{}, err
	}
	res := snapshotResult{
		frame: protocol.SnapshotEvent{Type: protocol.EventSnapshot, Sessions: make([]protocol.SessionSummary, 0, len(sums)), Pending: []protocol.PendingPermission{}},
		view:  view{sessions: make(map[string]string, len(sums)), pending: map[string]string{}},
	}
	for _, s := range sums {
		l := live[s.ID]
		sum := summary(s, l)
		res.frame.Sessions = append(res.frame.Sessions, sum)
		res.view.sessions[s.ID] = digest(sum)
		for _, p := range l.Pending {
			res.frame.Pending = append(res.frame.Pending, pending(s.ID, p))
			res.view.pending[p.RequestID] = s.ID
		}
	}
	return res, nil
}

func summary(s store.Summary, l room.Live) protocol.SessionSummary {
	out := protocol.SessionSummary{
		Session: protocol.Session{
			SessionID: s.ID, Title: s.Title, Cwd: s.Cwd, Provider: s.Provider, ProviderLocked: s.ProviderLocked,
			PermissionMode: s.PermissionMode, Model: s.Model, AgentRunning: l.Running, IsCompacting: l.Compacting,
			CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(), Archived: s.Archived,
			CostUSD: s.CostUSD, Turns: s.Turns, LastLine: s.LastLine,
		},
		PendingPermissions: len(l.Pending), Queued: s.Queued, IsFavorite: s.IsFavorite,
	}
	if s.ParentID != "" {
		p := s.ParentID
		out.ParentID = &p
	}
	return out
}

func pending(sessionID string, p agent.PermissionRequest) protocol.PendingPermission {
	out := protocol.PendingPermission{SessionID: sessionID, RequestID: p.RequestID, ToolName: p.ToolName, Input: p.Input, Suggestions: p.Suggestions}
	if out.Input == nil {
		out.Input = json.RawMessage("{}")
	}
	if out.Suggestions == nil {
		out.Suggestions = []json.RawMessage{}
	}
	return out
}

// digest is what a session list shows of s, for comparing views.
func digest(s protocol.SessionSummary) string {
	parent := ""
	if s.ParentID != nil {
		parent = *s.ParentID
	}
	b, _ := json.Marshal([]any{
		s.Title, s.Cwd, s.Provider, s.ProviderLocked, s.PermissionMode, s.Model, s.AgentRunning, s.IsCompacting,
		s.Archived, parent, strconv.FormatFloat(s.CostUSD, 'g', -1, 64), s.Turns,
		s.PendingPermissions, s.Queued, s.IsFavorite,
	})
	return string(b)
}

func (v view) equal(o view) bool {
	return mapsEqual(v.sessions, o.sessions) && mapsEqual(v.pending, o.pending)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		if y, ok := b[k]; !ok || x != y {
			return false
		}
	}
	return true
}

func (v *view) addPending(requestID, sessionID string) {
	if v.pending == nil {
		v.pending = map[string]string{}
	}
	v.pending[requestID] = sessionID
}

// encode encodes a frame once, for every socket.
func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(protocol.ErrorEvent{Type: protocol.EventError, Message: "encode frame: " + err.Error()})
	}
	return b
}

func errorFrame(msg string) []byte {
	return encode(protocol.ErrorEvent{Type: protocol.EventError, Message: msg})
}

// errFull is returned when MaxSockets sockets are open.
var errFull = errors.New("too many events sockets")

// reserve counts a new socket, or fails at MaxSockets.
func (h *Hub) reserve() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count >= h.cfg.MaxSockets {
		return errFull
	}
	h.count++
	return nil
}

func (h *Hub) release() {
	h.mu.Lock()
	h.count--
	h.mu.Unlock()
}
