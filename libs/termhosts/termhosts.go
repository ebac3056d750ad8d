// Package termhosts is the Redis registry that lets several terminal hosts
// serve one gateway. Each host announces itself (address and load) with a
// heartbeat that expires; each terminal session records which host holds
// its PTY. The gateway reads the registry to send /ws/terminal?session=X to
// the host that holds X (a new session to the least loaded live host), so
// terminal bytes never cross Redis. The terminal service writes it.
//
// Keys, under the deployment's prefix:
//
//	terminal:host:<id>       JSON Host, expires HostTTL after the last heartbeat
//	terminal:hosts           set of host ids ever announced (pruned by readers)
//	terminal:session:<sid>   the id of the host holding the session's PTY
package termhosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/redisx"
)

// HostTTL is how long a host counts as alive after its last heartbeat;
// hosts beat every HostTTL/3.
const HostTTL = 9 * time.Second

// Host is one terminal host as announced.
type Host struct {
	ID string `json:"id"`
	// URL is where the gateway reaches it: http://host:port.
	URL string `json:"url"`
	// Terminals is how many PTYs it holds (its load).
	Terminals int       `json:"terminals"`
	Updated   time.Time `json:"updated"`
}

// ErrNoHost means no live terminal host is registered.
var ErrNoHost = errors.New("no live terminal host")

// Registry reads and writes the registry.
type Registry struct {
	rdb  *redis.Client
	keys redisx.Keys
}

// New returns a registry over rdb under keys' prefix.
func New(rdb *redis.Client, keys redisx.Keys) *Registry { return &Registry{rdb: rdb, keys: keys} }

func (r *Registry) hostKey(id string) string     { return r.keys.Key("terminal", "host", id) }
func (r *Registry) hostsKey() string             { return r.keys.Key("terminal", "hosts") }
func (r *Registry) sessionKey(sid string) string { return r.keys.Key("terminal", "session", sid) }

// Announce records h as alive for HostTTL (the heartbeat).
func (r *Registry) Announce(ctx context.Context, h Host) error {
	h.Updated = time.Now().UTC()
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	pipe := r.rdb.TxPipeline()
	pipe.Set(ctx, r.hostKey(h.ID), b, HostTTL)
	pipe.SAdd(ctx, r.hostsKey(), h.ID)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("announce terminal host %s: %w", h.ID, err)
	}
	return nil
}

// Withdraw removes a host (on a clean shutdown) and the sessions it names.
func (r *Registry) Withdraw(ctx context.Context, id string, sessions []string) error {
	pipe := r.rdb.TxPipeline()
	pipe.Del(ctx, r.hostKey(id))
	pipe.SRem(ctx, r.hostsKey(), id)
	for _, s := range sessions {
		pipe.Del(ctx, r.sessionKey(s))
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Host returns a live host by id, or ok=false when it is unknown or its
// heartbeat expired.
func (r *Registry) Host(ctx context.Context, id string) (Host, bool, error) {
	b, err := r.rdb.Get(ctx, r.hostKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Host{}, false, nil
	}
	if err != nil {
		return Host{}, false, err
	}
	var h Host
	if err := json.Unmarshal(b, &h); err != nil {
		return Host{}, false, fmt.Errorf("terminal host %s: %w", id, err)
	}
	return h, true, nil
}

// Live returns every live host, pruning dead ids from the set.
func (r *Registry) Live(ctx context.Context) ([]Host, error) {
	ids, err := r.rdb.SMembers(ctx, r.hostsKey()).Result()
	if err != nil {
		return nil, err
	}
	var out []Host
	for _, id := range ids {
		h, ok, err := r.Host(ctx, id)
		if err != nil {
			return nil, err
		}
		if !ok {
			r.rdb.SRem(ctx, r.hostsKey(), id)
			continue
		}
		out = append(out, h)
	}
	return out, nil
}

// LeastLoaded returns the live host with the fewest terminals (ties by id,
// so the choice is stable), or ErrNoHost.
func (r *Registry) LeastLoaded(ctx context.Context) (Host, error) {
	hosts, err := r.Live(ctx)
	if err != nil {
		return Host{}, err
	}
	if len(hosts) == 0 {
		return Host{}, ErrNoHost
	}
	best := hosts[0]
	for _, h := range hosts[1:] {
		if h.Terminals < best.Terminals || h.Terminals == best.Terminals && h.ID < best.ID {
			best = h
		}
	}
	return best, nil
}

// SessionHost returns the id of the host that holds session sid ("" when
// none is recorded).
func (r *Registry) SessionHost(ctx context.Context, sid string) (string, error) {
	id, err := r.rdb.Get(ctx, r.sessionKey(sid)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return id, err
}

// Claim records that host id holds session sid.
func (r *Registry) Claim(ctx context.Context, sid, id string) error {
	return r.rdb.Set(ctx, r.sessionKey(sid), id, 0).Err()
}

// Release forgets session sid if host id still holds it.
func (r *Registry) Release(ctx context.Context, sid, id string) error {
	const script = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`
	return r.rdb.Eval(ctx, script, []string{r.sessionKey(sid)}, id).Err()
}

// Route is where a request for session sid should go: the live host that
// holds it; or, when it has none or its host is dead, the least loaded live
// host. lostOn names the dead host the session was on ("" otherwise).
func (r *Registry) Route(ctx context.Context, sid string) (h Host, lostOn string, err error) {
	if sid != "" {
		id, err := r.SessionHost(ctx, sid)
		if err != nil {
			return Host{}, "", err
		}
		if id != "" {
			h, ok, err := r.Host(ctx, id)
			if err != nil {
				return Host{}, "", err
			}
			if ok {
				return h, "", nil
			}
			lostOn = id
		}
	}
	h, err = r.LeastLoaded(ctx)
	return h, lostOn, err
}
