package credential

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/authtoken"
)

// Signing out revokes one cookie, where revoking browsers revokes them all.
//
// Each instance holds the ids of the cookies signed out under its cookie
// secret in memory (signedOut.ids), and CheckCookie consults that map: no
// Redis round trip on a request. Redis holds the shared record, one sorted
// set per cookie secret, <prefix>auth:signedout:<cookie key id>, member the
// cookie's id, score its expiry (Unix seconds), beside a version key
// (<...>:ver) that each write sets to a new random value. A sorted set
// rather than a key per cookie: one key to read whole at start and on each
// change, expired entries removed by score in the same script that adds
// (ZREMRANGEBYSCORE), and the key itself given the expiry of its last
// cookie (EXPIREAT), so the record vanishes when nothing in it can pass
// any more, whether or not a gateway runs; keys with a TTL would need a
// SCAN or an index set to be read back. The version lets the 500 ms poll
// skip reading the set when nothing was added.
//
// A write publishes "signed-out" on <prefix>auth:changed; every instance
// then reads the set, and the poll repairs a lost message. An instance
// only ever adds to its map (union with what Redis holds) and drops an
// entry once the cookie has expired, so a Redis that lost the set is given
// back the entries from memory. When Redis cannot be written at sign-out,
// the entry is kept in memory (this instance refuses the cookie at once)
// and written on each sync until Redis takes it: the outcome says
// SignOutPending then. Such an entry lives only in this process until it
// reaches Redis.

// ErrSignedOut is returned for a cookie that verifies but was signed out.
var ErrSignedOut = errors.New("cookie was signed out")

// SignOutResult is what SignOut achieved.
type SignOutResult string

// Sign-out outcomes.
const (
	// SignOutNone: no cookie that verifies (none, forged, expired, of an
	// older epoch or key, or signed out already): nothing was recorded.
	SignOutNone SignOutResult = "none"
	// SignOutRecorded: the cookie is refused here now and, through Redis,
	// on every instance within a second.
	SignOutRecorded SignOutResult = "recorded"
	// SignOutPending: Redis could not be written. The cookie is refused
	// here now; the record is retried on every sync until Redis takes it,
	// and other instances refuse it from then on.
	SignOutPending SignOutResult = "pending"
)

// signedOut is one instance's view of the cookies signed out under one
// cookie secret.
type signedOut struct {
	kid      string           // the cookie key id the ids belong to
	ver      string           // the Redis version last read ("" before the first read)
	ids      map[string]int64 // cookie id → expiry, Unix seconds
	unsynced map[string]int64 // ids Redis has not taken yet
}

func newSignedOut(kid string) signedOut {
	return signedOut{kid: kid, ids: map[string]int64{}, unsynced: map[string]int64{}}
}

// signOutAddScript removes the set's expired entries, adds ARGV[3..] (id,
// expiry pairs), gives both keys the expiry of the set's last cookie,
// sets a new version and publishes the wake-up. KEYS: the set, its
// version, the channel; ARGV[1] now (Unix seconds), ARGV[2] the version.
var signOutAddScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
for i = 3, #ARGV, 2 do
  redis.call('ZADD', KEYS[1], ARGV[i+1], ARGV[i])
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if #last == 0 then return 0 end
local ends = tonumber(last[2]) + 1
redis.call('SET', KEYS[2], ARGV[2])
redis.call('EXPIREAT', KEYS[1], ends)
redis.call('EXPIREAT', KEYS[2], ends)
redis.call('PUBLISH', KEYS[3], 'signed-out')
return 1
`)

// signOutLoadScript answers {version} when the version is ARGV[1], else
// {version, id, expiry, id, expiry, ...} of the entries that expire after
// ARGV[2].
var signOutLoadScript = redis.NewScript(`
local v = redis.call('GET', KEYS[2]) or ''
if v == ARGV[1] then return {v} end
local r = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[2], '+inf', 'WITHSCORES')
table.insert(r, 1, v)
return r
`)

const signedOutWake = "signed-out"

func (s *Store) signedOutKeys(kid string) []string {
	set := s.opts.Keys.Key("auth", "signedout", kid)
	return []string{set, set + ":ver", s.channel()}
}

// SignOut revokes the cookie value v, if it verifies now, on every
// instance for the rest of its life. A value that does not verify records
// nothing, so anonymous requests cannot grow the record.
func (s *Store) SignOut(ctx context.Context, v string) (SignOutResult, error) {
	s.mu.Lock()
	c, err := authtoken.VerifyCookie(s.cur.cookieSecret, s.cur.epochs.Cookie, v, s.opts.Now())
	if err != nil {
		s.mu.Unlock()
		return SignOutNone, nil //nolint:nilerr // a cookie that does not verify is nothing to revoke
	}
	if s.out.kid != s.cur.ids.Cookie {
		s.out = newSignedOut(s.cur.ids.Cookie)
	}
	if _, done := s.out.ids[c.ID]; done {
		s.mu.Unlock()
		return SignOutNone, nil
	}
	s.out.ids[c.ID] = c.Expires.Unix()
	if s.opts.Redis != nil {
		s.out.unsynced[c.ID] = c.Expires.Unix()
	}
	s.mu.Unlock()
	s.notify() // close the WebSockets this cookie opened

	if s.opts.Redis == nil {
		return SignOutRecorded, nil
	}
	err = s.flushSignedOut(ctx)
	s.mu.RLock()
	_, pending := s.out.unsynced[c.ID]
	s.mu.RUnlock()
	if pending {
		return SignOutPending, err
	}
	return SignOutRecorded, nil
}

// flushSignedOut writes the entries Redis has not taken yet.
func (s *Store) flushSignedOut(ctx context.Context) error {
	s.mu.RLock()
	kid, now := s.out.kid, s.opts.Now().Unix()
	args := []any{now, ""}
	for id, exp := range s.out.unsynced {
		if exp > now {
			args = append(args, id, exp)
		}
	}
	n := len(s.out.unsynced)
	s.mu.RUnlock()
	if n == 0 {
		return nil
	}
	ver, err := newVersion()
	if err != nil {
		return err
	}
	args[1] = ver
	if len(args) > 2 {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := signOutAddScript.Run(ctx, s.opts.Redis, s.signedOutKeys(kid), args...).Err(); err != nil {
			return fmt.Errorf("record signed-out cookies in redis: %w", err)
		}
	}
	s.mu.Lock()
	if s.out.kid == kid {
		for i := 2; i < len(args); i += 2 {
			delete(s.out.unsynced, args[i].(string))
		}
		for id, exp := range s.out.unsynced {
			if exp <= now {
				delete(s.out.unsynced, id)
			}
		}
	}
	s.mu.Unlock()
	return nil
}

func newVersion() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// syncSignedOut writes what Redis has not taken yet, reads the set when
// its version moved, adopts its entries (an instance never forgets an
// entry before the cookie expires, and gives Redis back one it lost), and
// drops expired entries. It notifies when an entry was added, so that
// WebSockets opened with a signed-out cookie are closed.
func (s *Store) syncSignedOut(ctx context.Context) error {
	if s.opts.Redis == nil {
		return nil
	}
	ferr := s.flushSignedOut(ctx)
	s.mu.Lock()
	kid, now := s.cur.ids.Cookie, s.opts.Now().Unix()
	if s.out.kid != kid {
		s.out = newSignedOut(kid)
	}
	ver := s.out.ver
	s.mu.Unlock()

	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	res, err := signOutLoadScript.Run(lctx, s.opts.Redis, s.signedOutKeys(kid)[:2], ver, now).StringSlice()
	if err != nil {
		return errors.Join(ferr, fmt.Errorf("read signed-out cookies from redis: %w", err))
	}
	if len(res) == 0 || len(res)%2 == 0 {
		return errors.Join(ferr, fmt.Errorf("read signed-out cookies from redis: unexpected reply of %d items", len(res)))
	}
	added := false
	s.mu.Lock()
	if s.out.kid == kid {
		if res[0] != ver {
			inRedis := make(map[string]bool, len(res)/2)
			for i := 1; i+1 < len(res); i += 2 {
				score, perr := strconv.ParseFloat(res[i+1], 64)
				if perr != nil {
					continue
				}
				exp := int64(score)
				inRedis[res[i]] = true
				if _, ok := s.out.ids[res[i]]; !ok {
					s.out.ids[res[i]] = exp
					added = true
				}
			}
			for id, exp := range s.out.ids {
				if !inRedis[id] && exp > now {
					s.out.unsynced[id] = exp // Redis lost it, or it is on its way
				}
			}
			s.out.ver = res[0]
		}
		for id, exp := range s.out.ids {
			if exp <= now {
				delete(s.out.ids, id)
				delete(s.out.unsynced, id)
			}
		}
	}
	s.mu.Unlock()
	if added {
		s.notify()
	}
	return ferr
}

// SignedOutCount is how many signed-out cookies this instance holds, and
// how many of them Redis has not taken yet.
func (s *Store) SignedOutCount() (held, unsynced int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.out.ids), len(s.out.unsynced)
}
