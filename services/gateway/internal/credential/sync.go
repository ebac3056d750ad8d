package credential

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/authtoken"
	"github.com/svc-code/svc-code/libs/configfile"
	"github.com/svc-code/svc-code/libs/redisx"
)

// mergeScript raises the mirrored epochs to at least the given ones,
// optionally bumps one of them, publishes a wake-up when anything changed,
// and returns the result. Each epoch is mirrored under the id of its own
// signing key (KEYS[1] the token key's, KEYS[2] the cookie secret's), so an
// instance that still holds an old key learns that it was retired. Running
// it in Redis makes concurrent revocations on several instances each count.
var mergeScript = redis.NewScript(`
local b = tonumber(redis.call('GET', KEYS[1]) or '0')
local c = tonumber(redis.call('GET', KEYS[2]) or '0')
local nb = math.max(b, tonumber(ARGV[1]))
local nc = math.max(c, tonumber(ARGV[2]))
if ARGV[3] == 'scripts' then nb = nb + 1 elseif ARGV[3] == 'browsers' then nc = nc + 1 end
if nb ~= b then redis.call('SET', KEYS[1], nb) end
if nc ~= c then redis.call('SET', KEYS[2], nc) end
if nb ~= b or nc ~= c then redis.call('PUBLISH', KEYS[3], 'epochs') end
return {nb, nc}
`)

func changedChannel(keys redisx.Keys) string { return keys.Key("auth", "changed") }

func (s *Store) channel() string { return changedChannel(s.opts.Keys) }

func (s *Store) mergeRedis(ctx context.Context, ids KeyIDs, e Epochs, bump Scope) (Epochs, error) {
	if s.opts.Redis == nil {
		return Epochs{}, errors.New("no redis configured")
	}
	return mergeEpochs(ctx, s.opts.Redis, s.opts.Keys, ids, e, bump)
}

func mergeEpochs(ctx context.Context, rdb *redis.Client, keys redisx.Keys, ids KeyIDs, e Epochs, bump Scope) (Epochs, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rkeys := []string{keys.Key("auth", "epoch", "bearer", ids.Token), keys.Key("auth", "epoch", "cookie", ids.Cookie), changedChannel(keys)}
	res, err := mergeScript.Run(ctx, rdb, rkeys, e.Bearer, e.Cookie, string(bump)).Int64Slice()
	if err != nil {
		return Epochs{}, fmt.Errorf("mirror epochs in redis: %w", err)
	}
	if len(res) != 2 {
		return Epochs{}, fmt.Errorf("mirror epochs in redis: unexpected reply %v", res)
	}
	return Epochs{Bearer: res[0], Cookie: res[1]}, nil
}

// CurrentKeyIDs names the signing keys the config file holds now (ok is
// false when it has none yet), for Retire.
func CurrentKeyIDs(file *configfile.File) (ids KeyIDs, ok bool, err error) {
	d, err := file.Read()
	if err != nil {
		return KeyIDs{}, false, err
	}
	sec, err := parse(d)
	if err != nil {
		return KeyIDs{}, false, nil //nolint:nilerr // an incomplete file has no keys to retire
	}
	return sec.ids, true, nil
}

// Retire tells running gateways that the keys ids are gone (the passwd
// command calls it after a rotation): both epochs mirrored under them are
// bumped, so an instance still holding those keys refuses every credential
// made with them at once, and the published wake-up makes every instance
// re-read the config file.
func Retire(ctx context.Context, rdb *redis.Client, keys redisx.Keys, ids KeyIDs) error {
	for _, scope := range []Scope{ScopeScripts, ScopeBrowsers} {
		if _, err := mergeEpochs(ctx, rdb, keys, ids, Epochs{}, scope); err != nil {
			return err
		}
	}
	return nil
}

// syncRedis merges this instance's epochs with the mirror and adopts the
// result; a higher epoch learnt from Redis is written to the config file.
func (s *Store) syncRedis(ctx context.Context) error {
	s.mu.RLock()
	ids, e := s.cur.ids, s.cur.epochs
	s.mu.RUnlock()
	got, err := s.mergeRedis(ctx, ids, e, "")
	if err != nil {
		return err
	}
	if s.adopt(got) {
		s.opts.Log.InfoContext(ctx, "epochs_adopted", "source", "redis", "bearer_epoch", got.Bearer, "cookie_epoch", got.Cookie)
		s.persist()
	}
	return nil
}

// persist writes the in-memory epochs (and the matching api_token) to the
// config file when they are ahead of it.
func (s *Store) persist() {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.RLock()
	mem := s.cur
	s.mu.RUnlock()
	_, err := s.opts.File.Update(func(d *configfile.Doc) error {
		fileSec, err := parse(d)
		if err != nil {
			return err
		}
		if fileSec.gen != mem.gen {
			return nil // rotated meanwhile; the file watcher reloads
		}
		e := maxEpochs(fileSec.epochs, mem.epochs)
		d.SetInt(KeyBearerEpoch, e.Bearer)
		d.SetInt(KeyCookieEpoch, e.Cookie)
		d.SetString(KeyAPIToken, authtoken.APIToken(mem.tokenKey, e.Bearer))
		return nil
	})
	if err != nil {
		s.opts.Log.Error("config_write_failed", "err", err)
		return
	}
	s.refreshStamp()
}

// Run keeps the store current until ctx ends: it listens for epoch changes
// and sign-outs published by other instances, polls Redis and the config
// file every Poll as a fallback, and reloads on a rotated password.
func (s *Store) Run(ctx context.Context) {
	wake := make(chan struct{}, 1)
	wakeOut := make(chan struct{}, 1)
	if s.opts.Redis != nil {
		sub := s.opts.Redis.Subscribe(ctx, s.channel())
		defer func() { _ = sub.Close() }()
		go func() {
			for m := range sub.Channel() {
				ch := wake
				if m.Payload == signedOutWake {
					ch = wakeOut // a sign-out: nothing to re-read in the file
				}
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}()
	}
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
			// Another instance revoked or rotated: the new keys are in the
			// config file, whatever its time stamp says.
			s.checkFile(ctx, true)
		case <-t.C:
			s.checkFile(ctx, false)
		case <-wakeOut:
		}
		if s.opts.Redis != nil {
			if err := s.syncRedis(ctx); err != nil && ctx.Err() == nil {
				s.opts.Log.DebugContext(ctx, "redis_epoch_sync_failed", "err", err)
			}
			if err := s.syncSignedOut(ctx); err != nil && ctx.Err() == nil {
				s.opts.Log.DebugContext(ctx, "redis_signed_out_sync_failed", "err", err)
			}
		}
	}
}

// checkFile re-reads the config file when it changed on disk (or always,
// with force).
func (s *Store) checkFile(ctx context.Context, force bool) {
	doc, sec, rotated, lists, ok := s.reloadFile(ctx, force)
	if ok {
		s.applyReload(ctx, doc, sec, rotated, lists)
	}
}

// reloadFile reads the config file and applies new keys, the password hash
// and allowed_origins. It holds writeMu, so a read that started before this
// instance's own write can never bring back the keys that write replaced.
func (s *Store) reloadFile(ctx context.Context, force bool) (doc *configfile.Doc, sec secrets, rotated, lists, ok bool) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	st, err := stampOf(s.opts.File.Path())
	if err != nil {
		return nil, sec, false, false, false
	}
	s.mu.RLock()
	same := st == s.fileStamp
	s.mu.RUnlock()
	if same && !force {
		return nil, sec, false, false, false
	}
	doc, err = s.opts.File.Read()
	if err == nil {
		sec, err = parse(doc)
	}
	if err != nil {
		s.opts.Log.ErrorContext(ctx, "config_reload_failed", "err", err, "path", s.opts.File.Path())
		s.mu.Lock()
		s.fileStamp = st // report a broken file once, not every tick
		s.mu.Unlock()
		return nil, sec, false, false, false
	}
	s.mu.Lock()
	s.fileStamp = st
	rotated = sec.gen != s.cur.gen
	lists = !slices.Equal(sec.allowedOrigins, s.cur.allowedOrigins) || !slices.Equal(sec.allowedHosts, s.cur.allowedHosts)
	if rotated {
		s.cur = sec
	} else {
		s.cur.allowedOrigins = sec.allowedOrigins
		s.cur.allowedHosts = sec.allowedHosts
		s.cur.passwordHash = sec.passwordHash
	}
	s.mu.Unlock()
	return doc, sec, rotated, lists, true
}

// applyReload tells the listeners and Redis what reloadFile found.
func (s *Store) applyReload(ctx context.Context, doc *configfile.Doc, sec secrets, rotated, lists bool) {
	switch {
	case rotated:
		s.opts.Log.InfoContext(ctx, "credentials_reloaded", "reason", "signing keys replaced")
		s.notify()
		if s.opts.Redis != nil {
			_ = s.syncRedis(ctx)
		}
	case s.adopt(sec.epochs):
		s.opts.Log.InfoContext(ctx, "epochs_adopted", "source", "config_file", "bearer_epoch", sec.epochs.Bearer, "cookie_epoch", sec.epochs.Cookie)
		if s.opts.Redis != nil {
			_ = s.syncRedis(ctx)
		}
		// A hand edit leaves api_token stale: write the current one.
		if tok, _ := doc.String(KeyAPIToken); tok != authtoken.APIToken(sec.tokenKey, s.Epochs().Bearer) {
			s.persist()
		}
	case lists:
		s.opts.Log.InfoContext(ctx, "config_reloaded", "reason", "allowed_origins or allowed_hosts changed")
		s.notify()
	}
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
