package credential

import (
	"context"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/svc-code/svc-code/libs/authtoken"
	"github.com/svc-code/svc-code/libs/configfile"
)

// ChangePassword sets a new password from a running gateway (the browser's
// POST /api/auth/password): as Rotate, the hash, a new token key, a new
// cookie secret and both epochs reset are written to the config file, and
// here they apply at once. The keys it replaces (those of the file and
// those this instance held) are retired in Redis, so every other instance
// refuses the old credentials at once and re-reads the file. It answers
// the new API token. The caller has checked the current password.
func (s *Store) ChangePassword(ctx context.Context, pw string) (token string, err error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.RLock()
	mem := s.cur
	s.mu.RUnlock()
	var old KeyIDs
	var next secrets
	_, err = s.opts.File.Update(func(d *configfile.Doc) error {
		fileSec, err := parse(d)
		if err != nil {
			return err
		}
		old = fileSec.ids
		if err := setPassword(d, pw, s.opts.Params); err != nil {
			return err
		}
		next, err = parse(d)
		return err
	})
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.cur = next
	s.mu.Unlock()
	s.refreshStamp()
	s.notify()
	if s.opts.Redis != nil {
		retired := []KeyIDs{old}
		if mem.ids != old {
			retired = append(retired, mem.ids)
		}
		for _, ids := range retired {
			if err := Retire(ctx, s.opts.Redis, s.opts.Keys, ids); err != nil {
				s.opts.Log.WarnContext(ctx, "redis_epoch_mirror_failed", "err", err)
			}
		}
		if _, err := s.mergeRedis(ctx, next.ids, next.epochs, ""); err != nil {
			s.opts.Log.WarnContext(ctx, "redis_epoch_mirror_failed", "err", err)
		}
	}
	return authtoken.APIToken(next.tokenKey, next.epochs.Bearer), nil
}

// Password rules, shared by `gateway passwd` and POST /api/auth/password.
const (
	MinPasswordLen = 8
	// MaxPasswordLen is also the longest password the login accepts, so a
	// longer one could never be used.
	MaxPasswordLen = 1024
)

// CheckNewPassword applies the rules a new password must meet: 8 to 1024
// bytes of UTF-8 without control characters (which the login form could
// not carry faithfully).
func CheckNewPassword(pw string) error {
	if len(pw) < MinPasswordLen || len(pw) > MaxPasswordLen {
		return fmt.Errorf("a password must be %d to %d bytes long", MinPasswordLen, MaxPasswordLen)
	}
	if !utf8.ValidString(pw) {
		return errors.New("a password must be UTF-8 text")
	}
	for _, r := range pw {
		if unicode.IsControl(r) {
			return errors.New("a password must not hold control characters (tabs, line breaks, ...)")
		}
	}
	return nil
}

// APIToken is the API token valid now (the config file's api_token line).
func (s *Store) APIToken() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return authtoken.APIToken(s.cur.tokenKey, s.cur.epochs.Bearer)
}
