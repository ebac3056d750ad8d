// Package push is chat's Web Push: the VAPID key pair of the data home
// (keys.go), the browsers subscribed to notifications (subs.go, table
// push_subscriptions), the routes under /api/push (api.go), and the
// Service that decides when a push goes and sends it (RFC 8030 with RFC
// 8291 encryption and RFC 8292 VAPID, through webpush-go), with retries,
// TTL and urgency.
//
// A push goes when a permission request waits and no socket of the session
// watches it (said visibility visible), and when a turn ended after running
// longer than the push_turn_seconds config key (same rule). The Service is
// told of those events by internal/room on the instance that owns the
// session, and takes a Redis SET NX per event before it sends, so that one
// event makes one push whatever the number of instances. A permission push
// carries a single-use answer token (token.go) for POST /api/push/answer.
package push

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/SherClockHolmes/webpush-go"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/room"
)

// Defaults of Config.
const (
	DefaultSubject   = "mailto:svc-code@localhost"
	DefaultAttempts  = 4
	DefaultRetryBase = time.Second
	// DefaultPermissionTTL is the life of a permission push: its answer
	// token's, the push service's TTL for an offline device, and the
	// record that makes the request's "resolved" push follow. A day, so
	// that a request left waiting overnight is still answered from the
	// notification in the morning, and a request answered hours later in
	// the app still closes the notification on the phone.
	DefaultPermissionTTL = 24 * time.Hour
	// DefaultTestWait is how long POST /api/push/test waits for the
	// outcome of its push before it answers 202.
	DefaultTestWait = 10 * time.Second
	// TurnTTL is how long a push service keeps a turn-end push for an
	// offline device.
	TurnTTL = time.Hour
	// maxRetryWait caps one wait between tries (a Retry-After too).
	maxRetryWait = 30 * time.Second
	// MaxPayload bounds a payload's plaintext; a permission's input is cut
	// to fit (the record, padded by the library, is 4096 bytes).
	MaxPayload = 3800
	// visibleTTL is how long a socket's "visible" lives in Redis without
	// renewal (renewed every third of it while the socket is open).
	visibleTTL = 60 * time.Second
	// hookTimeout bounds the Redis and PostgreSQL calls made on the
	// room's path.
	hookTimeout = 2 * time.Second
	queueLen    = 256
	// laneLen bounds the pushes waiting for one device; a lane idle for
	// laneIdle ends (the next push starts it again).
	laneLen  = 64
	laneIdle = time.Minute
)

// Runtime is what the Service asks of the sessions' runtime
// (room.Manager).
type Runtime interface {
	AnswerPush(ctx context.Context, sessionID, requestID, digest string, d agent.PermissionDecision) (bool, error)
	PendingCount(ctx context.Context) (int, error)
}

// Config is what a Service needs.
type Config struct {
	Keys Keys
	// Subject is the VAPID sub claim: a mailto: or https: URL.
	Subject string
	Subs    Subs
	Redis   *redis.Client
	Prefix  string
	// Instance names this chat instance (in the SET NX values).
	Instance string
	// TokenKey seals the answer tokens (internalauth Derive of
	// TokenKeyPurpose); nil: a random key (one instance only).
	TokenKey []byte
	Runtime  Runtime
	// Title returns a session's title ("" if none).
	Title func(ctx context.Context, sessionID string) string
	// TurnThreshold returns push_turn_seconds now; 0 or less: never.
	TurnThreshold func(ctx context.Context) time.Duration
	// Client sends the pushes; nil: a client with a 30 s timeout.
	Client *http.Client
	// Attempts bounds the tries of one push (429, 5xx, network errors are
	// tried again); RetryBase is the first wait, doubled each time.
	Attempts      int
	RetryBase     time.Duration
	PermissionTTL time.Duration
	// TestWait bounds the wait of POST /api/push/test for its outcome.
	TestWait time.Duration
	Log      *slog.Logger
}

// Service sends the pushes. It implements room.PushHook.
type Service struct {
	cfg    Config
	tokens tokens
	queue  chan job
	// running is set by Run; jobs queued when it is not are dropped.
	running atomic.Bool
	done    chan struct{}

	mu       sync.Mutex
	watching map[any]watch // socket -> what it watches
	nextW    uint64

	// lanes: one goroutine per subscription with pushes to send, so that
	// a device whose push service is slow or failing (tries and waits of
	// up to a minute and a half) never holds back the others' pushes.
	// Each lane sends its device's pushes in the order they were queued.
	lanesMu sync.Mutex
	lanes   map[string]chan laneJob
	laneWG  sync.WaitGroup
}

type laneJob struct {
	sub Sub
	j   job
}

type watch struct{ session, member string }

// job is one payload for every subscription.
type job struct {
	payload []byte
	ttl     time.Duration
	urgency webpush.Urgency
	topic   string
	only    string // one subscription's id (test push); "" for all
	// done, when set (a test push), is given the outcome for only.
	done chan<- protocol.PushTestResult
}

var _ room.PushHook = (*Service)(nil)

// New returns a Service; Run makes it send.
func New(cfg Config) *Service {
	if cfg.Subject == "" {
		cfg.Subject = DefaultSubject
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = DefaultAttempts
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.TestWait <= 0 {
		cfg.TestWait = DefaultTestWait
	}
	if cfg.PermissionTTL <= 0 {
		cfg.PermissionTTL = DefaultPermissionTTL
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Title == nil {
		cfg.Title = func(context.Context, string) string { return "" }
	}
	if cfg.TurnThreshold == nil {
		cfg.TurnThreshold = func(context.Context) time.Duration { return 0 }
	}
	return &Service{
		cfg: cfg, tokens: newTokens(cfg.TokenKey), queue: make(chan job, queueLen), done: make(chan struct{}),
		watching: map[any]watch{}, lanes: map[string]chan laneJob{},
	}
}

func (s *Service) key(parts ...string) string {
	return s.cfg.Prefix + "chat:push:" + strings.Join(parts, ":")
}

// Run hands the queued pushes to their devices' lanes, in order, and
// renews the visibility of this instance's sockets, until ctx ends; then
// it returns once the pushes being sent are done with.
func (s *Service) Run(ctx context.Context) {
	s.running.Store(true)
	defer close(s.done)
	defer s.cfg.Client.CloseIdleConnections()
	defer s.laneWG.Wait()
	defer s.running.Store(false)
	renew := time.NewTicker(visibleTTL / 3)
	defer renew.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-s.queue:
			s.send(ctx, j)
		case <-renew.C:
			s.renewVisible(ctx)
		}
	}
}

// SetRuntime sets Config.Runtime (the runtime is made after the Service,
// which it is given as its PushHook). Call it before Run.
func (s *Service) SetRuntime(rt Runtime) { s.cfg.Runtime = rt }

// Done is closed when Run has returned.
func (s *Service) Done() <-chan struct{} { return s.done }

func (s *Service) enqueue(j job) bool {
	if !s.running.Load() {
		return false
	}
	select {
	case s.queue <- j:
		return true
	default:
		s.cfg.Log.Error("push queue full: a push is dropped")
		return false
	}
}

// topic names the pushes of one permission request for the push service
// (RFC 8030 Topic: a later one replaces an undelivered earlier one).
func topic(session, request string) string {
	h := sha256.Sum256([]byte(session + "\x00" + request))
	return base64.RawURLEncoding.EncodeToString(h[:24]) // 32 characters
}

// PermissionRequested implements room.PushHook.
func (s *Service) PermissionRequested(sessionID string, req agent.PermissionRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	if !s.running.Load() || s.watched(ctx, sessionID) || !s.anySubs(ctx) {
		return
	}
	ttl := s.cfg.PermissionTTL
	ok, err := s.cfg.Redis.SetNX(ctx, s.key("sent", sessionID, req.RequestID), s.cfg.Instance, ttl).Result()
	if err != nil || !ok {
		if err != nil {
			s.cfg.Log.ErrorContext(ctx, "push: claim the permission push", "session_id", sessionID, "err", err)
		}
		return
	}
	expires := time.Now().Add(ttl)
	p := protocol.PushPayload{
		Kind: protocol.PushPermission, SessionID: sessionID, SessionTitle: s.cfg.Title(ctx, sessionID),
		RequestID: req.RequestID, ToolName: req.ToolName, Input: req.Input,
		Token:     s.tokens.issue(sessionID, req.RequestID, room.RequestDigest(req), expires),
		ExpiresAt: expires.UTC().Format(time.RFC3339), Pending: s.pending(ctx),
		URL: "/s/" + sessionID + "?perm=" + req.RequestID,
	}
	if len(p.Input) == 0 {
		p.Input = json.RawMessage("{}")
	}
	s.enqueue(job{payload: fitPayload(p), ttl: ttl, urgency: webpush.UrgencyHigh, topic: topic(sessionID, req.RequestID)})
}

// fitPayload encodes p, cutting its input to a string preview when the
// whole does not fit MaxPayload.
func fitPayload(p protocol.PushPayload) []byte {
	b, _ := json.Marshal(p)
	if len(b) <= MaxPayload {
		return b
	}
	whole := string(p.Input)
	p.InputTruncated = true
	n := len(whole)
	for n > 0 {
		over := len(b) - MaxPayload
		if over > 0 {
			n -= max(over, 16)
		}
		n = max(n, 0)
		cut := whole[:n]
		for !utf8.ValidString(cut) {
			cut = cut[:len(cut)-1]
		}
		p.Input, _ = json.Marshal(cut + "…")
		b, _ = json.Marshal(p)
		if len(b) <= MaxPayload {
			return b
		}
	}
	p.Input, _ = json.Marshal("…")
	b, _ = json.Marshal(p)
	return b
}

// PermissionResolved implements room.PushHook: when a push went for the
// request, a "resolved" one follows (same topic), so that the device can
// close the notification.
func (s *Service) PermissionResolved(sessionID, requestID string) {
	if !s.running.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	n, err := s.cfg.Redis.Del(ctx, s.key("sent", sessionID, requestID)).Result()
	if err != nil || n == 0 {
		return
	}
	b, _ := json.Marshal(protocol.PushPayload{Kind: protocol.PushResolved, SessionID: sessionID, RequestID: requestID, Pending: s.pending(ctx)})
	s.enqueue(job{payload: b, ttl: s.cfg.PermissionTTL, urgency: webpush.UrgencyNormal, topic: topic(sessionID, requestID)})
}

// TurnEnded implements room.PushHook.
func (s *Service) TurnEnded(sessionID, turnID string, took time.Duration, costUSD float64, status string) {
	// push_turn_seconds is a whole number of seconds: a shorter turn needs
	// no look at it (most turns: nothing on the pump's path).
	if !s.running.Load() || took < time.Second {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	limit := s.cfg.TurnThreshold(ctx)
	if limit <= 0 || took < limit || s.watched(ctx, sessionID) || !s.anySubs(ctx) {
		return
	}
	ok, err := s.cfg.Redis.SetNX(ctx, s.key("turn", sessionID, turnID), s.cfg.Instance, TurnTTL).Result()
	if err != nil || !ok {
		return
	}
	b, _ := json.Marshal(protocol.PushPayload{
		Kind: protocol.PushTurnEnded, SessionID: sessionID, SessionTitle: s.cfg.Title(ctx, sessionID),
		DurationMS: took.Milliseconds(), CostUSD: costUSD, Status: status, URL: "/s/" + sessionID, Pending: s.pending(ctx),
	})
	s.enqueue(job{payload: b, ttl: TurnTTL, urgency: webpush.UrgencyNormal})
}

// ErrBusy is the error of a test push that could not be queued (the
// Service is not running, or its queue is full).
var ErrBusy = errors.New("the push queue is not taking pushes")

// Test queues a test push to the subscription id and waits, until ctx
// ends, for its outcome. done is false when ctx ended first: the push is
// still being tried, and its outcome goes to the subscription's record
// only.
func (s *Service) Test(ctx context.Context, id string) (res protocol.PushTestResult, done bool, err error) {
	b, _ := json.Marshal(protocol.PushPayload{Kind: protocol.PushTest, Pending: s.pending(ctx)})
	out := make(chan protocol.PushTestResult, 1)
	if !s.enqueue(job{payload: b, ttl: time.Minute, urgency: webpush.UrgencyNormal, only: id, done: out}) {
		return res, false, ErrBusy
	}
	select {
	case res = <-out:
		return res, true, nil
	case <-ctx.Done():
		return res, false, nil
	}
}

func (s *Service) pending(ctx context.Context) int {
	if s.cfg.Runtime == nil {
		return 0
	}
	n, err := s.cfg.Runtime.PendingCount(ctx)
	if err != nil {
		s.cfg.Log.ErrorContext(ctx, "push: count the pending requests", "err", err)
	}
	return n
}

func (s *Service) anySubs(ctx context.Context) bool {
	var one bool
	err := s.cfg.Subs.DB.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM push_subscriptions)`).Scan(&one)
	if err != nil {
		s.cfg.Log.ErrorContext(ctx, "push: read the subscriptions", "err", err)
	}
	return one
}

// SetVisible records whether the socket key (of session) is visible to
// its user; a closing socket says false.
func (s *Service) SetVisible(sessionID string, key any, visible bool) {
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	s.mu.Lock()
	w, had := s.watching[key]
	if visible && !had {
		s.nextW++
		w = watch{session: sessionID, member: s.cfg.Instance + ":" + strconv.FormatUint(s.nextW, 10)}
		s.watching[key] = w
	}
	if !visible {
		delete(s.watching, key)
	}
	s.mu.Unlock()
	var err error
	switch {
	case visible:
		err = s.cfg.Redis.ZAdd(ctx, s.key("vis", w.session), redis.Z{Score: float64(time.Now().Add(visibleTTL).UnixMilli()), Member: w.member}).Err()
		if err == nil {
			err = s.cfg.Redis.PExpire(ctx, s.key("vis", w.session), visibleTTL).Err()
		}
	case had:
		err = s.cfg.Redis.ZRem(ctx, s.key("vis", w.session), w.member).Err()
	}
	if err != nil {
		s.cfg.Log.ErrorContext(ctx, "push: record a socket's visibility", "session_id", sessionID, "err", err)
	}
}

// watched reports whether a socket on any instance watches the session.
func (s *Service) watched(ctx context.Context, sessionID string) bool {
	s.mu.Lock()
	for _, w := range s.watching {
		if w.session == sessionID {
			s.mu.Unlock()
			return true
		}
	}
	s.mu.Unlock()
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	n, err := s.cfg.Redis.ZCount(ctx, s.key("vis", sessionID), "("+now, "+inf").Result()
	if err != nil {
		s.cfg.Log.ErrorContext(ctx, "push: read the session's visibility", "session_id", sessionID, "err", err)
		return false
	}
	return n > 0
}

// renewVisible renews this instance's visible sockets in Redis.
func (s *Service) renewVisible(ctx context.Context) {
	s.mu.Lock()
	ws := make([]watch, 0, len(s.watching))
	for _, w := range s.watching {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	if len(ws) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	now := time.Now()
	pipe := s.cfg.Redis.Pipeline()
	for _, w := range ws {
		k := s.key("vis", w.session)
		pipe.ZRemRangeByScore(cctx, k, "-inf", strconv.FormatInt(now.UnixMilli(), 10))
		pipe.ZAdd(cctx, k, redis.Z{Score: float64(now.Add(visibleTTL).UnixMilli()), Member: w.member})
		pipe.PExpire(cctx, k, visibleTTL)
	}
	if _, err := pipe.Exec(cctx); err != nil {
		s.cfg.Log.ErrorContext(ctx, "push: renew the sockets' visibility", "err", err)
	}
}

// send hands j to the lane of each of its subscriptions.
func (s *Service) send(ctx context.Context, j job) {
	if j.only != "" {
		sub, err := s.cfg.Subs.Get(ctx, j.only)
		if err != nil {
			if j.done != nil {
				res := protocol.PushTestResult{Error: "the subscription could not be read: " + err.Error()}
				if errors.Is(err, ErrNotFound) {
					res = protocol.PushTestResult{Removed: true, Error: "the subscription was removed before the push went"}
				}
				j.done <- res
			}
			return
		}
		s.toLane(ctx, sub, j)
		return
	}
	subs, err := s.cfg.Subs.List(ctx)
	if err != nil {
		s.cfg.Log.ErrorContext(ctx, "push: list the subscriptions", "err", err)
		return
	}
	for _, sub := range subs {
		s.toLane(ctx, sub, j)
	}
}

// toLane queues j for sub on its lane, starting the lane if it has none.
// The send happens under lanesMu, so a lane that ends when idle (under
// the same lock, with nothing queued) never strands a push.
func (s *Service) toLane(ctx context.Context, sub Sub, j job) {
	s.lanesMu.Lock()
	defer s.lanesMu.Unlock()
	lane := s.lanes[sub.ID]
	if lane == nil {
		lane = make(chan laneJob, laneLen)
		s.lanes[sub.ID] = lane
		s.laneWG.Add(1)
		go s.runLane(ctx, sub.ID, lane)
	}
	select {
	case lane <- laneJob{sub: sub, j: j}:
	default:
		s.cfg.Log.ErrorContext(ctx, "push: too many pushes wait for this device: one is dropped", "subscription", sub.ID)
		if j.done != nil {
			j.done <- protocol.PushTestResult{Error: "too many pushes are waiting for this device"}
		}
	}
}

// runLane sends the pushes of one subscription, one at a time, until ctx
// ends or it has been idle for laneIdle.
func (s *Service) runLane(ctx context.Context, id string, lane chan laneJob) {
	defer s.laneWG.Done()
	idle := time.NewTimer(laneIdle)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case lj := <-lane:
			res := s.deliver(ctx, lj.sub, lj.j)
			if lj.j.done != nil {
				lj.j.done <- res
			}
			idle.Reset(laneIdle)
		case <-idle.C:
			s.lanesMu.Lock()
			if len(lane) == 0 {
				delete(s.lanes, id)
				s.lanesMu.Unlock()
				return
			}
			s.lanesMu.Unlock()
			idle.Reset(laneIdle)
		}
	}
}

// deliver sends j to sub, trying again on 429, 5xx and network errors (up
// to Attempts tries, waits doubling from RetryBase, or Retry-After, each
// capped at maxRetryWait); 404 and 410 delete the subscription. It
// returns the outcome (recorded on the subscription too).
func (s *Service) deliver(ctx context.Context, sub Sub, j job) protocol.PushTestResult {
	wait := s.cfg.RetryBase
	log := s.cfg.Log.With("subscription", sub.ID)
	for attempt := 1; ; attempt++ {
		status, retryAfter, err := s.post(ctx, sub, j)
		var failure string
		switch {
		case err == nil && status >= 200 && status < 300:
			s.record(sub.ID, "")
			return protocol.PushTestResult{Delivered: true, Status: status}
		case err == nil && (status == http.StatusNotFound || status == http.StatusGone):
			log.InfoContext(ctx, "push: the push service says the subscription is gone; it is deleted", "status", status)
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hookTimeout)
			if err := s.cfg.Subs.DeleteEndpoint(dctx, sub.ID, sub.Endpoint); err != nil {
				log.ErrorContext(ctx, "push: delete the subscription", "err", err)
			}
			cancel()
			return protocol.PushTestResult{
				Status: status, Removed: true,
				Error: fmt.Sprintf("the push service says this subscription is gone (%d): it was removed", status),
			}
		case err != nil:
			failure = "could not reach the push service: " + err.Error()
		case status == http.StatusTooManyRequests || status >= 500:
			failure = fmt.Sprintf("the push service answered %d", status)
		default:
			failure = fmt.Sprintf("the push service refused the push: %d", status)
			s.record(sub.ID, failure)
			return protocol.PushTestResult{Status: status, Error: failure}
		}
		if attempt >= s.cfg.Attempts || ctx.Err() != nil {
			log.ErrorContext(ctx, "push: giving up", "attempts", attempt, "err", failure)
			s.record(sub.ID, failure)
			return protocol.PushTestResult{Status: status, Error: failure}
		}
		d := wait
		if retryAfter > 0 {
			d = retryAfter
		}
		d = min(d, maxRetryWait)
		wait = min(wait*2, maxRetryWait)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// post makes one try.
func (s *Service) post(ctx context.Context, sub Sub, j job) (status int, retryAfter time.Duration, err error) {
	// The library pads the message by appending to it: capped at its
	// length, the shared payload is copied, never written (lanes send it
	// at the same time).
	msg := j.payload[:len(j.payload):len(j.payload)]
	resp, err := webpush.SendNotificationWithContext(ctx, msg, &webpush.Subscription{
		Endpoint: sub.Endpoint, Keys: webpush.Keys{P256dh: sub.P256dh, Auth: sub.Auth},
	}, &webpush.Options{
		HTTPClient: s.cfg.Client, Subscriber: strings.TrimPrefix(s.cfg.Subject, "mailto:"),
		TTL: int(j.ttl / time.Second), Urgency: j.urgency, Topic: j.topic,
		VAPIDPublicKey: s.cfg.Keys.Public, VAPIDPrivateKey: s.cfg.Keys.Private,
	})
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if v, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && v > 0 {
		retryAfter = time.Duration(v) * time.Second
	}
	return resp.StatusCode, retryAfter, nil
}

func (s *Service) record(id, failure string) {
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	if err := s.cfg.Subs.Delivered(ctx, id, failure); err != nil {
		s.cfg.Log.ErrorContext(ctx, "push: record the outcome", "subscription", id, "err", err)
	}
}

// Answer errors.
var (
	// ErrForbidden: the token is not one of ours, expired, or used.
	ErrForbidden = errors.New("forbidden")
	// ErrGone: the token's request is no longer pending.
	ErrGone = errors.New("gone")
)

// Answer answers the permission request of token with decision, once.
func (s *Service) Answer(ctx context.Context, token string, decision agent.Behavior) (sessionID, requestID string, err error) {
	c, err := s.tokens.open(token, time.Now())
	if err != nil {
		return "", "", ErrForbidden
	}
	ttl := time.Until(time.Unix(c.Expires, 0)) + time.Second
	fresh, err := s.cfg.Redis.SetNX(ctx, s.key("used", c.Nonce), "1", ttl).Result()
	if err != nil {
		return "", "", fmt.Errorf("push answer: %w", err)
	}
	if !fresh {
		return "", "", ErrForbidden
	}
	ok, err := s.cfg.Runtime.AnswerPush(ctx, c.Session, c.Request, c.Digest, agent.PermissionDecision{Behavior: decision})
	if err != nil {
		return "", "", err
	}
	if !ok {
		return c.Session, c.Request, ErrGone
	}
	return c.Session, c.Request, nil
}
