package room

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// Several instances (see docs/api.md, "Several instances"): the instance
// that owns a session's agent process holds <prefix>chat:owner:<session>
// (SET NX, OwnerTTL, renewed every OwnerTTL/3, released when its room
// closes); it holds it as a lease: when it cannot renew the claim in time
// (Redis unreachable) it ends the process before the claim can expire and
// another instance take the session. Every room on every instance subscribes to
// <prefix>chat:frames:<session> (frames broadcast anywhere, and replies to
// one socket) and <prefix>chat:cmd:<session> (client commands forwarded to
// the owner). Pub/sub is only the wake-up: logged frames are de-duplicated
// by line and their gaps filled from the PostgreSQL log; pending permission
// requests are kept in the hash <prefix>chat:perm:<session>, and given on
// a (re)subscription to the sockets that missed their frame.

// redisTimeout bounds one Redis call of the ownership and relay protocol.
const redisTimeout = 5 * time.Second

// wireFrame is a frame on the frames channel, sealed (relayauth.go).
type wireFrame struct {
	From string          `json:"from"`
	Seq  uint64          `json:"seq"`
	At   int64           `json:"at"`           // unix ms
	To   string          `json:"to,omitempty"` // a socket id; "" for every socket
	Line int64           `json:"line,omitempty"`
	Data json.RawMessage `json:"data"`
	Req  string          `json:"req,omitempty"` // a permission_request's id
}

// wireCmd is a client command on the cmd channel, sealed (relayauth.go).
type wireCmd struct {
	From string  `json:"from"`
	Seq  uint64  `json:"seq"`
	At   int64   `json:"at"` // unix ms
	To   string  `json:"to"` // the sender's socket id
	Cmd  Command `json:"cmd"`
}

// permEntry is a pending request in the perm hash.
type permEntry struct {
	Seq int64                   `json:"seq"`
	Req agent.PermissionRequest `json:"req"`
}

var (
	renewScript   = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) else return 0 end`)
	releaseScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`)
	// claimScript takes the claim KEYS[1] for instance ARGV[1] (TTL ARGV[2]
	// ms) when nobody holds it, or renews it when this instance still does
	// (it gave the session up after failed renewals, for instance).
	claimScript = redis.NewScript(`if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return 1 end
if redis.call("GET", KEYS[1]) == ARGV[1] then redis.call("PEXPIRE", KEYS[1], ARGV[2]) return 1 end
return 0`)
	// releaseOwnerScript releases the claim KEYS[1] of instance ARGV[1]
	// and removes the live state KEYS[2] it kept.
	releaseOwnerScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then redis.call("DEL", KEYS[2]) return redis.call("DEL", KEYS[1]) else return 0 end`)
)

func newInstanceID() string { return rand.Text()[:12] }

func (m *Manager) multi() bool             { return m.cfg.Redis != nil && m.cfg.OwnerTTL > 0 }
func (m *Manager) key(p, id string) string { return m.cfg.Prefix + "chat:" + p + ":" + id }

// startCluster subscribes and starts the receive and renew loops.
func (m *Manager) startCluster() {
	ctx, cancel := context.WithCancel(context.Background())
	m.stopCluster = cancel
	m.ps = m.cfg.Redis.Subscribe(ctx)
	ch := m.ps.ChannelWithSubscriptions()
	m.heartbeatInstance(ctx)
	m.loops.Add(3)
	go func() {
		defer m.loops.Done()
		for msg := range ch {
			m.receive(msg)
		}
	}()
	go func() {
		defer m.loops.Done()
		t := time.NewTicker(m.cfg.OwnerTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				m.heartbeatInstance(ctx)
				m.tick(ctx)
			}
		}
	}()
	go func() {
		defer m.loops.Done()
		t := time.NewTicker(m.cfg.OwnerTTL)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				m.RecoverTurns(ctx) // recover.go
			}
		}
	}()
}

// closeCluster releases this instance's claims and ends the loops.
func (m *Manager) closeCluster(rooms map[string]*Room) {
	if !m.multi() {
		return
	}
	m.stopCluster()
	for _, r := range rooms {
		r.release()
	}
	_ = m.ps.Close()
	m.loops.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	_ = releaseScript.Run(ctx, m.cfg.Redis, []string{m.key("instance", m.instance)}, m.self.String()).Err()
}

// subscribe learns a new room's last line and subscribes to its channels.
// The last line is read first: the confirmation's fill (see receive) then
// reads only the lines committed in between, not the whole log.
func (m *Manager) subscribe(r *Room) {
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	if s, err := m.cfg.Store.Get(ctx, r.id); err == nil {
		r.mu.Lock()
		r.lastLine = max(r.lastLine, s.LastLine)
		r.mu.Unlock()
	}
	chans := []string{m.key("frames", r.id), m.key("cmd", r.id)}
	waits := make([]chan struct{}, len(chans))
	m.subMu.Lock()
	for i, c := range chans {
		waits[i] = make(chan struct{})
		m.subWait[c] = append(m.subWait[c], waits[i])
	}
	m.subMu.Unlock()
	if err := m.ps.Subscribe(ctx, chans...); err != nil {
		m.log.ErrorContext(ctx, "subscribe", "session_id", r.id, "err", err)
	}
	// Wait for Redis to confirm: a command relayed from here must not be
	// answered before this instance listens for the answer.
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			m.log.ErrorContext(ctx, "subscribe: no confirmation", "session_id", r.id)
		}
	}
}

// dropped is called when r left m.rooms: it releases r's claim and
// unsubscribes.
func (m *Manager) dropped(r *Room) {
	if !m.multi() {
		return
	}
	r.release()
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	m.mu.Lock()
	again := m.rooms[r.id] != nil
	m.mu.Unlock()
	if !again {
		_ = m.ps.Unsubscribe(ctx, m.key("frames", r.id), m.key("cmd", r.id))
	}
}

func (m *Manager) receive(msg any) {
	switch v := msg.(type) {
	case *redis.Subscription:
		if v.Kind == "subscribe" {
			m.subMu.Lock()
			for _, w := range m.subWait[v.Channel] {
				close(w)
			}
			delete(m.subWait, v.Channel)
			m.subMu.Unlock()
		}
		// (Re)subscribed: fill what may have been missed meanwhile.
		if v.Kind == "subscribe" && len(v.Channel) > len(m.key("frames", "")) && v.Channel[:len(m.key("frames", ""))] == m.key("frames", "") {
			if r := m.lookup(v.Channel[len(m.key("frames", "")):]); r != nil {
				r.fill(0)
				r.resyncPending()
			}
		}
	case *redis.Message:
		switch {
		case len(v.Channel) > len(m.key("frames", "")) && v.Channel[:len(m.key("frames", ""))] == m.key("frames", ""):
			r := m.lookup(v.Channel[len(m.key("frames", "")):])
			if r == nil {
				return
			}
			var w wireFrame
			if !m.openRelayed("frames", v.Channel, v.Payload, &w, &w.From, &w.Seq, &w.At) || w.From == m.instance {
				return
			}
			r.deliverRemote(w)
		case len(v.Channel) > len(m.key("cmd", "")) && v.Channel[:len(m.key("cmd", ""))] == m.key("cmd", ""):
			r := m.lookup(v.Channel[len(m.key("cmd", "")):])
			if r == nil {
				return
			}
			var w wireCmd
			if !m.openRelayed("cmd", v.Channel, v.Payload, &w, &w.From, &w.Seq, &w.At) {
				return
			}
			r.enqueue(func() { r.execForwarded(w) })
		}
	}
}

// openRelayed verifies a message of channel (of kind cmd or frames) and
// decodes it into v; from, seq and at point into v, for the replay check
// (this instance's own messages too: one played back to it is as stale as
// another's). A message that does not verify, does not decode, or was seen
// or is stale, is dropped (false).
func (m *Manager) openRelayed(kind, channel, payload string, v any, from *string, seq *uint64, at *int64) bool {
	body, ok := m.auth.open([]byte(payload), channel)
	if !ok {
		m.auth.dropped(channel, "bad signature")
		return false
	}
	if json.Unmarshal(body, v) != nil {
		m.auth.dropped(channel, "signed message does not decode")
		return false
	}
	if !m.auth.fresh(kind, *from, *seq, *at) {
		m.auth.dropped(channel, "stale or replayed")
		return false
	}
	return true
}

// sealRelayed is the message for channel that carries v, sealed.
func (m *Manager) sealRelayed(channel string, v any) []byte {
	b, _ := json.Marshal(v)
	return m.auth.seal(b, channel)
}

// execForwarded runs a command forwarded on the cmd channel when this
// instance owns the session, or claims it now: the owner that published
// it may have lost the claim since, and an instance that gave its claim up
// (renewals failing) while it still holds the key takes it back rather than
// leave the command to nobody. Every instance but the owner ignores it.
func (r *Room) execForwarded(w wireCmd) {
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	own, err := r.claim(ctx)
	cancel()
	if err != nil || !own {
		return
	}
	var sender Sink = remoteSink{r: r, to: w.To}
	if w.From == r.m.instance {
		// Claimed by the instance that forwarded it: its frames to
		// itself would be ignored on the frames channel.
		r.mu.Lock()
		s := r.ids[w.To]
		r.mu.Unlock()
		if s == nil {
			return
		}
		sender = s
	}
	r.exec(context.Background(), sender, w.Cmd)
}

// tick renews this instance's claims and takes over the sessions whose
// owner is gone and that have sockets here. The renewals and checks of all
// the rooms go in one pipeline: one round trip, however many sessions, so
// that a busy instance renews every claim well within the TTL.
func (m *Manager) tick(ctx context.Context) {
	m.mu.Lock()
	rooms := make([]*Room, 0, len(m.rooms))
	for _, r := range m.rooms {
		rooms = append(rooms, r)
	}
	m.mu.Unlock()
	// A tick ends within a third of the TTL, so that the next one comes
	// before a claim renewed by this one can expire.
	cctx, cancel := context.WithTimeout(ctx, min(redisTimeout, m.cfg.OwnerTTL/3))
	defer cancel()
	ttl := m.cfg.OwnerTTL.Milliseconds()
	pipe := m.cfg.Redis.Pipeline()
	renewals := map[*Room]*redis.Cmd{}
	checks := map[*Room]*redis.IntCmd{}
	for _, r := range rooms {
		r.mu.Lock()
		owned, sinks, live := r.owned, len(r.sinks), r.prov != nil
		r.mu.Unlock()
		switch {
		case owned:
			if live {
				renewScript.Eval(cctx, pipe, []string{m.key("live", r.id)}, m.instance, ttl)
				pipe.PExpire(cctx, m.key("state", r.id), m.cfg.OwnerTTL)
			}
			renewals[r] = renewScript.Eval(cctx, pipe, []string{m.key("owner", r.id)}, m.instance, ttl)
		case sinks > 0:
			checks[r] = pipe.Exists(cctx, m.key("owner", r.id))
		}
	}
	if len(renewals)+len(checks) == 0 {
		return
	}
	sent := time.Now()
	_, _ = pipe.Exec(cctx) // each command's error is looked at below
	for r, c := range renewals {
		n, err := c.Int()
		switch {
		case err == nil && n == 1:
			// Renewed: the claim lives at least until sent + TTL.
			r.mu.Lock()
			r.leaseUntil = sent.Add(m.cfg.OwnerTTL)
			r.mu.Unlock()
		case err == nil:
			// The claim is gone: Redis restarted empty (or evicted it),
			// or another instance holds it now. Only the latter ends the
			// process.
			r.reclaim(ctx)
		default:
			// Not renewed: the claim may expire (and another instance
			// take the session) at the end of the last renewal's TTL.
			// Give it up before the next tick would come too late, so
			// that two processes never run the session.
			r.mu.Lock()
			expiring := !time.Now().Add(m.cfg.OwnerTTL / 3).Before(r.leaseUntil)
			r.mu.Unlock()
			if expiring {
				m.log.ErrorContext(cctx, "could not renew the ownership of a session before it expires: ending its process", "session_id", r.id, "err", err)
				r.lose()
			} else {
				m.log.WarnContext(cctx, "renew the ownership of a session", "session_id", r.id, "err", err)
			}
		}
	}
	for r, c := range checks {
		if n, err := c.Result(); err == nil && n == 0 {
			if _, err := r.claim(cctx); err != nil {
				m.log.ErrorContext(cctx, "claim session", "session_id", r.id, "err", err)
			}
		}
	}
}

// reclaim takes r's claim back after a renewal found it gone, and puts
// back what Redis lost with it (live state, live mark, pending requests);
// when another instance holds the claim, r loses the session.
func (r *Room) reclaim(ctx context.Context) {
	m := r.m
	cctx, cancel := context.WithTimeout(ctx, min(redisTimeout, m.cfg.OwnerTTL/3))
	defer cancel()
	sent := time.Now()
	n, err := claimScript.Run(cctx, m.cfg.Redis, []string{m.key("owner", r.id)}, m.instance, m.cfg.OwnerTTL.Milliseconds()).Int()
	switch {
	case err != nil:
		// Unknown: the next tick renews it or gives it up in time.
		m.log.WarnContext(cctx, "take back the ownership of a session", "session_id", r.id, "err", err)
		return
	case n == 0:
		m.log.ErrorContext(cctx, "lost the ownership of a session to another instance: ending its process", "session_id", r.id)
		r.lose()
		return
	}
	m.log.WarnContext(cctx, "took back the ownership of a session that Redis lost", "session_id", r.id)
	r.mu.Lock()
	r.leaseUntil = sent.Add(m.cfg.OwnerTTL)
	live := r.prov != nil
	pending := make([]agent.PermissionRequest, 0, len(r.order))
	for _, id := range r.order {
		if p, ok := r.pending[id]; ok {
			pending = append(pending, p)
		}
	}
	r.mu.Unlock()
	r.stateMu.Lock()
	r.stateWritten = "" // lost with the claim: written again below
	r.stateMu.Unlock()
	r.stateChanged()
	if live {
		m.setLive(r.id, true)
	}
	for _, p := range pending {
		m.permSet(r.id, p)
	}
}

// lose forgets r's claim (taken by another instance, or not renewed in
// time) and ends its process: its sockets get session_ended, then the new
// owner's frames.
func (r *Room) lose() {
	r.mu.Lock()
	r.owned = false
	r.mu.Unlock()
	r.closeProvider()
}

// claim makes this instance the session's owner if nobody is; it reports
// whether this instance owns it.
func (r *Room) claim(ctx context.Context) (bool, error) {
	r.claimMu.Lock()
	defer r.claimMu.Unlock()
	r.mu.Lock()
	owned := r.owned
	r.mu.Unlock()
	if owned {
		return true, nil
	}
	m := r.m
	sent := time.Now()
	n, err := claimScript.Run(ctx, m.cfg.Redis, []string{m.key("owner", r.id)}, m.instance, m.cfg.OwnerTTL.Milliseconds()).Int()
	if err != nil {
		return false, err
	}
	if n == 0 {
		return false, nil
	}
	r.mu.Lock()
	r.owned = true
	r.leaseUntil = sent.Add(m.cfg.OwnerTTL)
	r.mu.Unlock()
	r.stateMu.Lock()
	r.stateWritten = "" // what another owner left is unknown
	r.stateMu.Unlock()
	r.takeover(ctx)
	// Another owner may have changed the queue since it was read here.
	r.promptMu.Lock()
	r.setQueueLenLocked(0, false)
	r.promptMu.Unlock()
	r.kickQueue() // prompts a previous owner left queued
	return true, nil
}

// takeover retires the requests a previous owner's process left pending.
func (r *Room) takeover(ctx context.Context) {
	m := r.m
	pending, err := m.pendingOf(ctx, r.id)
	if err != nil {
		m.log.ErrorContext(ctx, "read pending requests", "session_id", r.id, "err", err)
		return
	}
	r.mu.Lock()
	local := len(r.pending)
	r.mu.Unlock()
	if local > 0 {
		return // this instance's own process asked them
	}
	// Out of the hash first: the Wakes' readers must not count them.
	m.cfg.Redis.Del(ctx, m.key("perm", r.id))
	for _, p := range pending {
		r.resolved(p.RequestID, "", false, "owner_lost", "")
	}
}

// release gives up r's claim.
func (r *Room) release() {
	r.mu.Lock()
	owned := r.owned
	r.owned = false
	r.mu.Unlock()
	if !owned {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	_ = releaseOwnerScript.Run(ctx, r.m.cfg.Redis, []string{r.m.key("owner", r.id), r.m.key("state", r.id)}, r.m.instance).Err()
}

// pendingOf reads the perm hash, oldest first.
func (m *Manager) pendingOf(ctx context.Context, id string) ([]agent.PermissionRequest, error) {
	all, err := m.cfg.Redis.HGetAll(ctx, m.key("perm", id)).Result()
	if err != nil {
		return nil, err
	}
	return m.decodePending(m.key("perm", id), all)
}

// decodePending decodes the perm hash key, oldest first: only the entries
// sealed for their key and field, and naming their field's request.
func (m *Manager) decodePending(key string, all map[string]string) ([]agent.PermissionRequest, error) {
	var es []permEntry
	for field, v := range all {
		body, ok := m.auth.open([]byte(v), key, field)
		var e permEntry
		if !ok || json.Unmarshal(body, &e) != nil || e.Req.RequestID != field {
			m.auth.dropped(key+" "+field, "bad signature")
			continue
		}
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b permEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	out := make([]agent.PermissionRequest, len(es))
	for i, e := range es {
		out[i] = e.Req
	}
	return out, nil
}

// permSet and permDel keep the perm hash. The writes go through the
// publisher's queue: in order with the frames (a request is in the hash
// before its frame is published, out of it before its
// permission_resolved is), and sent again after a Redis failure.
func (m *Manager) permSet(id string, p agent.PermissionRequest) {
	if !m.multi() {
		return
	}
	key := m.key("perm", id)
	b, _ := json.Marshal(permEntry{Seq: time.Now().UnixNano(), Req: p})
	b = m.auth.seal(b, key, p.RequestID)
	m.pub.queue(pubItem{do: func(ctx context.Context, pipe redis.Pipeliner) { pipe.HSet(ctx, key, p.RequestID, b) }})
}

func (m *Manager) permDel(id string, requestIDs ...string) {
	if !m.multi() || len(requestIDs) == 0 {
		return
	}
	key := m.key("perm", id)
	m.pub.queue(pubItem{do: func(ctx context.Context, pipe redis.Pipeliner) { pipe.HDel(ctx, key, requestIDs...) }})
}

// publish sends f to the other instances (to one socket when to != ""),
// in the background and in order (see publisher).
func (r *Room) publish(to string, f Frame) {
	seq, at := r.m.auth.next()
	ch := r.m.key("frames", r.id)
	r.m.pub.publish(ch, r.m.sealRelayed(ch, wireFrame{From: r.m.instance, Seq: seq, At: at, To: to, Line: f.Line, Data: f.Data, Req: f.Request}))
}

// deliverRemote hands a frame from another instance to the local sockets;
// a logged frame past a gap first gets the missing lines from the log.
func (r *Room) deliverRemote(w wireFrame) {
	f := Frame{Line: w.Line, Data: w.Data}
	if w.To != "" {
		r.mu.Lock()
		s := r.ids[w.To]
		r.mu.Unlock()
		if s != nil {
			s.Send(f)
		}
		return
	}
	if w.Req != "" {
		// A request already delivered (sent again after a Redis
		// failure, or found by resyncPending) is not delivered twice.
		r.mu.Lock()
		seen := r.relayed[w.Req]
		if r.relayed == nil {
			r.relayed = map[string]bool{}
		}
		r.relayed[w.Req] = true
		r.mu.Unlock()
		if seen {
			return
		}
	}
	if f.Line != 0 {
		r.fill(f.Line - 1)
		r.mu.Lock()
		if f.Line <= r.lastLine {
			r.mu.Unlock()
			return
		}
		r.lastLine = f.Line
		r.mu.Unlock()
	}
	r.mu.Lock()
	sinks := r.sinkList()
	r.mu.Unlock()
	for _, s := range sinks {
		s.Send(f)
	}
}

// resyncPending, on a (re)subscription, delivers to the sockets here the
// permission requests of the owner's process they have not been given: a
// request published while this instance was not subscribed (Redis
// restarting, a connection cut) is in the perm hash but its frame is lost.
// The owner's own sockets get them from its process.
func (r *Room) resyncPending() {
	r.mu.Lock()
	skip := r.owned || len(r.sinks) == 0
	r.mu.Unlock()
	if skip {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	pending, err := r.m.pendingOf(ctx, r.id)
	if err != nil {
		r.m.log.ErrorContext(ctx, "read pending requests", "session_id", r.id, "err", err)
		return
	}
	r.mu.Lock()
	seen := r.relayed
	r.relayed = make(map[string]bool, len(pending)) // only the pending ones are kept
	var missed []agent.PermissionRequest
	for _, p := range pending {
		if !seen[p.RequestID] {
			missed = append(missed, p)
		}
		r.relayed[p.RequestID] = true
	}
	sinks := r.sinkList()
	r.mu.Unlock()
	for _, p := range missed {
		f := PermissionRequestFrame(p, false)
		for _, s := range sinks {
			s.Send(f)
		}
	}
}

// fill delivers the log's lines after the last one delivered, up to upTo
// (every line when upTo is 0).
func (r *Room) fill(upTo int64) {
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	for {
		r.mu.Lock()
		last := r.lastLine
		r.mu.Unlock()
		if upTo > 0 && last >= upTo {
			return
		}
		msgs, err := r.m.cfg.Store.Messages(ctx, r.id, last, 500)
		if err != nil {
			r.m.log.Error("fill the gap from the log", "session_id", r.id, "err", err)
			return
		}
		for _, msg := range msgs {
			if upTo > 0 && msg.Line > upTo {
				return
			}
			r.mu.Lock()
			if msg.Line <= r.lastLine {
				r.mu.Unlock()
				continue
			}
			r.lastLine = msg.Line
			sinks := r.sinkList()
			r.mu.Unlock()
			f := FrameOf(msg)
			for _, s := range sinks {
				s.Send(f)
			}
		}
		if len(msgs) < 500 {
			return
		}
	}
}

// remoteSink is a socket on another instance: its frames go through the
// frames channel, addressed to it.
type remoteSink struct {
	r  *Room
	to string
}

func (s remoteSink) Send(f Frame) { s.r.publish(s.to, f) }

// forward sends a command to the owner.
func (r *Room) forward(ctx context.Context, sender Sink, cmd Command) {
	r.mu.Lock()
	to := r.sinks[sender]
	r.mu.Unlock()
	seq, at := r.m.auth.next()
	ch := r.m.key("cmd", r.id)
	b := r.m.sealRelayed(ch, wireCmd{From: r.m.instance, Seq: seq, At: at, To: to, Cmd: cmd})
	cctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	n, err := r.m.cfg.Redis.Publish(cctx, ch, b).Result()
	if err == nil && n <= 1 {
		// This instance listens too: nobody else got it (the owner is
		// resubscribing after a Redis failure, for instance).
		err = errors.New("no instance listens")
	}
	if err != nil {
		sender.Send(ErrorFrame("could not reach the session's instance: " + err.Error()))
	}
}

// enqueue runs fn after the commands queued before it, in the background.
func (r *Room) enqueue(fn func()) {
	r.cmdMu.Lock()
	r.cmdq = append(r.cmdq, fn)
	if r.cmdRunning {
		r.cmdMu.Unlock()
		return
	}
	r.cmdRunning = true
	r.cmdMu.Unlock()
	r.m.bg.Go(func() {
		for {
			r.cmdMu.Lock()
			if len(r.cmdq) == 0 {
				r.cmdRunning = false
				r.cmdMu.Unlock()
				return
			}
			fn := r.cmdq[0]
			r.cmdq = r.cmdq[1:]
			r.cmdMu.Unlock()
			fn()
		}
	})
}
