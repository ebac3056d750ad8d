package svcenv

import (
	"net/url"

	"github.com/svc-code/svc-code/libs/envconf"
)

// EnvRedisPassword names the variable (and, with _FILE, the file) holding
// Redis's password, for a REDIS_URL that carries none.
const EnvRedisPassword = "REDIS_PASSWORD"

// ReadRedisURL reads Redis's URL the way every service does: REDIS_URL, or
// the file named by REDIS_URL_FILE (it may carry a password:
// redis://:password@host:port/db, or an ACL user: redis://user:password@...),
// default DefaultRedisURL; and REDIS_PASSWORD, or the file named by
// REDIS_PASSWORD_FILE, which is put into a URL that has no password. The
// URL is checked here, so a wrong one is reported with the other settings;
// errors never repeat it, as it may hold a password.
func ReadRedisURL(r *envconf.Reader) string {
	raw := r.Secret(EnvRedisURL)
	if raw == "" {
		raw = DefaultRedisURL
	}
	password := r.Secret(EnvRedisPassword)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" && u.Scheme != "unix" {
		r.Fail("%s is not a URL of the form redis://[user:password@]host:port/db", EnvRedisURL)
		return raw
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
	default:
		r.Fail("%s: scheme %q, want redis, rediss or unix", EnvRedisURL, u.Scheme)
		return raw
	}
	if password == "" {
		return raw
	}
	if _, has := u.User.Password(); has {
		r.Fail("%s carries a password and %s is set too; give it in one place", EnvRedisURL, EnvRedisPassword)
		return raw
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String()
}
