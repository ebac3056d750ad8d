package room

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// The HTTP routes that act on a live session (stop, permission-mode,
// delete) run on the session's owner: on another instance they are relayed
// like a socket's command (Command types apiStop, apiMode, apiEnd on
// <prefix>chat:cmd:<session>), answered by one call_result frame addressed
// to a reply sink on the asking instance. While a session has an agent
// process, its owner keeps <prefix>chat:live:<session> (its instance id,
// OwnerTTL, renewed with the claim) for GET /api/active-sessions.

// Command types of the relayed HTTP calls; the socket layer never sends
// them.
const (
	apiStop = "api_stop"
	apiMode = "api_mode"
	apiEnd  = "api_end"
)

// callResult is the answer of a relayed HTTP call.
type callResult struct {
	Type    string                 `json:"type"` // "call_result"
	Outcome agent.InterruptOutcome `json:"outcome,omitempty"`
	Applied agent.Applied          `json:"applied,omitempty"`
	Error   string                 `json:"error,omitempty"`
}

func (c callResult) frame() Frame { c.Type = "call_result"; return NewFrame(0, c) }

// replySink waits for the call_result of a relayed call.
type replySink struct{ ch chan callResult }

func (s replySink) Send(f Frame) {
	var res callResult
	if json.Unmarshal(f.Data, &res) != nil || res.Type != "call_result" {
		return
	}
	select {
	case s.ch <- res:
	default:
	}
}

// execAPI runs a relayed HTTP call on the owner and answers sender.
func (r *Room) execAPI(ctx context.Context, sender Sink, cmd Command) {
	var res callResult
	var err error
	switch cmd.Type {
	case apiStop:
		res.Outcome, err = r.Stop(ctx)
	case apiMode:
		res.Applied, err = r.m.setModeHere(ctx, r, cmd.Mode)
	case apiEnd:
		r.m.endHere(r)
	case apiAnswer:
		if !r.answerPush(ctx, cmd) {
			err = errors.New(notPending)
		}
	}
	if err != nil {
		res.Error = err.Error()
	}
	sender.Send(res.frame())
}

// relay runs cmd on the session's owner when another instance owns it; ok
// is false when the call is to run here (no owner, or this instance).
func (m *Manager) relay(ctx context.Context, id string, cmd Command) (res callResult, ok bool, err error) {
	if !m.multi() {
		return res, false, nil
	}
	if r := m.lookup(id); r != nil {
		r.mu.Lock()
		owned := r.owned
		r.mu.Unlock()
		if owned {
			return res, false, nil
		}
	}
	cctx, cancel := context.WithTimeout(ctx, redisTimeout)
	owner, err := m.cfg.Redis.Get(cctx, m.key("owner", id)).Result()
	cancel()
	if errors.Is(err, redis.Nil) || (err == nil && owner == m.instance) {
		return res, false, nil
	}
	if err != nil {
		return res, true, fmt.Errorf("read the session's owner: %w", err)
	}
	r := m.room(id)
	s := replySink{ch: make(chan callResult, 1)}
	r.mu.Lock()
	sid := fmt.Sprintf("%s:%d", m.instance, m.nextSink.Add(1))
	r.sinks[s] = sid
	r.ids[sid] = s
	r.mu.Unlock()
	defer r.Leave(s)
	seq, at := m.auth.next()
	ch := m.key("cmd", id)
	b := m.sealRelayed(ch, wireCmd{From: m.instance, Seq: seq, At: at, To: sid, Cmd: cmd})
	cctx, cancel = context.WithTimeout(ctx, redisTimeout)
	n, err := m.cfg.Redis.Publish(cctx, ch, b).Result()
	cancel()
	if err == nil && n == 0 {
		err = errors.New("no instance listens")
	}
	if err != nil {
		return res, true, fmt.Errorf("could not reach the session's instance: %w", err)
	}
	t := time.NewTimer(controlTimeout + redisTimeout)
	defer t.Stop()
	select {
	case res = <-s.ch:
	case <-t.C:
		return res, true, errors.New("the session's instance did not answer")
	case <-ctx.Done():
		return res, true, ctx.Err()
	}
	if res.Error != "" {
		return res, true, errors.New(res.Error)
	}
	return res, true, nil
}

// setLive marks the session as having a process on this instance (or
// clears the mark).
func (m *Manager) setLive(id string, live bool) {
	if !m.multi() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	var err error
	if live {
		err = m.cfg.Redis.Set(ctx, m.key("live", id), m.instance, m.cfg.OwnerTTL).Err()
	} else {
		err = releaseScript.Run(ctx, m.cfg.Redis, []string{m.key("live", id)}, m.instance).Err()
	}
	if err != nil {
		m.log.ErrorContext(ctx, "mark the session live", "session_id", id, "live", live, "err", err)
	}
}

// liveElsewhere lists the sessions marked live by any instance.
func (m *Manager) liveElsewhere(ctx context.Context) ([]string, error) {
	if !m.multi() {
		return nil, nil
	}
	prefix := m.key("live", "")
	var ids []string
	iter := m.cfg.Redis.Scan(ctx, 0, globEscape(prefix)+"*", 500).Iterator()
	for iter.Next(ctx) {
		ids = append(ids, strings.TrimPrefix(iter.Val(), prefix))
	}
	return ids, iter.Err()
}

func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
