package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Setting reads the server-wide setting key into v and reports whether it
// is set.
func (s *Store) Setting(ctx context.Context, key string, v any) (bool, error) {
	var raw []byte
	err := s.db.QueryRow(ctx, `SELECT value FROM app_settings WHERE key = $1`, key).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read setting %s: %w", key, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("read setting %s: %w", key, err)
	}
	return true, nil
}

// SetSetting stores v as the server-wide setting key, for every instance.
func (s *Store) SetSetting(ctx context.Context, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store setting %s: %w", key, err)
	}
	_, err = s.db.Exec(ctx, `INSERT INTO app_settings (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = now()`, key, string(raw))
	if err != nil {
		return fmt.Errorf("store setting %s: %w", key, err)
	}
	return nil
}

// DeleteSetting unsets the setting key; unsetting an unset key is not an
// error.
func (s *Store) DeleteSetting(ctx context.Context, key string) error {
	if _, err := s.db.Exec(ctx, `DELETE FROM app_settings WHERE key = $1`, key); err != nil {
		return fmt.Errorf("delete setting %s: %w", key, err)
	}
	return nil
}
