package sqlapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Deadline settings.
const (
	// DefaultTimeout is each query's deadline unless the server config
	// key TimeoutKey says otherwise.
	DefaultTimeout = 30 * time.Second
	// TimeoutKey is the server config key holding the deadline in
	// seconds (GET/PUT /api/app/config): the row "config/"+TimeoutKey of
	// chat's app_settings table, shared by every service.
	TimeoutKey = "shadow_db.sql_timeout_s"
	// timeoutRow is TimeoutKey's key in app_settings.
	timeoutRow = "config/" + TimeoutKey
	// MaxTimeout bounds the configured deadline.
	MaxTimeout = time.Hour
	// settingTTL is how long a read of TimeoutKey is reused, unless a
	// change notice (Setting.Reload) comes first.
	settingTTL = 5 * time.Second
)

// TimeoutFunc returns the deadline of the query about to run.
type TimeoutFunc func(ctx context.Context) time.Duration

// FixedTimeout is a TimeoutFunc that always answers d.
func FixedTimeout(d time.Duration) TimeoutFunc {
	return func(context.Context) time.Duration { return d }
}

// SettingTimeout returns a Setting that reads the server config key
// TimeoutKey (the row "config/shadow_db.sql_timeout_s" of app_settings)
// through db, the owner role's pool (the read-only role cannot read it).
// A read is reused for 5 s at most; Reload, called on the change notice
// chat publishes (libs/confignotice), re-reads at once, so a change
// applies to the next query. The value is a JSON number of seconds (a
// numeric string is accepted too), above 0 and at most 3600; fractions
// are allowed. When the key is unset, the table does not exist yet (chat
// creates it), or the value is bad (logged), the deadline is
// DefaultTimeout.
func SettingTimeout(db *pgxpool.Pool, log *slog.Logger) *Setting {
	return &Setting{db: db, log: log}
}

// Timeout is s as a TimeoutFunc, for Config.Timeout.
func (s *Setting) Timeout() TimeoutFunc { return s.get }

// Reload reads the setting again now, and returns the deadline it gives.
func (s *Setting) Reload(ctx context.Context) time.Duration {
	s.mu.Lock()
	s.readAt = time.Time{}
	s.mu.Unlock()
	return s.get(ctx)
}

// Setting is the deadline setting's reader.
type Setting struct {
	db  *pgxpool.Pool
	log *slog.Logger

	mu      sync.Mutex
	value   time.Duration
	readAt  time.Time
	lastBad string
}

func (s *Setting) get(ctx context.Context) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.readAt.IsZero() && time.Since(s.readAt) < settingTTL {
		return s.value
	}
	s.value = DefaultTimeout
	s.readAt = time.Now()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var raw []byte
	err := s.db.QueryRow(rctx, `SELECT value::text FROM app_settings WHERE key = $1`, timeoutRow).Scan(&raw)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return s.value
	case errors.As(err, &pgErr) && pgErr.Code == "42P01": // undefined_table: chat has not started yet
		return s.value
	case err != nil:
		s.log.WarnContext(ctx, "sql timeout setting unreadable, using the default", "key", TimeoutKey, "err", err)
		return s.value
	}
	d, ok := parseTimeout(raw)
	if !ok {
		if s.lastBad != string(raw) {
			s.log.WarnContext(ctx, "sql timeout setting invalid, using the default", "key", TimeoutKey, "value", string(raw))
			s.lastBad = string(raw)
		}
		return s.value
	}
	s.value = d
	return d
}

// parseTimeout reads a JSON number of seconds, or a string holding one.
func parseTimeout(raw []byte) (time.Duration, bool) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, false
	}
	var secs float64
	switch x := v.(type) {
	case float64:
		secs = x
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return 0, false
		}
		secs = f
	default:
		return 0, false
	}
	if math.IsNaN(secs) || secs <= 0 || secs > MaxTimeout.Seconds() {
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}
