package room

import (
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
// closes). Every room on every instance subscribes to
// <prefix>chat:frames:<session> (frames broadcast anywhere, and replies to
// one socket) and <prefix>chat:cmd:<session> (client commands forwarded to
// the owner). Pub/sub is only the wake-up: logged frames are de-duplicated
// by line and their gaps filled from the PostgreSQL log; pending permission
// requests are kept in the hash <prefix>chat:perm:<session>.

// redisTimeout bounds one Redis call of the ownership and relay protocol.
const redisTimeout = 5 * time.Second

// wireFrame is a frame on the frames channel.
type wireFrame struct {
	From string          `json:"from"`
	To   string          `json:"to,omitempty"` // a socket id; "" for every socket
	Line int64           `json:"line,omitempty"`
	Data json.RawMessage `json:"data"`
}

// wireCmd is a client command on the cmd channel.
type wireCmd struct {
	From string  `json:"from"`
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
	m.loops.Add(2)
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
				m.tick(ctx)
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
}

// subscribe subscribes to a new room's channels and learns its last line.
func (m *Manager) subscribe(r *Room) {
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
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
	if s, err := m.cfg.Store.Get(ctx, r.id); err == nil {
		r.mu.Lock()
		if s.LastLine > r.lastLine {
			r.lastLine = s.LastLine
		}
		r.mu.Unlock()
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
			}
		}
	case *redis.Message:
		switch {
		case len(v.Channel) > len(m.key("frames", "")) && v.Channel[:len(m.key("frames", ""))] == m.key("frames", ""):
			r := m.lookup(v.Channel[len(m.key("frames", "")):])
			var w wireFrame
			if r == nil || json.Unmarshal([]byte(v.Payload), &w) != nil || w.From == m.instance {
				return
			}
			r.deliverRemote(w)
		case len(v.Channel) > len(m.key("cmd", "")) && v.Channel[:len(m.key("cmd", ""))] == m.key("cmd", ""):
			r := m.lookup(v.Channel[len(m.key("cmd", "")):])
			var w wireCmd
			if r == nil || json.Unmarshal([]byte(v.Payload), &w) != nil {
				return
			}
			r.mu.Lock()
			owned := r.owned
			r.mu.Unlock()
			if !owned {
				return
			}
			r.enqueue(func() { r.exec(context.Background(), remoteSink{r: r, to: w.To}, w.Cmd) })
		}
	}
}

// tick renews this instance's claims and takes over the sessions whose
// owner is gone and that have sockets here.
func (m *Manager) tick(ctx context.Context) {
	m.mu.Lock()
	rooms := make([]*Room, 0, len(m.rooms))
	for _, r := range m.rooms {
		rooms = append(rooms, r)
	}
	m.mu.Unlock()
	for _, r := range rooms {
		r.mu.Lock()
		owned, sinks, live := r.owned, len(r.sinks), r.prov != nil
		r.mu.Unlock()
		cctx, cancel := context.WithTimeout(ctx, redisTimeout)
		if owned {
			if live {
				_ = renewScript.Run(cctx, m.cfg.Redis, []string{m.key("live", r.id)}, m.instance, m.cfg.OwnerTTL.Milliseconds()).Err()
			}
			n, err := renewScript.Run(cctx, m.cfg.Redis, []string{m.key("owner", r.id)}, m.instance, m.cfg.OwnerTTL.Milliseconds()).Int()
			if err == nil && n == 0 {
				m.log.ErrorContext(cctx, "lost the ownership of a session: ending its process", "session_id", r.id)
				r.mu.Lock()
				r.owned = false
				r.mu.Unlock()
				r.closeProvider()
			}
		} else if sinks > 0 {
			if n, err := m.cfg.Redis.Exists(cctx, m.key("owner", r.id)).Result(); err == nil && n == 0 {
				if _, err := r.claim(cctx); err != nil {
					m.log.ErrorContext(cctx, "claim session", "session_id", r.id, "err", err)
				}
			}
		}
		cancel()
	}
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
	ok, err := m.cfg.Redis.SetNX(ctx, m.key("owner", r.id), m.instance, m.cfg.OwnerTTL).Result()
	if err != nil {
		return false, err
	}
	if !ok {
		return false, nil
	}
	r.mu.Lock()
	r.owned = true
	r.mu.Unlock()
	r.takeover(ctx)
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
	for _, p := range pending {
		r.Broadcast(NewFrame(0, map[string]any{
			"type": "permission_resolved", "request_id": p.RequestID,
			"behavior": "", "ok": false, "reason": "owner_lost",
		}))
	}
	m.cfg.Redis.Del(ctx, m.key("perm", r.id))
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
	_ = releaseScript.Run(ctx, r.m.cfg.Redis, []string{r.m.key("owner", r.id)}, r.m.instance).Err()
}

// pendingOf reads the perm hash, oldest first.
func (m *Manager) pendingOf(ctx context.Context, id string) ([]agent.PermissionRequest, error) {
	all, err := m.cfg.Redis.HGetAll(ctx, m.key("perm", id)).Result()
	if err != nil {
		return nil, err
	}
	var es []permEntry
	for _, v := range all {
		var e permEntry
		if json.Unmarshal([]byte(v), &e) == nil {
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b permEntry) int { return int(a.Seq - b.Seq) })
	out := make([]agent.PermissionRequest, len(es))
	for i, e := range es {
		out[i] = e.Req
	}
	return out, nil
}

// permSet and permDel keep the perm hash.
func (m *Manager) permSet(id string, p agent.PermissionRequest) {
	if !m.multi() {
		return
	}
	b, _ := json.Marshal(permEntry{Seq: time.Now().UnixNano(), Req: p})
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	if err := m.cfg.Redis.HSet(ctx, m.key("perm", id), p.RequestID, b).Err(); err != nil {
		m.log.Error("store pending request", "session_id", id, "err", err)
	}
}

func (m *Manager) permDel(id string, requestIDs ...string) {
	if !m.multi() || len(requestIDs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	_ = m.cfg.Redis.HDel(ctx, m.key("perm", id), requestIDs...).Err()
}

// publish sends f to the other instances (to one socket when to != "").
func (r *Room) publish(to string, f Frame) {
	b, _ := json.Marshal(wireFrame{From: r.m.instance, To: to, Line: f.Line, Data: f.Data})
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	if err := r.m.cfg.Redis.Publish(ctx, r.m.key("frames", r.id), b).Err(); err != nil {
		r.m.log.Error("publish frame", "session_id", r.id, "err", err)
	}
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
	b, _ := json.Marshal(wireCmd{From: r.m.instance, To: to, Cmd: cmd})
	cctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	n, err := r.m.cfg.Redis.Publish(cctx, r.m.key("cmd", r.id), b).Result()
	if err == nil && n == 0 {
		err = errors.New("no instance listens")
	}
	if err != nil {
		sender.Send(ErrorFrame("could not reach the session's instance: " + err.Error()))
	}
}

// enqueue runs fn after the commands queued before it, in the background.
func (r *Room) enqueue(fn func()) {
	r.cmdMu.Lock()
	defer r.cmdMu.Unlock()
	r.cmdq = append(r.cmdq, fn)
	if r.cmdRunning {
		return
	}
	r.cmdRunning = true
	r.m.bg.Add(1)
	go func() {
		defer r.m.bg.Done()
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
	}()
}
