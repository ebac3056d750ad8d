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
//	terminal:terminals:<id>  JSON []Terminal: the PTYs host <id> holds, written
//	                         with its heartbeat (Publish) and expiring with it
//	terminal:hosts           set of host ids ever announced (pruned by readers)
//	terminal:session:<sid>   the id of the host holding the session's PTY
package termhosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/redisx"
)

// HostTTL is how long a host counts as alive after its last heartbeat,
// unless the registry was made WithHostTTL; hosts beat every third of it.
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

// Terminal is one PTY as its host publishes it (GET /api/terminals).
type Terminal struct {
	Session string    `json:"session"`
	PID     int       `json:"pid"`
	Cwd     string    `json:"cwd"`
	Started time.Time `json:"started"`
	// Clients is how many sockets are attached to it.
	Clients int    `json:"clients"`
	Host    string `json:"host"`
}

// ErrNoHost means no live terminal host is registered.
var ErrNoHost = errors.New("no live terminal host")

// Registry reads and writes the registry.
type Registry struct {
	rdb  *redis.Client
	keys redisx.Keys
	ttl  time.Duration
}

// New returns a registry over rdb under keys' prefix, with HostTTL.
func New(rdb *redis.Client, keys redisx.Keys) *Registry {
	return &Registry{rdb: rdb, keys: keys, ttl: HostTTL}
}

// WithHostTTL returns a copy of r whose announcements keep a host alive for
// ttl instead of HostTTL (tests shorten it; readers need not agree, as a
// host's liveness is its key's expiry). A ttl below one second is raised
// to one second.
func (r *Registry) WithHostTTL(ttl time.Duration) *Registry {
	c := *r
	c.ttl = max(ttl, time.Second)
	return &c
}

// HostTTL is how long an announcement through r keeps a host alive; a host
// should beat every third of it.
func (r *Registry) HostTTL() time.Duration { return r.ttl }

func (r *Registry) hostKey(id string) string      { return r.keys.Key("terminal", "host", id) }
func (r *Registry) hostsKey() string              { return r.keys.Key("terminal", "hosts") }
func (r *Registry) sessionKey(sid string) string  { return r.keys.Key("terminal", "session", sid) }
func (r *Registry) terminalsKey(id string) string { return r.keys.Key("terminal", "terminals", id) }

// Announce records h as alive for the registry's host TTL (the heartbeat).
func (r *Registry) Announce(ctx context.Context, h Host) error {
	return r.announce(ctx, h, nil)
}

// Publish is the heartbeat of a host that also lists its terminals: it
// announces h, with Terminals set to len(terms), and records terms, both
// expiring together after the host TTL.
func (r *Registry) Publish(ctx context.Context, h Host, terms []Terminal) error {
	if terms == nil {
		terms = []Terminal{}
	}
	h.Terminals = len(terms)
	list, err := json.Marshal(terms)
	if err != nil {
		return err
	}
	return r.announce(ctx, h, list)
}

func (r *Registry) announce(ctx context.Context, h Host, list []byte) error {
	h.Updated = time.Now().UTC()
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	pipe := r.rdb.TxPipeline()
	pipe.Set(ctx, r.hostKey(h.ID), b, r.ttl)
	pipe.SAdd(ctx, r.hostsKey(), h.ID)
	if list != nil {
		pipe.Set(ctx, r.terminalsKey(h.ID), list, r.ttl)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("announce terminal host %s: %w", h.ID, err)
	}
	return nil
}

// Withdraw removes a host (on a clean shutdown), its terminal list and the
// sessions it names.
func (r *Registry) Withdraw(ctx context.Context, id string, sessions []string) error {
	pipe := r.rdb.TxPipeline()
	pipe.Del(ctx, r.hostKey(id))
	pipe.Del(ctx, r.terminalsKey(id))
	pipe.SRem(ctx, r.hostsKey(), id)
	for _, s := range sessions {
		pipe.Del(ctx, r.sessionKey(s))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("withdraw terminal host %s: %w", id, err)
	}
	return nil
}

// Terminals returns the terminals published by every live host except
// those named in skip (a host lists its own from memory), in no particular
// order. A live host that published no list (Announce only) adds nothing.
func (r *Registry) Terminals(ctx context.Context, skip ...string) ([]Terminal, error) {
	hosts, err := r.Live(ctx)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, h := range hosts {
		if !slices.Contains(skip, h.ID) {
			keys = append(keys, r.terminalsKey(h.ID))
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	lists, err := r.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("read terminal lists: %w", err)
	}
	var out []Terminal
	for i, v := range lists {
		s, ok := v.(string)
		if !ok { // expired between Live and MGet, or never published
			continue
		}
		var terms []Terminal
		if err := json.Unmarshal([]byte(s), &terms); err != nil {
			return nil, fmt.Errorf("terminal list %s: %w", keys[i], err)
		}
		out = append(out, terms...)
	}
	return out, nil
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

// ClaimSwap records that host id holds session sid, like Claim, and
// returns the host recorded before ("" when none): a host that finds its
// own id there, for a session it does not hold, lost that session's
// terminal when it restarted.
func (r *Registry) ClaimSwap(ctx context.Context, sid, id string) (previous string, err error) {
	previous, err = r.rdb.SetArgs(ctx, r.sessionKey(sid), id, redis.SetArgs{Get: true}).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return previous, err
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
