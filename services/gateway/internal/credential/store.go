// Package credential is the gateway's credential model: the password hash,
// the API token (Bearer and tkn links) bound to bearer_epoch, the svc_auth
// cookie bound to cookie_epoch, revocation, and password rotation.
//
// The config file is the durable record. Epochs are mirrored in Redis so
// that a revocation on one gateway instance is refused by every other
// within a second: instances merge epochs by maximum, publish a wake-up on
// change and poll as a fallback, because pub/sub may drop a message. The
// config file is watched too, so a hand edit of bearer_epoch (or a
// password rotated by the passwd command) takes effect without a restart.
//
// Signing out revokes one cookie: its id is recorded in Redis until the
// cookie expires and held in memory by every instance (signout.go).
package credential

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/authtoken"
	"github.com/svc-code/svc-code/libs/configfile"
	"github.com/svc-code/svc-code/libs/redisx"
)

// Config file keys owned by the gateway.
const (
	KeyPasswordHash   = "password_hash"
	KeyTokenKey       = "token_key"
	KeyCookieSecret   = "cookie_secret"
	KeyAPIToken       = "api_token"
	KeyBearerEpoch    = "bearer_epoch"
	KeyCookieEpoch    = "cookie_epoch"
	KeyAllowedOrigins = "allowed_origins"
	KeyAllowedHosts   = "allowed_hosts"
)

// Kind is the credential a request was authenticated with.
type Kind string

// The three credentials the gateway accepts.
const (
	KindCookie Kind = "cookie"
	KindBearer Kind = "bearer"
	KindTkn    Kind = "tkn"
)

// Ambient reports whether the browser attaches or a link carries the
// credential by itself, which is what the Origin/CSRF gate guards.
func (k Kind) Ambient() bool { return k == KindCookie || k == KindTkn }

// Identity is the outcome of a successful check. It remembers the epoch and
// the id of the signing key it was checked against, and for a cookie the
// cookie's own id, so a long-lived connection can be closed when either
// moves on or the cookie is signed out.
type Identity struct {
	Kind   Kind
	Epoch  int64
	Gen    string
	Cookie string
}

// Scope is what a revocation invalidates.
type Scope string

// Revocation scopes.
const (
	ScopeBrowsers Scope = "browsers"
	ScopeScripts  Scope = "scripts"
)

// Epochs are the two revocation counters.
type Epochs struct {
	Cookie int64 `json:"cookie_epoch"`
	Bearer int64 `json:"bearer_epoch"`
}

// secrets is one consistent view of the credential state.
type secrets struct {
	passwordHash string
	tokenKey     []byte
	cookieSecret []byte
	// ids names each key (and its epoch's Redis mirror); gen names the
	// pair, to notice that either changed.
	ids            KeyIDs
	gen            string
	epochs         Epochs
	allowedOrigins []string
	allowedHosts   []string
}

// Options configure a Store.
type Options struct {
	File   *configfile.File
	Redis  *redis.Client // nil: single instance, no mirroring
	Keys   redisx.Keys
	Log    *slog.Logger
	Params authtoken.HashParams
	// CookieTTL is the svc_auth lifetime (30 days when zero).
	CookieTTL time.Duration
	// Poll is how often Redis and the config file are re-read as a fallback
	// to pub/sub (500 ms when zero).
	Poll time.Duration
	Now  func() time.Time
}

// Store holds the live credential state of one gateway instance.
type Store struct {
	opts Options

	mu  sync.RWMutex
	cur secrets
	out signedOut

	writeMu   sync.Mutex // serialises this instance's config writes
	listeners []func()
	fileStamp fileStamp
}

// Open prepares the config file (creating the password on first start,
// filling keys an older build did not write, refreshing api_token) and
// loads it. When the password was generated, it is returned so that the
// caller can show it once.
func Open(ctx context.Context, opts Options, firstPassword string) (*Store, string, error) {
	if opts.CookieTTL == 0 {
		opts.CookieTTL = 30 * 24 * time.Hour
	}
	if opts.Poll == 0 {
		opts.Poll = 500 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Store{opts: opts}
	var generated string
	doc, err := opts.File.Update(func(d *configfile.Doc) error {
		g, err := prepare(d, firstPassword, opts.Params)
		generated = g
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if firstPassword != "" && generated == "" && !passwordJustSet(doc, firstPassword) {
		opts.Log.InfoContext(ctx, "password_env_ignored", "reason", "a password is already set; SVC_CODE_PASSWORD applies only to the first start; rotate with `gateway passwd`")
	}
	sec, err := parse(doc)
	if err != nil {
		return nil, "", err
	}
	s.cur = sec
	s.out = newSignedOut(sec.ids.Cookie)
	s.fileStamp, _ = stampOf(opts.File.Path())
	if err := s.syncRedis(ctx); err != nil {
		opts.Log.WarnContext(ctx, "redis_epoch_sync_failed", "err", err)
	}
	if err := s.syncSignedOut(ctx); err != nil {
		opts.Log.WarnContext(ctx, "redis_signed_out_sync_failed", "err", err)
	}
	return s, generated, nil
}

// passwordJustSet is only used to decide whether to log that the env
// password was ignored; a wrong guess costs a log line, never access.
func passwordJustSet(doc *configfile.Doc, pw string) bool {
	h, _ := doc.String(KeyPasswordHash)
	ok, _ := authtoken.VerifyPassword(h, pw)
	return ok
}

// prepare fills every key the gateway needs, keeping what is there.
func prepare(d *configfile.Doc, firstPassword string, p authtoken.HashParams) (generated string, err error) {
	if _, ok := d.String(KeyPasswordHash); !ok {
		pw := firstPassword
		if pw == "" {
			if pw, err = authtoken.GeneratePassword(); err != nil {
				return "", err
			}
			generated = pw
		}
		if err := setPassword(d, pw, p); err != nil {
			return "", err
		}
	}
	if _, ok := d.String(KeyTokenKey); !ok {
		// A config written before token keys existed: the password is not
		// known here, so the key is random. Rotating the password derives a
		// new one from it.
		k, err := authtoken.NewSecret(32)
		if err != nil {
			return "", err
		}
		d.SetString(KeyTokenKey, base64.StdEncoding.EncodeToString(k))
	}
	if _, ok := d.String(KeyCookieSecret); !ok {
		k, err := authtoken.NewSecret(32)
		if err != nil {
			return "", err
		}
		d.SetString(KeyCookieSecret, base64.StdEncoding.EncodeToString(k))
	}
	for _, k := range []string{KeyBearerEpoch, KeyCookieEpoch} {
		if _, ok, err := d.Int(k); err != nil {
			return "", err
		} else if !ok {
			d.SetInt(k, 0)
		}
	}
	sec, err := parse(d)
	if err != nil {
		return "", err
	}
	d.SetString(KeyAPIToken, authtoken.APIToken(sec.tokenKey, sec.epochs.Bearer))
	return generated, nil
}

// setPassword stores a new password: its hash, a token key derived from
// it, a fresh cookie secret, and both epochs reset. Every credential issued
// before is void because the keys changed.
func setPassword(d *configfile.Doc, pw string, p authtoken.HashParams) error {
	h, err := authtoken.HashPassword(pw, p)
	if err != nil {
		return err
	}
	key, err := authtoken.DeriveTokenKey(pw, p)
	if err != nil {
		return err
	}
	cs, err := authtoken.NewSecret(32)
	if err != nil {
		return err
	}
	d.SetString(KeyPasswordHash, h)
	d.SetString(KeyTokenKey, base64.StdEncoding.EncodeToString(key))
	d.SetString(KeyCookieSecret, base64.StdEncoding.EncodeToString(cs))
	d.SetInt(KeyBearerEpoch, 0)
	d.SetInt(KeyCookieEpoch, 0)
	d.SetString(KeyAPIToken, authtoken.APIToken(key, 0))
	return nil
}

// Rotate sets a new password in the config file (generating one when pw is
// empty), resetting both epochs and the API token. Running gateways pick
// the change up from the file within a second.
func Rotate(file *configfile.File, pw string, p authtoken.HashParams) (password, token string, err error) {
	if pw == "" {
		if pw, err = authtoken.GeneratePassword(); err != nil {
			return "", "", err
		}
	}
	doc, err := file.Update(func(d *configfile.Doc) error { return setPassword(d, pw, p) })
	if err != nil {
		return "", "", err
	}
	token, _ = doc.String(KeyAPIToken)
	return pw, token, nil
}

func parse(d *configfile.Doc) (secrets, error) {
	var s secrets
	var ok bool
	if s.passwordHash, ok = d.String(KeyPasswordHash); !ok {
		return s, errors.New("config: password_hash is missing")
	}
	var err error
	if s.tokenKey, err = decodeKey(d, KeyTokenKey); err != nil {
		return s, err
	}
	if s.cookieSecret, err = decodeKey(d, KeyCookieSecret); err != nil {
		return s, err
	}
	if s.epochs.Bearer, _, err = d.Int(KeyBearerEpoch); err != nil {
		return s, err
	}
	if s.epochs.Cookie, _, err = d.Int(KeyCookieEpoch); err != nil {
		return s, err
	}
	if s.epochs.Bearer < 0 || s.epochs.Cookie < 0 {
		return s, errors.New("config: epochs must not be negative")
	}
	if s.allowedOrigins, err = d.Strings(KeyAllowedOrigins); err != nil {
		return s, err
	}
	if s.allowedHosts, err = d.Strings(KeyAllowedHosts); err != nil {
		return s, err
	}
	s.ids = KeyIDs{Token: keyID(s.tokenKey), Cookie: keyID(s.cookieSecret)}
	s.gen = s.ids.Token + "." + s.ids.Cookie
	return s, nil
}

// KeyIDs name the two signing keys.
type KeyIDs struct{ Token, Cookie string }

// keyID is a short public name for a set of keys: a truncated SHA-256,
// which tells nothing about the keys themselves.
func keyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:8])
}

func decodeKey(d *configfile.Doc, key string) ([]byte, error) {
	v, ok := d.String(key)
	if !ok {
		return nil, fmt.Errorf("config: %s is missing", key)
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(b) < 16 {
		return nil, fmt.Errorf("config: %s is not a base64 key of at least 16 bytes", key)
	}
	return b, nil
}

// OnChange registers fn to run after any epoch or key change (revocation
// here or elsewhere, a config edit, a rotation). fn must not block.
func (s *Store) OnChange(fn func()) {
	s.mu.Lock()
	s.listeners = append(s.listeners, fn)
	s.mu.Unlock()
}

func (s *Store) notify() {
	s.mu.RLock()
	ls := append([]func(){}, s.listeners...)
	s.mu.RUnlock()
	for _, fn := range ls {
		fn()
	}
}

// Epochs returns the current counters.
func (s *Store) Epochs() Epochs {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur.epochs
}

// AllowedOrigins returns the config's allowed_origins.
func (s *Store) AllowedOrigins() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.cur.allowedOrigins...)
}

// AllowedHosts returns the config's allowed_hosts.
func (s *Store) AllowedHosts() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.cur.allowedHosts...)
}

// CheckToken verifies an API token presented as kind (KindBearer or
// KindTkn).
func (s *Store) CheckToken(kind Kind, tok string) (Identity, error) {
	s.mu.RLock()
	key, ep, gen := s.cur.tokenKey, s.cur.epochs.Bearer, s.cur.ids.Token
	s.mu.RUnlock()
	if err := authtoken.CheckAPIToken(key, ep, tok); err != nil {
		return Identity{}, err
	}
	return Identity{Kind: kind, Epoch: ep, Gen: gen}, nil
}

// CheckCookie verifies a svc_auth cookie value, and that it was not
// signed out (a lookup in memory).
func (s *Store) CheckCookie(v string) (Identity, error) {
	s.mu.RLock()
	secret, ep, gen := s.cur.cookieSecret, s.cur.epochs.Cookie, s.cur.ids.Cookie
	s.mu.RUnlock()
	c, err := authtoken.VerifyCookie(secret, ep, v, s.opts.Now())
	if err != nil {
		return Identity{}, err
	}
	s.mu.RLock()
	_, out := s.out.ids[c.ID]
	s.mu.RUnlock()
	if out {
		return Identity{}, ErrSignedOut
	}
	return Identity{Kind: KindCookie, Epoch: ep, Gen: gen, Cookie: c.ID}, nil
}

// StillValid reports whether an identity checked earlier would pass now.
func (s *Store) StillValid(id Identity) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if id.Kind == KindCookie {
		_, out := s.out.ids[id.Cookie]
		return id.Gen == s.cur.ids.Cookie && id.Epoch == s.cur.epochs.Cookie && !out
	}
	return id.Gen == s.cur.ids.Token && id.Epoch == s.cur.epochs.Bearer
}

// CheckPassword verifies a login password (slow by design).
func (s *Store) CheckPassword(pw string) (bool, error) {
	s.mu.RLock()
	h := s.cur.passwordHash
	s.mu.RUnlock()
	return authtoken.VerifyPassword(h, pw)
}

// IssueCookie signs a new svc_auth value for the current cookie epoch.
func (s *Store) IssueCookie() (string, time.Duration, error) {
	s.mu.RLock()
	secret, ep := s.cur.cookieSecret, s.cur.epochs.Cookie
	s.mu.RUnlock()
	v, err := authtoken.SignCookie(secret, ep, s.opts.Now(), s.opts.CookieTTL)
	return v, s.opts.CookieTTL, err
}

// Revoke replaces the signing key of scope (the cookie secret for
// browsers, the token key for scripts) with a new random one and bumps the
// scope's epoch, writes both (and the new api_token) to the config file,
// and applies them here at once. Every credential of the scope made before
// fails, whatever epoch it claims, because its signature no longer
// matches.
//
// Other instances learn it at once through Redis: the epoch mirrored
// under the old key's id is bumped (so an instance that has not re-read
// the file yet refuses the old credentials by epoch), and a wake-up makes
// every instance re-read the config file, which carries the new key.
func (s *Store) Revoke(ctx context.Context, scope Scope) (Epochs, error) {
	if scope != ScopeBrowsers && scope != ScopeScripts {
		return Epochs{}, fmt.Errorf("unknown scope %q", scope)
	}
	key, err := authtoken.NewSecret(32)
	if err != nil {
		return Epochs{}, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.RLock()
	mem := s.cur
	s.mu.RUnlock()
	var next secrets
	_, err = s.opts.File.Update(func(d *configfile.Doc) error {
		fileSec, err := parse(d)
		if err != nil {
			return err
		}
		base := fileSec.epochs
		if fileSec.gen == mem.gen {
			base = maxEpochs(base, mem.epochs)
		}
		// Another instance may have rotated or revoked meanwhile: the file
		// is the record, and the keys it holds are the ones retired here.
		e, err := s.mergeRedis(ctx, fileSec.ids, base, scope)
		if err != nil {
			s.opts.Log.WarnContext(ctx, "redis_epoch_mirror_failed", "err", err)
			e = base
			if scope == ScopeBrowsers {
				e.Cookie++
			} else {
				e.Bearer++
			}
		}
		if fileSec.gen != mem.gen {
			if _, err := s.mergeRedis(ctx, mem.ids, maxEpochs(mem.epochs, e), scope); err != nil {
				s.opts.Log.WarnContext(ctx, "redis_epoch_mirror_failed", "err", err)
			}
		}
		enc := base64.StdEncoding.EncodeToString(key)
		tokenKey := fileSec.tokenKey
		if scope == ScopeBrowsers {
			d.SetString(KeyCookieSecret, enc)
		} else {
			d.SetString(KeyTokenKey, enc)
			tokenKey = key
		}
		d.SetInt(KeyBearerEpoch, e.Bearer)
		d.SetInt(KeyCookieEpoch, e.Cookie)
		d.SetString(KeyAPIToken, authtoken.APIToken(tokenKey, e.Bearer))
		next, err = parse(d)
		return err
	})
	if err != nil {
		return Epochs{}, err
	}
	s.mu.Lock()
	s.cur = next
	s.mu.Unlock()
	s.refreshStamp()
	s.notify()
	// Seed the mirror of the new keys; this publishes the wake-up that
	// makes the other instances re-read the file.
	if _, err := s.mergeRedis(ctx, next.ids, next.epochs, ""); err != nil {
		s.opts.Log.WarnContext(ctx, "redis_epoch_mirror_failed", "err", err)
	}
	return next.epochs, nil
}

func maxEpochs(a, b Epochs) Epochs {
	return Epochs{Cookie: max(a.Cookie, b.Cookie), Bearer: max(a.Bearer, b.Bearer)}
}

// adopt raises the in-memory epochs to e (never lowers them) and notifies.
func (s *Store) adopt(e Epochs) bool {
	s.mu.Lock()
	n := maxEpochs(s.cur.epochs, e)
	changed := n != s.cur.epochs
	s.cur.epochs = n
	s.mu.Unlock()
	if changed {
		s.notify()
	}
	return changed
}

type fileStamp struct {
	mod  time.Time
	size int64
	ino  uint64
}

func stampOf(path string) (fileStamp, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: st.ModTime(), size: st.Size(), ino: inode(st)}, nil
}

func (s *Store) refreshStamp() {
	if st, err := stampOf(s.opts.File.Path()); err == nil {
		s.mu.Lock()
		s.fileStamp = st
		s.mu.Unlock()
	}
}
