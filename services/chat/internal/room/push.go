package room

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// Web Push (internal/push) learns of the events it notifies from the
// instance that owns the session, where they happen once: a permission
// request arriving, one resolved, a turn ending. The hook's methods are
// called on the pump's path and must return quickly.

// PushHook is told of the events a push may go for.
type PushHook interface {
	// PermissionRequested: req now waits in the session (it is pending
	// here already).
	PermissionRequested(sessionID string, req agent.PermissionRequest)
	// PermissionResolved: the request is no longer pending, however it
	// ended.
	PermissionResolved(sessionID, requestID string)
	// TurnEnded: a turn of the session ended after running for took; status
	// is "success", "error" or why it was cut ("interrupted", ...).
	TurnEnded(sessionID, turnID string, took time.Duration, costUSD float64, status string)
}

// apiAnswer is the relayed answer of POST /api/push/answer.
const apiAnswer = "api_answer"

// notPending is the error text of an apiAnswer whose request is not (or
// no longer) pending, or not the one the token was made for.
const notPending = "the permission request is not pending"

// AnsweredByPush labels the answers given from a notification.
const AnsweredByPush = "notification"

// AnswerPush answers the pending permission request requestID of the
// session, on the instance that owns it, if it is pending and its tool and
// input still have digest (digest(tool, input) as the token was made for);
// answered is false when it is not.
func (m *Manager) AnswerPush(ctx context.Context, sessionID, requestID, digest string, d agent.PermissionDecision) (answered bool, err error) {
	cmd := Command{Type: apiAnswer, RequestID: requestID, Decision: d, AnsweredBy: AnsweredByPush, Digest: digest}
	if _, ok, err := m.relay(ctx, sessionID, cmd); ok {
		if err != nil && err.Error() == notPending {
			return false, nil
		}
		return err == nil, err
	}
	r := m.lookup(sessionID)
	if r == nil {
		return false, nil
	}
	return r.answerPush(ctx, cmd), nil
}

// answerPush answers cmd's request here if it is pending with its digest.
func (r *Room) answerPush(ctx context.Context, cmd Command) bool {
	r.mu.Lock()
	req, ok := r.pending[cmd.RequestID]
	r.mu.Unlock()
	if !ok || RequestDigest(req) != cmd.Digest {
		return false
	}
	if string(cmd.Decision.UpdatedInput) == "null" { // a nil one, through JSON
		cmd.Decision.UpdatedInput = nil
	}
	return r.respond(ctx, cmd.RequestID, cmd.Decision, cmd.AnsweredBy)
}

// RequestDigest is what an answer token is bound to besides the request
// id: a digest of the request's tool and input.
func RequestDigest(req agent.PermissionRequest) string {
	h := sha256.New()
	h.Write([]byte(req.ToolName))
	h.Write([]byte{0})
	h.Write(req.Input)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// PendingCount counts the permission requests waiting over all sessions:
// those of the rooms this instance owns, and the others' from their perm
// hashes in Redis.
func (m *Manager) PendingCount(ctx context.Context) (int, error) {
	m.mu.Lock()
	rooms := make([]*Room, 0, len(m.rooms))
	for _, r := range m.rooms {
		rooms = append(rooms, r)
	}
	m.mu.Unlock()
	n := 0
	here := map[string]bool{}
	for _, r := range rooms {
		r.mu.Lock()
		if r.owned || !m.multi() {
			n += len(r.pending)
			here[r.id] = true
		}
		r.mu.Unlock()
	}
	if !m.multi() {
		return n, nil
	}
	cctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	prefix := m.key("perm", "")
	var keys []string
	iter := m.cfg.Redis.Scan(cctx, 0, prefix+"*", 500).Iterator()
	for iter.Next(cctx) {
		if k := iter.Val(); !here[k[len(prefix):]] {
			keys = append(keys, k)
		}
	}
	if err := iter.Err(); err != nil {
		return n, err
	}
	if len(keys) == 0 {
		return n, nil
	}
	pipe := m.cfg.Redis.Pipeline()
	lens := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		lens[i] = pipe.HLen(cctx, k)
	}
	if _, err := pipe.Exec(cctx); err != nil && !errors.Is(err, redis.Nil) {
		return n, err
	}
	for _, l := range lens {
		n += int(l.Val())
	}
	return n, nil
}
