package room

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// Turns left running by a dead instance (docs/api.md, "When chat dies
// mid-turn"). Every turn is recorded in open_turns (store.OpenTurn) with
// the instance that runs it, from its start until its end; a chat that is
// killed (or whose machine dies) leaves its rows there. Every instance
// looks for such turns when it starts and then every OwnerTTL, and closes
// those whose instance is gone: a notice in the log ("turn interrupted:
// the server restarted"), session_ended to the sockets, turn_ended
// "interrupted" on the turn stream (analytics ends the turn, shadow
// commits what the agent changed), the dead instance's claims released and
// the prompts queued behind the turn sent. Deleting the row and appending
// the notice is one transaction, so a turn is closed once, whoever looks;
// an instance whose turn was closed that way (it was taken for dead)
// publishes no turn_ended of its own.
//
// An instance is gone when:
//   - it ran on this host (same host name, boot and PID namespace) and its
//     process is not alive any more (no such process, or one started at
//     another time): known at once, so a chat that restarts closes its
//     predecessor's turns before it serves its first request;
//   - it ran elsewhere, and its heartbeat key <prefix>chat:instance:<id>
//     (TTL OwnerTTL, renewed every OwnerTTL/3) has been missing on two
//     looks at least OwnerTTL apart. An instance that is alive sets it
//     again within OwnerTTL/3 of a Redis restart that lost it.
//
// The heartbeat holds where the instance runs (procID.String): the claims
// of a dead instance of this host are released at once, idle sessions'
// too (releaseDeadClaims), so that a socket's first command after the
// restart is not forwarded to nobody.

// InterruptedNotice is the notice of a turn whose server died during it.
const InterruptedNotice = "turn interrupted: the server restarted"

// recoverTimeout bounds one look for turns of dead instances;
// openTimeout the write of a turn's row at its start or end, which holds up
// the session's pump (a turn whose row is not written runs all the same).
const (
	recoverTimeout = 10 * time.Second
	openTimeout    = 2 * time.Second
	// closeRetryDelay and closeRetryFor: see closeLater.
	closeRetryDelay = time.Second
	closeRetryFor   = 2 * time.Minute
)

// procID says where an instance runs.
type procID struct {
	host  string // host name, boot id, PID namespace
	pid   int
	start int64 // the process's start time, clock ticks since boot
}

// selfProc is this process's procID.
func selfProc() procID {
	name, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	pid := os.Getpid()
	return procID{host: name + "|" + strings.TrimSpace(string(boot)) + "|" + ns, pid: pid, start: procStart(pid)}
}

// String is how the instance's heartbeat key holds p.
func (p procID) String() string {
	return p.host + "\n" + strconv.Itoa(p.pid) + "\n" + strconv.FormatInt(p.start, 10)
}

// parseProcID reads a heartbeat's procID.
func parseProcID(s string) (procID, bool) {
	f := strings.Split(s, "\n")
	if len(f) != 3 {
		return procID{}, false
	}
	pid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseInt(f[2], 10, 64)
	return procID{host: f[0], pid: pid, start: start}, err1 == nil && err2 == nil
}

// goneFrom reports whether p is known, from self's host, to be dead: it ran
// on that host and its process is not alive.
func (p procID) goneFrom(self procID) bool {
	return p.host == self.host && procStart(p.pid) != p.start
}

// procStart is the start time of process pid (field 22 of its stat), -1
// when there is no such process.
func procStart(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// The command name, in parentheses, may hold spaces: count after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return -1
	}
	n, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// startedTurn is what open_turns keeps of a turn's turn_started event.
type startedTurn struct {
	Prompt     string `json:"prompt"`
	Cwd        string `json:"cwd"`
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	TurnNumber int    `json:"turn_number,omitempty"`
}

// recordOpen records t, a turn that just started, in open_turns.
func (r *Room) recordOpen(t *prompt) {
	m := r.m
	b, _ := json.Marshal(startedTurn{Prompt: t.text, Cwd: t.cwd, Provider: t.provider, Model: t.model, TurnNumber: t.number})
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	err := m.cfg.Store.OpenTurn(ctx, store.OpenTurn{
		TurnID: t.id, SessionID: r.id, PromptLine: t.line, Instance: m.instance,
		Host: m.self.host, PID: m.self.pid, PIDStart: m.self.start, StartedAt: t.start, Started: b,
	})
	if err != nil {
		// The turn runs all the same; were this instance to die during
		// it, nobody would close it.
		m.log.Error("record the open turn", "session_id", r.id, "turn_id", t.id, "err", err)
		return
	}
	r.mu.Lock()
	t.open = true
	r.mu.Unlock()
}

// closeOpen forgets the open turn t at its end; false when another
// instance closed it already (as interrupted): its turn_ended is out.
func (r *Room) closeOpen(t *prompt) bool {
	r.mu.Lock()
	open := t.open
	r.mu.Unlock()
	if !open {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	ok, err := r.m.cfg.Store.CloseTurn(ctx, t.id, r.m.instance)
	if err != nil {
		// Left there, the row would have the turn closed again as
		// interrupted once this instance is gone: try again meanwhile.
		r.m.log.Error("close the open turn: trying again", "session_id", r.id, "turn_id", t.id, "err", err)
		r.m.bg.Go(func() { r.m.closeLater(r.id, t.id) })
		return true
	}
	if !ok {
		r.m.log.Warn("a turn was closed as interrupted while it ran here", "session_id", r.id, "turn_id", t.id)
	}
	return ok
}

// closeLater deletes the row of a turn that ended here, every
// closeRetryDelay until PostgreSQL takes it, for closeRetryFor at most (or
// until the Manager closes).
func (m *Manager) closeLater(session, turn string) {
	for deadline := time.Now().Add(closeRetryFor); time.Now().Before(deadline) && !m.closing.Load(); {
		time.Sleep(closeRetryDelay)
		ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
		_, err := m.cfg.Store.CloseTurn(ctx, turn, m.instance)
		cancel()
		if err == nil {
			return
		}
	}
	m.log.Error("close the open turn: given up", "session_id", session, "turn_id", turn)
}

// RecoverTurns closes the turns of dead instances (see above). Run calls
// it before serving; the cluster loop calls it every OwnerTTL.
func (m *Manager) RecoverTurns(ctx context.Context) {
	m.recoverMu.Lock()
	defer m.recoverMu.Unlock()
	if m.cfg.AfterRecover != nil {
		defer m.cfg.AfterRecover()
	}
	ctx, cancel := context.WithTimeout(ctx, recoverTimeout)
	defer cancel()
	m.releaseDeadClaims(ctx)
	ts, err := m.cfg.Store.OpenTurns(ctx, m.instance)
	if err != nil {
		m.log.ErrorContext(ctx, "read the open turns", "err", err)
		return
	}
	seen := map[string]bool{}
	for _, t := range ts {
		seen[t.Instance] = true
		if m.instanceGone(ctx, t) {
			m.interrupt(ctx, t)
		}
	}
	for id := range m.absent {
		if !seen[id] {
			delete(m.absent, id)
		}
	}
}

// releaseDeadClaims releases the claims of the instances of this host
// whose process is dead (their heartbeat says where they ran), idle
// sessions' too: a socket's command on such a session would otherwise be
// forwarded to nobody until the claim expires.
func (m *Manager) releaseDeadClaims(ctx context.Context) {
	if !m.multi() {
		return
	}
	dead := map[string]bool{}
	prefix := m.key("instance", "")
	iter := m.cfg.Redis.Scan(ctx, 0, globEscape(prefix)+"*", 500).Iterator()
	for iter.Next(ctx) {
		id := strings.TrimPrefix(iter.Val(), prefix)
		if id == m.instance {
			continue
		}
		if p, ok := parseProcID(m.cfg.Redis.Get(ctx, iter.Val()).Val()); ok && p.goneFrom(m.self) {
			dead[id] = true
		}
	}
	if err := iter.Err(); err != nil || len(dead) == 0 {
		return
	}
	prefix = m.key("owner", "")
	iter = m.cfg.Redis.Scan(ctx, 0, globEscape(prefix)+"*", 500).Iterator()
	for iter.Next(ctx) {
		owner := m.cfg.Redis.Get(ctx, iter.Val()).Val()
		if !dead[owner] {
			continue
		}
		id := strings.TrimPrefix(iter.Val(), prefix)
		if err := releaseDeadScript.Run(ctx, m.cfg.Redis,
			[]string{m.key("owner", id), m.key("state", id), m.key("live", id)}, owner, m.instance).Err(); err != nil {
			m.log.ErrorContext(ctx, "release the claims of a dead instance", "session_id", id, "instance", owner, "err", err)
			return
		}
		m.log.InfoContext(ctx, "released the claim of a dead instance", "session_id", id, "instance", owner)
	}
	for id := range dead {
		m.cfg.Redis.Del(ctx, m.key("instance", id))
	}
}

// instanceGone reports whether the instance of t is known to be dead;
// m.recoverMu is held.
func (m *Manager) instanceGone(ctx context.Context, t store.OpenTurn) bool {
	if t.Host == m.self.host {
		return procStart(t.PID) != t.PIDStart
	}
	if !m.multi() {
		return false
	}
	n, err := m.cfg.Redis.Exists(ctx, m.key("instance", t.Instance)).Result()
	if err != nil {
		return false
	}
	if n == 1 {
		delete(m.absent, t.Instance)
		return false
	}
	first, ok := m.absent[t.Instance]
	if !ok {
		m.absent[t.Instance] = time.Now()
		return false
	}
	return time.Since(first) >= m.cfg.OwnerTTL
}

// releaseDeadScript releases the claims of the dead instance ARGV[1] on a
// session: its ownership KEYS[1] and live state KEYS[2] (also a state left
// with no owner), its live mark KEYS[3]. It returns 1 then; 2, changing
// nothing, when this instance (ARGV[2]) owns the session, 0 when another
// does.
var releaseDeadScript = redis.NewScript(`local o = redis.call("GET", KEYS[1])
if o and o == ARGV[2] then return 2 end
if o and o ~= ARGV[1] then return 0 end
redis.call("DEL", KEYS[1], KEYS[2])
if redis.call("GET", KEYS[3]) == ARGV[1] then redis.call("DEL", KEYS[3]) end
return 1`)

// interrupt closes the open turn t of a dead instance.
func (m *Manager) interrupt(ctx context.Context, t store.OpenTurn) {
	log := m.log.With("session_id", t.SessionID, "turn_id", t.TurnID, "instance", t.Instance)
	r := m.room(t.SessionID)
	// ownedElsewhere: a live instance owns the session now (a socket
	// claimed it after the dead one's claim expired), and may run a turn
	// of its own: the dead turn is closed without ending anything else.
	ownedElsewhere, ownedHere := false, false
	if m.multi() {
		n, err := releaseDeadScript.Run(ctx, m.cfg.Redis,
			[]string{m.key("owner", t.SessionID), m.key("state", t.SessionID), m.key("live", t.SessionID)},
			t.Instance, m.instance).Int()
		if err != nil {
			log.ErrorContext(ctx, "release the claims of a dead instance", "err", err)
			m.dropIfIdle(r)
			return // the next look tries again
		}
		ownedHere = n == 2
		ownedElsewhere = n == 0 || ownedHere && r.isRunning()
	}
	payload, _ := json.Marshal(protocol.StoredNotice{
		Role: "notice", Level: "error", Content: InterruptedNotice, PromptLine: t.PromptLine,
		Cause: protocol.NoticeServerRestarted,
	})
	r.appendMu.Lock()
	msg, ok, err := m.cfg.Store.InterruptTurn(ctx, t, payload)
	if ok {
		r.Broadcast(FrameOf(msg))
	}
	r.appendMu.Unlock()
	if err != nil || !ok {
		if err != nil {
			log.ErrorContext(ctx, "close a turn of a dead instance", "err", err)
		}
		m.dropIfIdle(r)
		return
	}
	log.WarnContext(ctx, "closed a turn its instance left running: the instance is gone", "line", msg.Line)
	if !ownedElsewhere {
		// The dead process's requests, then its end.
		if m.multi() && !ownedHere {
			r.takeover(ctx)
		}
		r.Broadcast(endedFrame())
	}
	m.publishTurn(interruptedTurnEnded(t, time.Now()))
	m.notify(Wake{SessionID: t.SessionID, Kind: WakeSession})
	if ownedElsewhere {
		m.dropIfIdle(r)
		return
	}
	// The prompts queued behind the turn go now, from here.
	q, err := m.cfg.Store.Queue(ctx, t.SessionID)
	if err != nil {
		log.ErrorContext(ctx, "read the prompt queue", "err", err)
	}
	r.mu.Lock()
	sinks := len(r.sinks)
	r.mu.Unlock()
	if len(q) == 0 && sinks == 0 {
		m.dropIfIdle(r)
		return
	}
	if m.multi() && !ownedHere {
		if _, err := r.claim(ctx); err != nil { // kicks the queue
			log.ErrorContext(ctx, "claim session", "err", err)
		}
		return
	}
	r.kickQueue()
}

// endedFrame is the session_ended frame of a turn interrupted by a
// server restart.
func endedFrame() Frame {
	return NewFrame(0, protocol.SessionEndedFrame{
		Type: protocol.FrameSessionEnded, Reason: InterruptedNotice, Cause: protocol.NoticeServerRestarted, ExitCode: -1,
	})
}

// EndedByNotice reports whether m is the notice of a turn interrupted by a
// server restart, and the session_ended frame that went with it.
func EndedByNotice(m store.Message) (Frame, bool) {
	if m.Kind != store.KindNotice {
		return Frame{}, false
	}
	var n protocol.StoredNotice
	if json.Unmarshal(m.Payload, &n) != nil || n.Cause != protocol.NoticeServerRestarted {
		return Frame{}, false
	}
	return endedFrame(), true
}

// interruptedTurnEnded is the turn_ended event of the open turn t,
// interrupted at now.
func interruptedTurnEnded(t store.OpenTurn, now time.Time) map[string]any {
	var s startedTurn
	_ = json.Unmarshal(t.Started, &s)
	v := map[string]any{
		"event": "turn_ended", "session_id": t.SessionID, "turn_id": t.TurnID, "prompt": s.Prompt, "model": s.Model,
		"cwd": s.Cwd, "provider": s.Provider,
		"cost_usd": "0", "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
		"cache_creation_tokens": 0, "duration_ms": max(now.Sub(t.StartedAt).Milliseconds(), 0), "tool_calls": 0,
		"tools": "[]", "is_error": "true", "stop_reason": "interrupted", "ended_at": now.UTC().Format(time.RFC3339Nano),
	}
	if s.TurnNumber > 0 {
		v["turn_number"] = s.TurnNumber
	}
	return v
}

// dropIfIdle forgets r when no socket and no process keep it.
func (m *Manager) dropIfIdle(r *Room) {
	dropped := false
	m.mu.Lock()
	r.mu.Lock()
	if len(r.sinks) == 0 && r.prov == nil && m.rooms[r.id] == r {
		delete(m.rooms, r.id)
		dropped = true
	}
	r.mu.Unlock()
	m.mu.Unlock()
	if dropped {
		m.dropped(r)
	}
}

// heartbeatInstance sets this instance's heartbeat key.
func (m *Manager) heartbeatInstance(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, min(redisTimeout, m.cfg.OwnerTTL/3))
	defer cancel()
	if err := m.cfg.Redis.Set(cctx, m.key("instance", m.instance), m.self.String(), m.cfg.OwnerTTL).Err(); err != nil {
		m.log.WarnContext(cctx, "renew the instance's heartbeat", "err", err)
	}
}
