package credential

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/authtoken"
	"github.com/svc-code/svc-code/libs/configfile"
)

// mergeScript raises the mirrored epochs to at least the given ones,
// optionally bumps one of them, publishes a wake-up when anything changed,
// and returns the result. Running it in Redis makes concurrent revocations
// on several instances each count.
var mergeScript = redis.NewScript(`
local b = tonumber(redis.call('HGET', KEYS[1], 'bearer') or '0')
local c = tonumber(redis.call('HGET', KEYS[1], 'cookie') or '0')
local nb = math.max(b, tonumber(ARGV[1]))
local nc = math.max(c, tonumber(ARGV[2]))
if ARGV[3] == 'scripts' then nb = nb + 1 elseif ARGV[3] == 'browsers' then nc = nc + 1 end
if nb ~= b or nc ~= c then
  redis.call('HSET', KEYS[1], 'bearer', nb, 'cookie', nc)
  redis.call('PUBLISH', KEYS[2], KEYS[1])
end
return {nb, nc}
`)

func (s *Store) epochKey(gen string) string { return s.opts.Keys.Key("auth", "epochs", gen) }
func (s *Store) channel() string            { return s.opts.Keys.Key("auth", "changed") }

func (s *Store) mergeRedis(ctx context.Context, gen string, e Epochs, bump Scope) (Epochs, error) {
	if s.opts.Redis == nil {
		return Epochs{}, errors.New("no redis configured")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	res, err := mergeScript.Run(ctx, s.opts.Redis, []string{s.epochKey(gen), s.channel()}, e.Bearer, e.Cookie, string(bump)).Int64Slice()
	if err != nil {
		return Epochs{}, fmt.Errorf("mirror epochs in redis: %w", err)
	}
	if len(res) != 2 {
		return Epochs{}, fmt.Errorf("mirror epochs in redis: unexpected reply %v", res)
	}
	return Epochs{Bearer: res[0], Cookie: res[1]}, nil
}

// syncRedis merges this instance's epochs with the mirror and adopts the
// result; a higher epoch learnt from Redis is written to the config file.
func (s *Store) syncRedis(ctx context.Context) error {
	s.mu.RLock()
	gen, e := s.cur.gen, s.cur.epochs
	s.mu.RUnlock()
	got, err := s.mergeRedis(ctx, gen, e, "")
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
// published by other instances, polls Redis and the config file every
// Poll as a fallback, and reloads on a rotated password.
func (s *Store) Run(ctx context.Context) {
	wake := make(chan struct{}, 1)
	if s.opts.Redis != nil {
		sub := s.opts.Redis.Subscribe(ctx, s.channel())
		defer func() { _ = sub.Close() }()
		go func() {
			for range sub.Channel() {
				select {
				case wake <- struct{}{}:
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
		case <-t.C:
			s.checkFile(ctx)
		}
		if s.opts.Redis != nil {
			if err := s.syncRedis(ctx); err != nil && ctx.Err() == nil {
				s.opts.Log.DebugContext(ctx, "redis_epoch_sync_failed", "err", err)
			}
		}
	}
}

// checkFile re-reads the config file when it changed on disk.
func (s *Store) checkFile(ctx context.Context) {
	st, err := stampOf(s.opts.File.Path())
	if err != nil {
		return
	}
	s.mu.RLock()
	same := st == s.fileStamp
	s.mu.RUnlock()
	if same {
		return
	}
	doc, err := s.opts.File.Read()
	var sec secrets
	if err == nil {
		sec, err = parse(doc)
	}
	if err != nil {
		s.opts.Log.ErrorContext(ctx, "config_reload_failed", "err", err, "path", s.opts.File.Path())
		s.mu.Lock()
		s.fileStamp = st // report a broken file once, not every tick
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	s.fileStamp = st
	rotated := sec.gen != s.cur.gen
	if rotated {
		s.cur = sec
	} else {
		s.cur.allowedOrigins = sec.allowedOrigins
		s.cur.passwordHash = sec.passwordHash
	}
	s.mu.Unlock()
	switch {
	case rotated:
		s.opts.Log.InfoContext(ctx, "credentials_reloaded", "reason", "password rotated")
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
	}
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
