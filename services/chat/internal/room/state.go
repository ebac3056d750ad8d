package room

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
)

// The live state of a session (agent_running, is_compacting) belongs to
// the instance that runs its process. With several instances the owner
// also keeps it in <prefix>chat:state:<session> ("<running> <compacting>",
// each 0 or 1; TTL OwnerTTL, renewed with the claim while the process
// lives), so that any instance reports the owner's state in `connected`
// and GET /api/session/{id}. No key means nothing runs.

// readAheadTimeout bounds the wait for the TurnEnded that follows a result
// message (see Room.pump): the provider pushes both from one line.
const readAheadTimeout = 500 * time.Millisecond

// stateChanged writes r's running and compacting flags to Redis when they
// differ from what was written last. Writes are serialised, each writing
// the flags as they are when it runs, so the last write is the latest
// state.
func (r *Room) stateChanged() {
	r.stateMu.Lock()
	defer r.stateMu.Unlock()
	r.mu.Lock()
	v := stateValue(r.running, r.compacting)
	r.mu.Unlock()
	if v != r.stateNotified {
		// After the write below: the Wake's readers find the new state.
		r.stateNotified = v
		defer r.m.notify(Wake{SessionID: r.id, Kind: WakeSession})
	}
	if !r.m.multi() || v == r.stateWritten {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	// Only while this instance holds the claim: an instance that lost it
	// (its process ending) must not overwrite the new owner's state.
	w := v
	if v == stateValue(false, false) {
		w = ""
	}
	n, err := stateScript.Run(ctx, r.m.cfg.Redis, []string{r.m.key("owner", r.id), r.m.key("state", r.id)},
		r.m.instance, w, r.m.cfg.OwnerTTL.Milliseconds()).Int()
	if err != nil {
		r.m.log.ErrorContext(ctx, "store the session's live state", "session_id", r.id, "err", err)
	}
	if err != nil || n == 0 {
		r.stateWritten = "" // unknown: write the next one whatever it is
		return
	}
	r.stateWritten = v
}

// stateScript writes the live state KEYS[2] (ARGV[2], TTL ARGV[3] ms; ""
// deletes it) when the claim KEYS[1] is instance ARGV[1]'s.
var stateScript = redis.NewScript(`if redis.call("GET", KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == "" then redis.call("DEL", KEYS[2]) else redis.call("SET", KEYS[2], ARGV[2], "PX", ARGV[3]) end
return 1`)

func stateValue(running, compacting bool) string {
	b := []byte("0 0")
	if running {
		b[0] = '1'
	}
	if compacting {
		b[2] = '1'
	}
	return string(b)
}

// parseState reads a state value; anything else is "nothing runs".
func parseState(v string) (running, compacting bool) {
	f := strings.Fields(v)
	if len(f) != 2 {
		return false, false
	}
	return f[0] == "1", f[1] == "1"
}

// remoteState reads the owner's state of session id and its pending
// permission requests, in one round trip.
func (m *Manager) remoteState(ctx context.Context, id string) (running, compacting bool, pending []agent.PermissionRequest, err error) {
	pipe := m.cfg.Redis.Pipeline()
	st := pipe.Get(ctx, m.key("state", id))
	perm := pipe.HGetAll(ctx, m.key("perm", id))
	_, err = pipe.Exec(ctx)
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, false, nil, err
	}
	if v, err := st.Result(); err == nil {
		running, compacting = parseState(v)
	}
	pending, err = m.decodePending(m.key("perm", id), perm.Val())
	return running, compacting, pending, err
}

// ownedHere reports whether this instance serves the session's live state:
// it has the room and (with several instances) owns it.
func (m *Manager) ownedHere(r *Room) bool {
	if r == nil {
		return !m.multi()
	}
	if !m.multi() {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.owned
}
