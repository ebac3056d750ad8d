package store

import (
	"context"
	"fmt"
)

// SessionsByProviderSession maps each of ids (agent conversation ids of
// provider) to the svc-code session that runs it: the one whose
// provider_session_id it is, an original before a fork that has not run
// yet (which still names its parent's conversation), the most recently
// updated first. Ids no session runs are absent.
func (s *Store) SessionsByProviderSession(ctx context.Context, provider string, ids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.db.Query(ctx, `SELECT DISTINCT ON (provider_session_id) provider_session_id, id FROM sessions
		WHERE provider_session_id = ANY($1) AND provider = $2
		ORDER BY provider_session_id, (parent_id IS NULL) DESC, updated_at DESC`, ids, provider)
	if err != nil {
		return nil, fmt.Errorf("sessions by provider session: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var psid, id string
		if err := rows.Scan(&psid, &id); err != nil {
			return nil, fmt.Errorf("sessions by provider session: %w", err)
		}
		out[psid] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sessions by provider session: %w", err)
	}
	return out, nil
}
