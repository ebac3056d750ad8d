package journal

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SettingMaxFileMB is the key of the server setting, in chat's app_settings
// table, that caps the size of a journaled file.
const SettingMaxFileMB = "shadow_git.max_file_size_mb"

// AppSettingsCap answers the server-wide size cap: the value of
// shadow_git.max_file_size_mb in chat's app_settings table (a JSON number,
// 0 disables the cap) when it is set there, else fallback (from the
// environment, SHADOW_MAX_FILE_MB). A failing read falls back and is
// logged.
func AppSettingsCap(pool *pgxpool.Pool, fallback int, log *slog.Logger) SizeCap {
	return func(ctx context.Context) int {
		var raw []byte
		err := pool.QueryRow(ctx, `SELECT value::text FROM app_settings WHERE key = $1`, SettingMaxFileMB).Scan(&raw)
		var pe *pgconn.PgError
		switch {
		case errors.Is(err, pgx.ErrNoRows), errors.As(err, &pe) && pe.Code == "42P01":
			return fallback
		case err != nil:
			log.WarnContext(ctx, "read size cap setting", "err", err)
			return fallback
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil || n < 0 {
			log.WarnContext(ctx, "ignoring a bad size cap setting", "key", SettingMaxFileMB, "value", string(raw))
			return fallback
		}
		return n
	}
}
