// Package room is chat's session runtime on one instance: per session a
// Room with the sockets attached to it (as Sinks) and, started lazily by the
// first user message, the session's agent provider. A pump goroutine per
// provider turns its events into /chat frames: agent messages are appended
// to the session's log (internal/store) and broadcast with their line;
// raw output, stderr, permission requests and compaction progress are
// broadcast as they come; a finished turn is recorded (cost, turns).
//
// Appending a line and broadcasting its frame happen under one lock, so
// every sink sees the lines of a session in order; a socket that joins
// subscribes first and reads the log after, then drops the lines it already
// replayed (see Sink).
//
// Manager implements internal/api's Runtime. With several instances
// (Config.OwnerTTL), one instance owns a session's process and the others
// relay its frames and forward their sockets' commands (see cluster.go).
package room

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/turnsig"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/providers"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// controlTimeout bounds provider calls made for a client message.
const controlTimeout = 15 * time.Second

// Frame is one server-to-client frame: its JSON and, for a frame of the
// session's log, its line (0 otherwise).
type Frame struct {
	Line int64
	Data []byte
	// Request is the request id of a permission_request frame, by which
	// the other instances de-duplicate it (see Room.resyncPending).
	Request string
}

// NewFrame encodes v (a map or struct with a "type" field) as a Frame.
func NewFrame(line int64, v any) Frame {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(protocol.ErrorFrame{Type: protocol.FrameError, Message: "encode frame: " + err.Error()})
	}
	return Frame{Line: line, Data: b}
}

// ErrorFrame is an `error` frame with message.
func ErrorFrame(message string) Frame {
	return NewFrame(0, protocol.ErrorFrame{Type: protocol.FrameError, Message: message})
}

// Sink is an attached socket. Send must not block: a sink that cannot keep
// up closes itself (and calls Leave).
type Sink interface {
	Send(f Frame)
}

// Config is what a Manager needs.
type Config struct {
	Store *store.Store
	// LookPath finds a provider's default program; nil means exec.LookPath.
	LookPath func(string) (string, error)
	// Env is added to every agent process's environment (tests set
	// FAKECLAUDE_* variables).
	Env []string
	Log *slog.Logger
	// NewProvider, when set, makes the sessions' providers instead of the
	// agent-sdk one (tests); the program is then not looked up.
	NewProvider func(agent.Options) agent.Provider
	// Redis and TurnStream: where turn events are added (XADD); no events
	// when either is unset.
	Redis      *redis.Client
	TurnStream string
	// Prefix is the Redis key prefix; OwnerTTL, when > 0 (and Redis is
	// set), turns on ownership of sessions among several instances (see
	// cluster.go); Instance names this instance ("" picks a random id).
	Prefix   string
	OwnerTTL time.Duration
	Instance string
	// Secret is the internal secret; the relay's messages are sealed
	// under a key derived from it (relayauth.go). Instances that do not
	// share it ignore each other's messages.
	Secret internalauth.Secret
	// Push, when set, is told of the events a Web Push may go for (see
	// push.go).
	Push PushHook
	// Heartbeat is the turn heartbeat: while a turn runs and the agent has
	// been silent this long, compact_progress (heartbeat: true) is
	// broadcast, then again every Heartbeat until the agent speaks or the
	// turn ends. 0 means DefaultHeartbeat.
	Heartbeat time.Duration
}

// DefaultHeartbeat is Config.Heartbeat's default.
const DefaultHeartbeat = 10 * time.Second

// Manager holds the rooms of the sessions this instance serves.
type Manager struct {
	cfg   Config
	log   *slog.Logger
	mu    sync.Mutex
	rooms map[string]*Room
	pumps sync.WaitGroup
	bg    bgGroup // stores, publishes, turn event writes, forwarded commands

	turnPub turnPublisher // turns.go: the turn events, written in order
	turnKey turnsig.Key   // signs them

	// appends group-commits the log appends; pub publishes frames to the
	// other instances (batch.go).
	appends *appender
	pub     publisher
	// closing is set by Close: the publisher stops retrying.
	closing atomic.Bool
	// storeDown: PostgreSQL was found unreachable at storeDownAt, and has
	// not answered since (storage.go).
	storeMu     sync.Mutex
	storeDown   bool
	storeDownAt time.Time

	instance    string
	auth        *relayAuth
	nextSink    atomic.Uint64
	ps          *redis.PubSub
	stopCluster context.CancelFunc
	loops       sync.WaitGroup
	// wakeFn is given every Wake of this instance (events.go).
	wakeFn func(Wake)
	// subWait: per channel, who waits for its subscription's confirmation.
	subMu   sync.Mutex
	subWait map[string][]chan struct{}

	// recover.go: where this instance runs; recoverMu serialises the
	// looks for turns of dead instances, absent is when each instance's
	// heartbeat was first found missing.
	self      procID
	recoverMu sync.Mutex
	absent    map[string]time.Time
}

// NewManager returns a Manager with no rooms.
func NewManager(cfg Config) *Manager {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.LookPath == nil {
		cfg.LookPath = exec.LookPath
	}
	if cfg.Instance == "" {
		cfg.Instance = newInstanceID()
	}
	m := &Manager{
		cfg: cfg, log: log, rooms: map[string]*Room{}, instance: cfg.Instance, subWait: map[string][]chan struct{}{},
		self: selfProc(), absent: map[string]time.Time{},
	}
	m.auth = newRelayAuth(cfg.Secret, log)
	m.turnKey = turnsig.New(cfg.Secret)
	m.appends = newAppender(cfg.Store, &m.bg)
	m.appends.down, m.appends.up = m.storageFailed, m.storageOK
	m.pub.m = m
	if m.multi() {
		m.startCluster()
	}
	return m
}

// room returns the session's room, creating it.
func (m *Manager) room(id string) *Room {
	m.mu.Lock()
	r := m.rooms[id]
	if r != nil {
		m.mu.Unlock()
		return r
	}
	r = &Room{m: m, id: id, sinks: map[Sink]string{}, ids: map[string]Sink{}, pending: map[string]agent.PermissionRequest{}}
	m.rooms[id] = r
	m.mu.Unlock()
	if m.multi() {
		m.subscribe(r)
	}
	return r
}

// lookup returns the session's room, or nil.
func (m *Manager) lookup(id string) *Room {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rooms[id]
}

// Snapshot is what a joining socket is told: the live state for the
// connected frame, and the pending permission requests to replay.
type Snapshot struct {
	Running, Compacting bool
	Pending             []agent.PermissionRequest
}

// Join attaches s to the session's room; from now on s gets every frame
// broadcast there. It returns the room and its state at that moment.
func (m *Manager) Join(id string, s Sink) (*Room, Snapshot) {
	r := m.room(id)
	r.mu.Lock()
	sid := fmt.Sprintf("%s:%d", m.instance, m.nextSink.Add(1))
	r.sinks[s] = sid
	r.ids[sid] = s
	owned := r.owned
	snap := Snapshot{Running: r.running, Compacting: r.compacting}
	for _, id := range r.order {
		if p, ok := r.pending[id]; ok {
			snap.Pending = append(snap.Pending, p)
		}
	}
	r.mu.Unlock()
	if m.multi() && !owned {
		// The owner's state and pending requests, from Redis.
		ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
		defer cancel()
		if running, compacting, pending, err := m.remoteState(ctx, id); err == nil {
			snap.Running, snap.Compacting = running, compacting
			if len(snap.Pending) == 0 {
				snap.Pending = pending
			}
		} else {
			m.log.Error("read the session's live state", "session_id", id, "err", err)
		}
	}
	return r, snap
}

// State implements api.Runtime: the session's live state on the instance
// that owns it (read from Redis when that is another instance).
func (m *Manager) State(ctx context.Context, id string) (running, compacting bool) {
	r := m.lookup(id)
	if !m.ownedHere(r) {
		cctx, cancel := context.WithTimeout(ctx, redisTimeout)
		defer cancel()
		running, compacting, _, err := m.remoteState(cctx, id)
		if err != nil {
			m.log.ErrorContext(ctx, "read the session's live state", "session_id", id, "err", err)
		}
		return running, compacting
	}
	if r == nil {
		return false, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running, r.compacting
}

// SetPermissionMode implements api.Runtime: the mode is already stored. It
// is applied by the instance that owns the session.
func (m *Manager) SetPermissionMode(ctx context.Context, id, mode string) (agent.Applied, error) {
	if res, ok, err := m.relay(ctx, id, Command{Type: apiMode, Mode: mode}); ok {
		return res.Applied, err
	}
	return m.setModeHere(ctx, m.lookup(id), mode)
}

// setModeHere applies a stored mode to r's process, if any, and tells r's
// sockets.
func (m *Manager) setModeHere(ctx context.Context, r *Room, mode string) (agent.Applied, error) {
	if r == nil {
		return agent.AppliedNextTurn, nil
	}
	applied, err := r.applyMode(ctx, mode)
	if err != nil {
		return "", err
	}
	r.Broadcast(NewFrame(0, protocol.PermissionModeChangedFrame{Type: protocol.FramePermissionModeChanged, Mode: mode, Applied: string(applied)}))
	return applied, nil
}

// End implements api.Runtime: it ends the session's process (on the
// instance that owns it) and detaches its sockets' room here (they stay
// open until they close).
func (m *Manager) End(ctx context.Context, id string) error {
	_, _, err := m.relay(ctx, id, Command{Type: apiEnd})
	m.endHere(m.lookup(id)) // relayed or not, the room here goes too
	return err
}

// endHere ends r's process and forgets r.
func (m *Manager) endHere(r *Room) {
	if r == nil {
		return
	}
	m.mu.Lock()
	if m.rooms[r.id] == r {
		delete(m.rooms, r.id)
	}
	m.mu.Unlock()
	r.closeProvider()
	m.dropped(r)
}

// Stop interrupts the session's running turn (on the instance that owns
// it) and broadcasts `stopped`, for the stop message and POST
// /api/session/{id}/stop.
func (m *Manager) Stop(ctx context.Context, id string) (agent.InterruptOutcome, error) {
	if res, ok, err := m.relay(ctx, id, Command{Type: apiStop}); ok {
		return res.Outcome, err
	}
	r := m.lookup(id)
	if r == nil {
		return agent.InterruptIdle, nil
	}
	return r.Stop(ctx)
}

// Active lists the sessions with an agent process or a running turn, here
// and (with several instances) on any instance.
func (m *Manager) Active(ctx context.Context) ([]string, error) {
	m.mu.Lock()
	rooms := make([]*Room, 0, len(m.rooms))
	for _, r := range m.rooms {
		rooms = append(rooms, r)
	}
	m.mu.Unlock()
	seen := map[string]bool{}
	var ids []string
	for _, r := range rooms {
		r.mu.Lock()
		if r.prov != nil || r.running {
			ids = append(ids, r.id)
			seen[r.id] = true
		}
		r.mu.Unlock()
	}
	others, err := m.liveElsewhere(ctx)
	for _, id := range others {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, err
}

// Close ends every agent process and waits for their pumps.
func (m *Manager) Close() {
	m.closing.Store(true)
	m.mu.Lock()
	rooms := m.rooms
	m.rooms = map[string]*Room{}
	m.mu.Unlock()
	for _, r := range rooms {
		r.closeProvider()
	}
	m.pumps.Wait()
	m.bg.Wait()
	m.closeCluster(rooms)
}

// Room is one session's live state on this instance.
type Room struct {
	m  *Manager
	id string

	// appendMu serialises "append a line, broadcast its frame", so that
	// lines are broadcast in order.
	appendMu sync.Mutex
	// startMu serialises starting the provider.
	startMu sync.Mutex
	// promptMu serialises what decides whether a prompt is sent or queued,
	// and the queue's changes (queue.go); queueLen is the queue's length
	// when queueKnown.
	promptMu   sync.Mutex
	queueLen   int
	queueKnown bool
	queueEmpty atomic.Bool // queueKnown && queueLen == 0, read without promptMu
	// stateMu serialises writing the live state to Redis; stateWritten is
	// the value written last (state.go).
	stateMu      sync.Mutex
	stateWritten string
	// stateNotified is the state last announced to the events sockets.
	stateNotified string
	// noticedPrompt is the line of the prompt whose failure storeNotice
	// stored last (guarded by mu).
	noticedPrompt int64
	// unstored counts the agent messages that could not be stored (nor
	// sent) since the last gap notice: the next append stores one first;
	// unstoredWhy says why (guarded by appendMu).
	unstored    int
	unstoredWhy string

	// claimMu serialises claiming the session; cmdMu guards the queue of
	// commands forwarded by other instances.
	claimMu    sync.Mutex
	cmdMu      sync.Mutex
	cmdq       []func()
	cmdRunning bool

	mu         sync.Mutex
	owned      bool            // this instance holds the session's claim
	leaseUntil time.Time       // when owned: the claim lives at least until then
	lastLine   int64           // the last line delivered to the sinks here
	sinks      map[Sink]string // to its socket id
	ids        map[string]Sink
	prov       agent.Provider
	pumpDone   chan struct{} // closed when prov's pump has ended
	running    bool
	compacting bool
	pending    map[string]agent.PermissionRequest
	order      []string // request ids in arrival order
	// relayed: the permission requests of another instance's process
	// delivered to the sinks here (see resyncPending).
	relayed    map[string]bool
	sent       []*prompt // prompts sent, their turn not started yet
	turns      []*prompt // turns started, not ended yet (oldest first)
	cwd, model string    // of the current provider, for turn events
	// For the turn heartbeat: when the running turn started, when the
	// agent last said something, when the last heartbeat went out.
	turnStart, lastActivity, lastBeat time.Time
	// providerLocked: the session's provider is known to be locked.
	providerLocked bool
	// turnCount is the session's stored turn count (its turns), when
	// turnCountKnown: read with the session when the provider is created,
	// then taken from each recorded turn, so a turn start needs no read.
	turnCount      int
	turnCountKnown bool
}

// ID is the session id.
func (r *Room) ID() string { return r.id }

// Leave detaches s.
func (r *Room) Leave(s Sink) {
	r.mu.Lock()
	delete(r.ids, r.sinks[s])
	delete(r.sinks, s)
	empty := len(r.sinks) == 0 && r.prov == nil
	r.mu.Unlock()
	if empty {
		dropped := false
		r.m.mu.Lock()
		r.mu.Lock()
		if len(r.sinks) == 0 && r.prov == nil && r.m.rooms[r.id] == r {
			delete(r.m.rooms, r.id)
			dropped = true
		}
		r.mu.Unlock()
		r.m.mu.Unlock()
		if dropped {
			r.m.dropped(r)
		}
	}
}

// Broadcast sends f to every attached sink.
// Broadcast sends f to every attached sink, and to the sinks of the other
// instances.
func (r *Room) Broadcast(f Frame) {
	r.mu.Lock()
	var sinks []Sink
	if f.Line == 0 || f.Line > r.lastLine { // else already filled in from the log
		sinks = r.sinkList()
		r.lastLine = max(r.lastLine, f.Line)
	}
	r.mu.Unlock()
	for _, s := range sinks {
		s.Send(f)
	}
	if r.m.multi() {
		r.publish("", f)
	}
}

// sinkList copies the attached sinks; r.mu must be held.
func (r *Room) sinkList() []Sink {
	sinks := make([]Sink, 0, len(r.sinks))
	for s := range r.sinks {
		sinks = append(sinks, s)
	}
	return sinks
}

// appendAndBroadcast stores payload as the next line of the log and, once
// it is committed, broadcasts frame(line); lockProvider locks the session's
// provider in the same statement. The append goes in the instance's next
// group commit (batch.go). res.unsure tells a failure that may have been
// committed all the same.
func (r *Room) appendAndBroadcast(_ context.Context, kind string, payload json.RawMessage, lockProvider bool, frame func(line int64) Frame) (store.Message, appendRes) {
	r.appendMu.Lock()
	defer r.appendMu.Unlock()
	items, gap := r.withGapLocked([]store.Append{{SessionID: r.id, Kind: kind, Payload: payload, LockProvider: lockProvider, After: r.sentLine()}})
	res := r.m.appends.appendAll(items)
	res = r.gapStoredLocked(res, gap)
	if res[0].err != nil {
		return store.Message{}, res[0]
	}
	r.broadcastGap(res[0].msg)
	r.Broadcast(frame(res[0].msg.Line))
	return res[0].msg, res[0]
}

// withGapLocked puts a gap notice before items when agent messages could
// not be stored since the last one (r.unstored), and returns how many it
// stands for (0: none added); r.appendMu must be held.
func (r *Room) withGapLocked(items []store.Append) ([]store.Append, int) {
	n := r.unstored
	if n == 0 {
		return items, 0
	}
	text := fmt.Sprintf("%d agent messages are missing here: they could not be stored (%s)", n, r.unstoredWhy)
	if n == 1 {
		text = fmt.Sprintf("an agent message is missing here: it could not be stored (%s)", r.unstoredWhy)
	}
	payload, _ := json.Marshal(protocol.StoredNotice{Role: "notice", Level: "warning", Content: text, Gap: &protocol.NoticeGap{Messages: n}})
	return append([]store.Append{{SessionID: r.id, Kind: store.KindNotice, Payload: payload, After: items[0].After}}, items...), n
}

// gapStoredLocked handles the result of the gap notice withGapLocked
// added (gap > 0): once stored it is broadcast and the count starts
// again. It returns the results of the other items; r.appendMu must be
// held.
func (r *Room) gapStoredLocked(res []appendRes, gap int) []appendRes {
	if gap == 0 {
		return res
	}
	if res[0].err == nil {
		r.unstored -= gap
		r.broadcastGap(res[0].msg)
		r.Broadcast(FrameOf(res[0].msg))
	}
	return res[1:]
}

// broadcastGap broadcasts the gap notice the append of m stored before it,
// if any (lines a crash of PostgreSQL lost: see store.AppendMessages).
func (r *Room) broadcastGap(m store.Message) {
	if m.Gap != nil {
		r.m.log.Warn("the log lost lines in a crash of postgres: a gap notice stands for them",
			"session_id", r.id, "line", m.Gap.Line)
		r.Broadcast(FrameOf(*m.Gap))
	}
}

// sentLine is the last line the session's frames went out with here: a
// new message's line must come after it (store.Append.After).
func (r *Room) sentLine() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastLine
}

// FrameOf turns a stored message into the frame it was broadcast as.
func FrameOf(m store.Message) Frame {
	if m.Kind == store.KindAgent {
		return NewFrame(m.Line, protocol.AgentMessageFrame{Type: protocol.FrameAgentMessage, Data: m.Payload, Line: m.Line})
	}
	return NewFrame(m.Line, protocol.MessageStoredFrame{Type: protocol.FrameMessageStored, Message: m.Payload, Line: m.Line})
}

// Image is an image of a user message, as /chat receives it.
type Image = protocol.ImageBlock

// UserMessage stores a prompt, broadcasts message_stored, acknowledges it
// to sender with user_message_stored, and sends it to the agent, starting
// the provider if needed. Failures reach every sink as error frames.
//
// The provider is looked up first (a read of the session only when the
// room has none yet), so that the prompt's append also locks the session's
// provider when it is not known to be locked: the prompt's commit is the
// only PostgreSQL round trip before the agent gets the prompt.
func (r *Room) UserMessage(ctx context.Context, sender Sink, content string, images []Image) {
	r.promptMu.Lock()
	defer r.promptMu.Unlock()
	// A turn runs, or older prompts wait: this one waits too (queue.go).
	n, err := r.queueLenLocked(ctx)
	if err != nil {
		r.m.log.ErrorContext(ctx, "read the prompt queue", "session_id", r.id, "err", err)
		sender.Send(ErrorFrame("could not store the message"))
		return
	}
	if n > 0 || r.isRunning() {
		r.queuePromptLocked(ctx, sender, content, images)
		r.sendFirstLocked(ctx) // idle with older prompts waiting: the oldest goes
		return
	}
	payload, _ := json.Marshal(protocol.StoredPrompt{Role: "user", Content: content, Images: images})
	prov, perr := r.provider(ctx)
	r.mu.Lock()
	lock := perr == nil && !r.providerLocked
	r.mu.Unlock()
	msg, res := r.appendAndBroadcast(ctx, store.KindUserPrompt, payload, lock, func(line int64) Frame {
		return NewFrame(line, protocol.MessageStoredFrame{Type: protocol.FrameMessageStored, Message: payload, Line: line})
	})
	if err := res.err; err != nil {
		r.m.log.ErrorContext(ctx, "store prompt", "session_id", r.id, "err", err)
		if store.Unavailable(err) {
			sender.Send(storageError(res.unsure))
		} else {
			sender.Send(ErrorFrame("could not store the message"))
		}
		return
	}
	if lock {
		r.mu.Lock()
		r.providerLocked = true
		r.mu.Unlock()
		r.m.notify(Wake{SessionID: r.id, Kind: WakeSession}) // provider_locked
	}
	line := msg.Line
	// A prompt whose text is a favorite is stored as one (store.AppendMessage).
	sender.Send(NewFrame(0, protocol.UserMessageStoredFrame{Type: protocol.FrameUserMessageStored, PromptID: fmt.Sprintf("%s:%d", r.id, line), IsFavorite: msg.IsFavorite}))

	if perr != nil {
		r.Broadcast(ErrorFrame(perr.Error()))
		r.storeNotice(ctx, perr.Error(), line)
		return
	}
	r.sendTurn(ctx, prov, line, content, images)
}

// storeNotice stores text, why the turn of the prompt at promptLine
// failed, as a server notice (store.KindNotice) in the log, so that a
// reader of the log later sees why the prompt got no answer, and
// broadcasts it as message_stored. Its payload is
// {"role": "notice", "level": "error", "content": text, "prompt_line": n}
// (protocol.StoredNotice). A failure to store it is logged: the error
// frame went out already.
func (r *Room) storeNotice(ctx context.Context, text string, promptLine int64) {
	// One notice per prompt: when the agent dies as the prompt is sent,
	// the failed send and the process's exit both tell of it, in either
	// order; the first says why.
	r.mu.Lock()
	if promptLine > 0 && r.noticedPrompt == promptLine {
		r.mu.Unlock()
		return
	}
	r.noticedPrompt = promptLine
	r.mu.Unlock()
	r.storeNoticeAs(ctx, text, promptLine, "")
}

// ResumeLostNotice is the notice of a conversation the agent could not
// continue (agent.ResumeLost), reason its own words.
func ResumeLostNotice(reason string) string {
	return "the agent could not resume its conversation (" + reason + "): it goes on in a new one, " +
		"without its memory of this session's earlier messages"
}

// storeNoticeAs stores a notice of cause (protocol.StoredNotice.Cause, ""
// for none) and broadcasts it; see storeNotice.
func (r *Room) storeNoticeAs(ctx context.Context, text string, promptLine int64, cause string) {
	payload, _ := json.Marshal(protocol.StoredNotice{Role: "notice", Level: "error", Content: text, PromptLine: promptLine, Cause: cause})
	_, res := r.appendAndBroadcast(context.WithoutCancel(ctx), store.KindNotice, payload, false, func(line int64) Frame {
		return NewFrame(line, protocol.MessageStoredFrame{Type: protocol.FrameMessageStored, Message: payload, Line: line})
	})
	if err := res.err; err != nil {
		r.m.log.ErrorContext(ctx, "store notice", "session_id", r.id, "err", err)
	}
}

func sendError(err error) string {
	var missing *agent.MissingExecutableError
	if errors.As(err, &missing) {
		return missing.Error()
	}
	return "could not send the message to the agent: " + err.Error()
}

func (r *Room) setRunning(v bool) {
	r.mu.Lock()
	if v && !r.running {
		r.turnStart = time.Now()
		r.lastActivity = r.turnStart
	}
	r.running = v
	r.mu.Unlock()
	r.stateChanged()
}

// heartbeat broadcasts the turn heartbeat (see Config.Heartbeat) until done
// is closed.
func (r *Room) heartbeat(done <-chan struct{}) {
	every := r.m.cfg.Heartbeat
	if every <= 0 {
		every = DefaultHeartbeat
	}
	t := time.NewTicker(every / 4)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			r.mu.Lock()
			due := r.running && now.Sub(r.lastActivity) >= every && now.Sub(r.lastBeat) >= every
			if due {
				r.lastBeat = now
			}
			compacting, elapsed, silent := r.compacting, now.Sub(r.turnStart), now.Sub(r.lastActivity)
			r.mu.Unlock()
			if due {
				r.Broadcast(NewFrame(0, protocol.CompactProgressFrame{
					Type: protocol.FrameCompactProgress, Heartbeat: true, IsCompacting: compacting,
					ElapsedMS: elapsed.Milliseconds(), SilentMS: silent.Milliseconds(),
				}))
			}
		}
	}
}

func (r *Room) current() agent.Provider {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.prov
}

// provider returns the session's provider, creating it (no process yet)
// and its pump on first use.
func (r *Room) provider(ctx context.Context) (agent.Provider, error) {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	if p := r.current(); p != nil {
		return p, nil
	}
	var sess store.Session
	err := r.m.retryStore(ctx, true, func(ctx context.Context) error {
		var err error
		sess, err = r.m.cfg.Store.Get(ctx, r.id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", r.id, err)
	}
	desc, ok := providers.Lookup(sess.Provider)
	if !ok {
		return nil, fmt.Errorf("provider %q is not supported by this server", sess.Provider)
	}
	opts := agent.Options{
		Cwd:            sess.Cwd,
		Model:          sess.Model,
		PermissionMode: sess.PermissionMode,
		Resume:         sess.ProviderSessionID,
		// A fork's first run continues its parent's conversation as a
		// new one.
		Fork: sess.ParentID != "" && sess.Turns == 0 && sess.ProviderSessionID != "",
		Env:  r.m.cfg.Env,
		Log:  r.m.log.With("session_id", r.id),
	}
	var p agent.Provider
	if r.m.cfg.NewProvider != nil {
		p = r.m.cfg.NewProvider(opts)
	} else {
		if p, err = providers.NewAgent(ctx, r.m.cfg.Store, desc, opts, r.m.cfg.LookPath); err != nil {
			return nil, err
		}
	}
	done := make(chan struct{})
	r.mu.Lock()
	r.prov = p
	r.pumpDone = done
	r.cwd, r.model = sess.Cwd, sess.Model
	r.turnCount, r.turnCountKnown = sess.Turns, true
	r.providerLocked = r.providerLocked || sess.ProviderLocked // a lock is never undone
	r.mu.Unlock()
	r.m.setLive(r.id, true)
	r.m.pumps.Add(2)
	go func() {
		defer r.m.pumps.Done()
		defer close(done)
		r.pump(p, sess.ProviderSessionID, sess.Provider)
	}()
	go func() {
		defer r.m.pumps.Done()
		r.heartbeat(done)
	}()
	return p, nil
}

// closeProvider ends the provider; its pump ends after the last events.
func (r *Room) closeProvider() {
	if p := r.current(); p != nil {
		_ = p.Close()
	}
}

// pump turns p's events into frames until p's stream ends.
func (r *Room) pump(p agent.Provider, providerSessionID, providerName string) {
	ctx := context.Background()
	log := r.m.log.With("session_id", r.id)
	st := r.m.cfg.Store
	var ahead agent.Event // an event read ahead of its turn
	turnRecorded := false // the TurnEnded read ahead is recorded
	for {
		ev, err := ahead, error(nil)
		ahead = nil
		if ev == nil {
			ev, err = p.Events().Next(ctx)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		r.mu.Lock()
		r.lastActivity = time.Now()
		r.mu.Unlock()
		switch e := ev.(type) {
		case agent.Message:
			// The agent messages already waiting go to the log together.
			var run []agent.Message
			run, ahead = r.moreMessages(p, e)
			for _, e := range run {
				r.trackTools(e)
				switch {
				case e.Type == agent.TypeSystem && e.Subtype == "init":
					var init struct {
						Model string `json:"model"`
					}
					if json.Unmarshal(e.Raw, &init) == nil && init.Model != "" {
						r.mu.Lock()
						r.model = init.Model
						r.mu.Unlock()
					}
				}
			}
			for _, e := range run {
				if e.SessionID != "" && e.SessionID != providerSessionID {
					providerSessionID = e.SessionID
					sid := e.SessionID
					if err := r.m.retryStore(ctx, true, func(ctx context.Context) error {
						_, err := st.SetProviderSessionID(ctx, r.id, sid)
						return err
					}); err != nil {
						log.ErrorContext(ctx, "store provider session id", "err", err)
					}
				}
			}
			if run[len(run)-1].Type == agent.TypeResult {
				// The turn's result: its TurnEnded follows at once. The
				// turn is recorded (turns, cost, not running) before the
				// result goes out, so a client reading the session upon
				// the result sees it (and, stored above, its provider
				// session id).
				ahead = r.readAhead(p)
				if te, ok := ahead.(agent.TurnEnded); ok {
					r.recordTurn(ctx, te.CostUSD)
					turnRecorded = true
				}
			}
			r.appendAgentMessages(run)
		case agent.RawOutput:
			r.Broadcast(NewFrame(0, protocol.RawOutputFrame{Type: protocol.FrameRawOutput, Line: e.Line}))
		case agent.Stderr:
			r.Broadcast(NewFrame(0, protocol.StderrFrame{Type: protocol.FrameStderr, Line: e.Line}))
		case agent.PermissionRequest:
			// Recorded and addressed in one step: a socket joining now
			// gets it either replayed or live, never both.
			r.m.permSet(r.id, e)
			req := e
			r.m.notify(Wake{SessionID: r.id, Kind: WakePermissionRequest, Request: &req})
			r.mu.Lock()
			r.pending[e.RequestID] = e
			r.order = append(r.order, e.RequestID)
			sinks := r.sinkList()
			r.mu.Unlock()
			if h := r.m.cfg.Push; h != nil {
				h.PermissionRequested(r.id, e)
			}
			f := PermissionRequestFrame(e, false)
			for _, s := range sinks {
				s.Send(f)
			}
			if r.m.multi() {
				r.publish("", f)
			}
		case agent.PermissionRetired:
			if r.retire(e.RequestID) {
				r.resolved(e.RequestID, "", false, e.Reason, "")
			}
		case agent.Compaction:
			r.mu.Lock()
			r.compacting = e.Phase == agent.CompactionStarted
			compacting := r.compacting
			r.mu.Unlock()
			r.stateChanged()
			r.Broadcast(NewFrame(0, protocol.CompactProgressFrame{
				Type: protocol.FrameCompactProgress, Phase: e.Phase, Result: e.Result,
				Trigger: e.Trigger, IsCompacting: compacting,
			}))
		case agent.Command:
			r.recordCommand(ctx, e, providerSessionID) // commands.go
		case agent.ModeChanged:
			if _, err := st.SetPermissionMode(ctx, r.id, e.Mode); err != nil {
				log.ErrorContext(ctx, "store permission mode", "err", err)
			}
			r.m.notify(Wake{SessionID: r.id, Kind: WakeSession})
		case agent.ResumeLost:
			// The provider started a new conversation in its place.
			providerSessionID = ""
			if _, err := st.SetProviderSessionID(ctx, r.id, ""); err != nil {
				log.ErrorContext(ctx, "clear provider session id", "err", err)
			}
			r.storeNoticeAs(ctx, ResumeLostNotice(e.Reason), r.runningPromptLine(), protocol.NoticeResumeLost)
		case agent.TurnStarted:
			r.setRunning(true)
			r.turnStarted(providerName)
		case agent.TurnEnded:
			if !turnRecorded {
				r.recordTurn(ctx, e.CostUSD)
			}
			turnRecorded = false
			r.turnEnded(&e, "")
			r.kickQueue()
		case agent.ProcessExited:
			r.mu.Lock()
			r.running, r.compacting = false, false
			cut := e.TurnRunning
			r.mu.Unlock()
			r.stateChanged()
			// chat shutting down (SIGTERM) closes the process: the turn
			// is interrupted as by a crash of chat (recover.go), said in
			// the log, which the sockets, closed already, read when they
			// come back.
			shutdown := e.Cause == agent.ExitClosed && r.m.closing.Load()
			if cut {
				promptLine := r.runningPromptLine()
				if shutdown {
					r.turnEnded(nil, "interrupted")
					r.storeNoticeAs(ctx, InterruptedNotice, promptLine, protocol.NoticeServerRestarted)
				} else {
					r.turnEnded(nil, "process_exited")
				}
				// A turn the agent never finished (a crash before its
				// first line, or later): the log says why.
				if e.Cause == agent.ExitCrashed || e.Cause == agent.ExitExited {
					r.storeNotice(ctx, "the agent ended before finishing the turn: "+e.Reason, promptLine)
				}
			}
			if e.Cause != agent.ExitClosed {
				r.kickQueue() // a turn cut off, or a process to respawn
			}
			if e.Cause != agent.ExitRespawn {
				r.Broadcast(NewFrame(0, protocol.SessionEndedFrame{
					Type: protocol.FrameSessionEnded, Reason: e.Reason, Cause: e.Cause, ExitCode: e.ExitCode,
				}))
			}
		}
	}
	r.mu.Lock()
	mine := r.prov == p
	if mine {
		r.prov = nil
		r.sent, r.turns = nil, nil
	}
	r.running, r.compacting = false, false
	r.mu.Unlock()
	r.stateChanged()
	if mine {
		r.m.setLive(r.id, false)
	}
}

// maxRun bounds the agent messages appended together.
const maxRun = 64

// moreMessages returns first and the agent messages already queued after
// it (up to maxRun in all, ending at a result), and the event read past
// them, if any, for the pump to handle next.
func (r *Room) moreMessages(p agent.Provider, first agent.Message) (run []agent.Message, next agent.Event) {
	run = []agent.Message{first}
	now, cancel := context.WithCancel(context.Background())
	cancel() // Next returns a queued event, or at once the context's error
	for len(run) < maxRun && run[len(run)-1].Type != agent.TypeResult {
		ev, err := p.Events().Next(now)
		if err != nil {
			return run, nil
		}
		m, ok := ev.(agent.Message)
		if !ok {
			return run, ev
		}
		run = append(run, m)
	}
	return run, nil
}

// appendAgentMessages stores run as the next lines of the log, in one
// group commit, and broadcasts their frames in order once committed. A
// message goes to no socket before it has its line: one that cannot be
// stored (PostgreSQL unreachable for longer than the appends are tried
// again) is not sent at all, and the next append stores a gap notice that
// counts it (withGapLocked).
func (r *Room) appendAgentMessages(run []agent.Message) {
	r.appendMu.Lock()
	defer r.appendMu.Unlock()
	items := make([]store.Append, len(run))
	after := r.sentLine()
	for i, e := range run {
		items[i] = store.Append{SessionID: r.id, Kind: store.KindAgent, Payload: e.Raw, After: after}
	}
	items, gap := r.withGapLocked(items)
	res := r.gapStoredLocked(r.m.appends.appendAll(items), gap)
	for i, e := range run {
		if err := res[i].err; err != nil {
			r.m.log.Error("store agent message: it is not sent, a gap notice will stand for it", "session_id", r.id, "err", err)
			if errors.Is(err, store.ErrNotFound) {
				continue // the session is gone
			}
			if r.unstored == 0 {
				r.unstoredWhy = "the database refused it"
				if store.Unavailable(err) {
					r.unstoredWhy = fmt.Sprintf("the database was unreachable for over %s", appendTimeout)
				}
			}
			r.unstored++
			continue
		}
		r.broadcastGap(res[i].msg)
		line := res[i].msg.Line
		r.Broadcast(NewFrame(line, protocol.AgentMessageFrame{Type: protocol.FrameAgentMessage, Data: e.Raw, Line: line}))
	}
}

// readAhead returns p's next event if one comes within readAheadTimeout,
// else nil (the pump reads it in its turn).
func (r *Room) readAhead(p agent.Provider) agent.Event {
	ctx, cancel := context.WithTimeout(context.Background(), readAheadTimeout)
	defer cancel()
	ev, err := p.Events().Next(ctx)
	if err != nil {
		return nil
	}
	return ev
}

// recordTurn marks the turn ended (not running, not compacting) and counts
// it, with its cost, in the session.
func (r *Room) recordTurn(ctx context.Context, costUSD float64) {
	r.mu.Lock()
	r.running, r.compacting = false, false
	r.mu.Unlock()
	r.stateChanged()
	// Tried again while PostgreSQL cannot be reached, but only when the
	// try surely changed nothing: a turn counted twice is worse than one
	// left uncounted.
	var sess store.Session
	err := r.m.retryStore(ctx, false, func(ctx context.Context) error {
		var err error
		sess, err = r.m.cfg.Store.RecordTurn(ctx, r.id, costUSD)
		return err
	})
	if err != nil {
		r.m.log.ErrorContext(ctx, "record turn", "session_id", r.id, "err", err)
	}
	r.mu.Lock()
	// A failed write leaves the count unknown: the next turn start reads it.
	r.turnCount, r.turnCountKnown = sess.Turns, err == nil
	r.providerLocked = r.providerLocked || err == nil // RecordTurn locks it too
	r.mu.Unlock()
	r.m.notify(Wake{SessionID: r.id, Kind: WakeSession}) // its turns and cost
}

// retire forgets a pending request and reports whether it was pending.
func (r *Room) retire(id string) bool {
	r.m.permDel(r.id, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.pending[id]; !ok {
		return false
	}
	delete(r.pending, id)
	for i, o := range r.order {
		if o == id {
			r.order = append(r.order[:i], r.order[i+1:]...)
			break
		}
	}
	return true
}

// PermissionRequestFrame is the permission_request frame of p.
func PermissionRequestFrame(p agent.PermissionRequest, replay bool) Frame {
	f := protocol.PermissionRequestFrame{
		Type: protocol.FramePermissionRequest, RequestID: p.RequestID, ToolName: p.ToolName,
		Input: p.Input, Suggestions: p.Suggestions, Replay: replay,
	}
	if p.Input == nil {
		f.Input = json.RawMessage("{}")
	}
	if p.Suggestions == nil {
		f.Suggestions = []json.RawMessage{}
	}
	fr := NewFrame(0, f)
	fr.Request = p.RequestID
	return fr
}

// resolved broadcasts permission_resolved.
func (r *Room) resolved(requestID, behavior string, ok bool, reason, answeredBy string) {
	f := protocol.PermissionResolvedFrame{
		Type: protocol.FramePermissionResolved, RequestID: requestID, Behavior: behavior, OK: ok,
		Reason: reason, AnsweredBy: answeredBy,
	}
	r.Broadcast(NewFrame(0, f))
	r.m.notify(Wake{SessionID: r.id, Kind: WakePermissionResolved, Resolved: &f})
	if h := r.m.cfg.Push; h != nil {
		h.PermissionResolved(r.id, requestID)
	}
}

// PermissionResponse answers a pending request and broadcasts
// permission_resolved, with answeredBy (the answering page's label, "" if
// none); ok is false when the request is not pending.
func (r *Room) PermissionResponse(ctx context.Context, requestID string, d agent.PermissionDecision, answeredBy string) {
	r.respond(ctx, requestID, d, answeredBy)
}

// respond is PermissionResponse, reporting whether the agent took the
// answer.
func (r *Room) respond(ctx context.Context, requestID string, d agent.PermissionDecision, answeredBy string) bool {
	ok := false
	var failure error
	if p := r.current(); p != nil {
		cctx, cancel := context.WithTimeout(ctx, controlTimeout)
		err := p.RespondPermission(cctx, requestID, d)
		cancel()
		ok = err == nil
		if err != nil && !errors.Is(err, agent.ErrPermissionExpired) {
			failure = err
		}
	}
	r.retire(requestID)
	if failure != nil {
		r.Broadcast(ErrorFrame("permission response: " + failure.Error()))
	}
	r.resolved(requestID, string(d.Behavior), ok, "", answeredBy)
	return ok
}

// Stop interrupts the running turn, then broadcasts `stopped`.
func (r *Room) Stop(ctx context.Context) (agent.InterruptOutcome, error) {
	outcome := agent.InterruptIdle
	var err error
	if p := r.current(); p != nil {
		cctx, cancel := context.WithTimeout(ctx, controlTimeout)
		outcome, err = p.Interrupt(cctx)
		cancel()
	}
	r.Broadcast(NewFrame(0, protocol.StoppedFrame{Type: protocol.FrameStopped, Outcome: string(outcome)}))
	return outcome, err
}

// applyMode applies mode to the live provider, if any.
func (r *Room) applyMode(ctx context.Context, mode string) (agent.Applied, error) {
	p := r.current()
	if p == nil {
		return agent.AppliedNextTurn, nil
	}
	cctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	return p.SetPermissionMode(cctx, mode)
}

// SetPermissionMode validates, applies and persists a mode change and
// broadcasts permission_mode_changed.
func (r *Room) SetPermissionMode(ctx context.Context, mode string) error {
	if !providers.ValidMode(mode) {
		return fmt.Errorf("unknown permission mode %q: use one of %v", mode, providers.PermissionModes)
	}
	applied, err := r.applyMode(ctx, mode)
	if err != nil {
		return fmt.Errorf("set permission mode: %w", err)
	}
	if _, err := r.m.cfg.Store.SetPermissionMode(ctx, r.id, mode); err != nil {
		return fmt.Errorf("store permission mode: %w", err)
	}
	r.m.notify(Wake{SessionID: r.id, Kind: WakeSession})
	r.Broadcast(NewFrame(0, protocol.PermissionModeChangedFrame{Type: protocol.FramePermissionModeChanged, Mode: mode, Applied: string(applied)}))
	return nil
}

// Clear is clear_session: it ends the agent process (waiting for its last
// events), retires the pending permission requests (permission_resolved
// ok:false, reason "session_cleared"), moves the conversation into a new
// archived session (store.Clear) and broadcasts session_cleared with both
// ids. The next user message starts a fresh process and conversation.
func (r *Room) Clear(ctx context.Context) (store.Session, error) {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	r.mu.Lock()
	p, done := r.prov, r.pumpDone
	r.mu.Unlock()
	if p != nil {
		_ = p.Close()
		select {
		case <-done:
		case <-ctx.Done():
			return store.Session{}, ctx.Err()
		}
	}
	r.mu.Lock()
	ids := r.order
	r.order, r.pending = nil, map[string]agent.PermissionRequest{}
	r.running, r.compacting = false, false
	r.mu.Unlock()
	r.stateChanged()
	r.m.permDel(r.id, ids...)
	for _, id := range ids {
		r.resolved(id, "", false, "session_cleared", "")
	}
	r.appendMu.Lock()
	archived, err := r.m.cfg.Store.Clear(ctx, r.id)
	r.appendMu.Unlock()
	if err != nil {
		return store.Session{}, err
	}
	r.Broadcast(NewFrame(0, protocol.SessionClearedFrame{
		Type: protocol.FrameSessionCleared, SessionID: r.id, ArchivedSessionID: archived.ID,
	}))
	r.m.notify(Wake{SessionID: r.id, Kind: WakeSession})
	r.m.notify(Wake{SessionID: archived.ID, Kind: WakeSession})
	return archived, nil
}

// AskUserTool is the tool whose permission request is an ask-user prompt
// (Claude Code's AskUserQuestion), answered with tool_answer.
const AskUserTool = "AskUserQuestion"

// ToolAnswer is tool_answer: it answers the pending ask-user permission
// request requestID by allowing it with updated_input = the request's input
// plus "answers": answers (Claude Code reads the user's choices from the
// AskUserQuestion input's answers object). permission_resolved (behavior
// allow) goes to every sink, ok false when the request is not pending.
func (r *Room) ToolAnswer(ctx context.Context, requestID string, answers json.RawMessage, answeredBy string) error {
	r.mu.Lock()
	req, pending := r.pending[requestID]
	r.mu.Unlock()
	if !pending {
		r.resolved(requestID, string(agent.Allow), false, "", answeredBy)
		return nil
	}
	input := map[string]json.RawMessage{}
	if len(req.Input) > 0 {
		if err := json.Unmarshal(req.Input, &input); err != nil {
			return fmt.Errorf("tool_answer: the prompt's input is not an object: %w", err)
		}
	}
	input["answers"] = answers
	updated, err := json.Marshal(input)
	if err != nil {
		return fmt.Errorf("tool_answer: %w", err)
	}
	r.PermissionResponse(ctx, requestID, agent.PermissionDecision{Behavior: agent.Allow, UpdatedInput: updated}, answeredBy)
	return nil
}
