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
//	terminal:session:<sid>   JSON Claim: the host holding the session's PTY
//
// Redis is not trusted with routing: whoever can write to it must not be
// able to send the gateway (and the internal credential it adds) to an
// address of their choice. Every entry is therefore signed with
// HMAC-SHA256 under a key derived from the internal secret
// (internalauth.Secret.Derive("termhosts v1"); the secret itself never
// reaches Redis). The MAC covers the entry's Redis key name (so the
// prefix, the host id or the session id), every field that routes, the
// announcing process's boot id and, for a host and its terminal list, an
// expiry: an entry copied elsewhere, altered, or replayed after its life
// does not verify. A reader treats an entry that does not verify as
// absent, and logs it once with its key name. A claim lives as long as the
// run of the host that wrote it: it names the host's boot id, and a claim
// of an earlier run of a host (restarted since) routes nowhere.
package termhosts

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/redisx"
)

// KeyPurpose is what the signing key is derived for from the internal
// secret.
const KeyPurpose = "termhosts v1"

// maxLogged bounds how many distinct invalid key names are remembered (and
// so logged once each); past it, further ones are not logged.
const maxLogged = 1024

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
	// Boot identifies the announcing process's run (set by the registry
	// that announces it); claims name it.
	Boot string `json:"boot,omitempty"`
	// Expires is when the announcement stops being valid, whatever Redis
	// keeps (set by the registry; signed).
	Expires time.Time `json:"expires"`
	// MAC signs the fields above (see the package comment).
	MAC string `json:"mac,omitempty"`
}

// claim is the value of terminal:session:<sid>.
type claim struct {
	Host string `json:"host"`
	Boot string `json:"boot"`
	MAC  string `json:"mac"`
}

// terminalList is the value of terminal:terminals:<id>.
type terminalList struct {
	Host      string          `json:"host"`
	Boot      string          `json:"boot"`
	Expires   time.Time       `json:"expires"`
	Terminals json.RawMessage `json:"terminals"`
	MAC       string          `json:"mac"`
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

// ErrNoKey means the registry was made without an internal secret: it
// can neither sign nor verify.
var ErrNoKey = errors.New("terminal host registry: no internal secret to sign with")

// Registry reads and writes the registry.
type Registry struct {
	rdb  *redis.Client
	keys redisx.Keys
	ttl  time.Duration
	key  []byte // derived from the internal secret; nil verifies nothing
	boot string
	log  *slog.Logger
	now  func() time.Time

	logged *loggedSet
}

type loggedSet struct {
	mu    sync.Mutex
	names map[string]bool
}

// New returns a registry over rdb under keys' prefix, with HostTTL, that
// signs and verifies with a key derived from secret and logs each invalid
// entry once to log (nil: not logged). Each registry has its own boot id:
// one per process run of a host.
func New(rdb *redis.Client, keys redisx.Keys, secret internalauth.Secret, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Registry{
		rdb: rdb, keys: keys, ttl: HostTTL, key: secret.Derive(KeyPurpose),
		boot: rand.Text()[:16], log: log, now: time.Now, logged: &loggedSet{names: map[string]bool{}},
	}
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
	if r.key == nil {
		return ErrNoKey
	}
	now := r.now().UTC()
	h.Updated = now
	h.Boot = r.boot
	h.Expires = now.Add(r.ttl)
	h.MAC = r.hostMAC(h)
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	pipe := r.rdb.TxPipeline()
	pipe.Set(ctx, r.hostKey(h.ID), b, r.ttl)
	pipe.SAdd(ctx, r.hostsKey(), h.ID)
	if list != nil {
		tl := terminalList{Host: h.ID, Boot: r.boot, Expires: h.Expires, Terminals: list}
		tl.MAC = r.listMAC(tl)
		lb, err := json.Marshal(tl)
		if err != nil {
			return err
		}
		pipe.Set(ctx, r.terminalsKey(h.ID), lb, r.ttl)
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
	var listed []Host
	for _, h := range hosts {
		if !slices.Contains(skip, h.ID) {
			keys = append(keys, r.terminalsKey(h.ID))
			listed = append(listed, h)
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
		terms, ok := r.verifyList(keys[i], listed[i], []byte(s))
		if !ok {
			continue
		}
		out = append(out, terms...)
	}
	return out, nil
}

// verifyList checks a terminal list of host h: signed, of h's run, not
// expired; each terminal is then h's.
func (r *Registry) verifyList(key string, h Host, raw []byte) ([]Terminal, bool) {
	var tl terminalList
	if err := json.Unmarshal(raw, &tl); err != nil {
		r.invalid(key, "not a signed terminal list")
		return nil, false
	}
	if !r.macOK(tl.MAC, r.listMAC(tl)) {
		r.invalid(key, "bad signature")
		return nil, false
	}
	if tl.Host != h.ID || tl.Boot != h.Boot || !r.now().Before(tl.Expires) {
		r.invalid(key, "stale")
		return nil, false
	}
	var terms []Terminal
	if err := json.Unmarshal(tl.Terminals, &terms); err != nil {
		r.invalid(key, "signed list does not decode")
		return nil, false
	}
	for i := range terms {
		terms[i].Host = h.ID
	}
	return terms, true
}

// Host returns a live host by id, or ok=false when it is unknown, its
// heartbeat expired, or its entry does not verify.
func (r *Registry) Host(ctx context.Context, id string) (Host, bool, error) {
	h, ok, _, err := r.host(ctx, id)
	return h, ok, err
}

// host is Host, also telling whether the key exists at all.
func (r *Registry) host(ctx context.Context, id string) (h Host, ok, exists bool, err error) {
	b, err := r.rdb.Get(ctx, r.hostKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Host{}, false, false, nil
	}
	if err != nil {
		return Host{}, false, false, err
	}
	h, ok = r.verifyHost(r.hostKey(id), id, b)
	return h, ok, true, nil
}

// verifyHost checks a host entry read at key for host id: signed, for id,
// not expired. An entry that fails is absent (and logged once).
func (r *Registry) verifyHost(key, id string, raw []byte) (Host, bool) {
	var h Host
	if err := json.Unmarshal(raw, &h); err != nil {
		r.invalid(key, "not a signed host entry")
		return Host{}, false
	}
	if !r.macOK(h.MAC, r.hostMAC(h)) {
		r.invalid(key, "bad signature")
		return Host{}, false
	}
	if h.ID != id || !r.now().Before(h.Expires) {
		r.invalid(key, "stale")
		return Host{}, false
	}
	return h, true
}

// Live returns every live host whose entry verifies, pruning the ids
// without an entry from the set.
func (r *Registry) Live(ctx context.Context) ([]Host, error) {
	ids, err := r.rdb.SMembers(ctx, r.hostsKey()).Result()
	if err != nil {
		return nil, err
	}
	var out []Host
	for _, id := range ids {
		h, ok, exists, err := r.host(ctx, id)
		if err != nil {
			return nil, err
		}
		if !exists {
			r.rdb.SRem(ctx, r.hostsKey(), id)
		}
		if !ok {
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
// no valid claim is recorded).
func (r *Registry) SessionHost(ctx context.Context, sid string) (string, error) {
	c, ok, err := r.sessionClaim(ctx, sid)
	if err != nil || !ok {
		return "", err
	}
	return c.Host, nil
}

func (r *Registry) sessionClaim(ctx context.Context, sid string) (claim, bool, error) {
	b, err := r.rdb.Get(ctx, r.sessionKey(sid)).Bytes()
	if errors.Is(err, redis.Nil) {
		return claim{}, false, nil
	}
	if err != nil {
		return claim{}, false, err
	}
	c, ok := r.verifyClaim(sid, b)
	return c, ok, nil
}

func (r *Registry) verifyClaim(sid string, raw []byte) (claim, bool) {
	key := r.sessionKey(sid)
	var c claim
	if err := json.Unmarshal(raw, &c); err != nil {
		r.invalid(key, "not a signed claim")
		return claim{}, false
	}
	if !r.macOK(c.MAC, r.claimMAC(sid, c.Host, c.Boot)) {
		r.invalid(key, "bad signature")
		return claim{}, false
	}
	return c, true
}

// claimValue is this registry's claim of sid for host id: the same bytes
// every time, so that Release can compare them.
func (r *Registry) claimValue(sid, id string) (string, error) {
	if r.key == nil {
		return "", ErrNoKey
	}
	b, err := json.Marshal(claim{Host: id, Boot: r.boot, MAC: r.claimMAC(sid, id, r.boot)})
	return string(b), err
}

// Claim records that host id holds session sid.
func (r *Registry) Claim(ctx context.Context, sid, id string) error {
	v, err := r.claimValue(sid, id)
	if err != nil {
		return err
	}
	return r.rdb.Set(ctx, r.sessionKey(sid), v, 0).Err()
}

// ClaimSwap records that host id holds session sid, like Claim, and
// returns the host recorded before ("" when none, or when what was there
// does not verify): a host that finds its own id there, for a session it
// does not hold, lost that session's terminal when it restarted.
func (r *Registry) ClaimSwap(ctx context.Context, sid, id string) (previous string, err error) {
	v, err := r.claimValue(sid, id)
	if err != nil {
		return "", err
	}
	prev, err := r.rdb.SetArgs(ctx, r.sessionKey(sid), v, redis.SetArgs{Get: true}).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	c, ok := r.verifyClaim(sid, []byte(prev))
	if !ok {
		return "", nil
	}
	return c.Host, nil
}

// Release forgets session sid if host id still holds it through this
// registry's claim.
func (r *Registry) Release(ctx context.Context, sid, id string) error {
	const script = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`
	v, err := r.claimValue(sid, id)
	if err != nil {
		return err
	}
	return r.rdb.Eval(ctx, script, []string{r.sessionKey(sid)}, v).Err()
}

// Route is where a request for session sid should go: the live host that
// holds it; or, when it has none or its host is dead (or restarted since
// it claimed the session), the least loaded live host. lostOn names the
// host the session was lost on ("" otherwise). Only entries that verify
// count.
func (r *Registry) Route(ctx context.Context, sid string) (h Host, lostOn string, err error) {
	if sid != "" {
		c, ok, err := r.sessionClaim(ctx, sid)
		if err != nil {
			return Host{}, "", err
		}
		if ok {
			h, live, err := r.Host(ctx, c.Host)
			if err != nil {
				return Host{}, "", err
			}
			// A claim of an earlier run of the host: the PTY went
			// with that run.
			if live && h.Boot == c.Boot {
				return h, "", nil
			}
			lostOn = c.Host
		}
	}
	h, err = r.LeastLoaded(ctx)
	return h, lostOn, err
}

// mac is the signature of fields under the registry's key
// (internalauth.FieldsMAC).
func (r *Registry) mac(fields ...string) string { return internalauth.FieldsMAC(r.key, fields...) }

func (r *Registry) macOK(got, want string) bool {
	return r.key != nil && got != "" && hmac.Equal([]byte(got), []byte(want))
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func (r *Registry) hostMAC(h Host) string {
	return r.mac(r.hostKey(h.ID), h.ID, h.URL, h.Boot, strconv.Itoa(h.Terminals), ms(h.Expires))
}

func (r *Registry) listMAC(tl terminalList) string {
	return r.mac(r.terminalsKey(tl.Host), tl.Host, tl.Boot, ms(tl.Expires), string(tl.Terminals))
}

func (r *Registry) claimMAC(sid, host, boot string) string {
	return r.mac(r.sessionKey(sid), sid, host, boot)
}

// invalid logs, once per key name, that the entry at key was ignored.
func (r *Registry) invalid(key, why string) {
	r.logged.mu.Lock()
	seen := r.logged.names[key]
	full := len(r.logged.names) >= maxLogged
	if !seen && !full {
		r.logged.names[key] = true
	}
	r.logged.mu.Unlock()
	if seen || full {
		return
	}
	r.log.Warn("terminal_registry_entry_ignored", "key", key, "reason", why)
}
