package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNoSession means a chat session id is unknown.
var ErrNoSession = errors.New("no such session")

// Sessions ties Claude Code's session uuids (the <session uuid> directory
// of a task file) to chat's sessions, whose provider_session_id holds the
// uuid of their agent conversation.
type Sessions interface {
	// ChatSessions maps each agent session uuid to its chat session id;
	// uuids of no chat session are left out.
	ChatSessions(ctx context.Context, agentSessions []string) (map[string]string, error)
	// AgentSession returns the agent session uuid of a chat session ("" when
	// its agent has not reported one yet), or ErrNoSession.
	AgentSession(ctx context.Context, chatSession string) (string, error)
}

// PGSessions reads chat's sessions table.
type PGSessions struct{ DB *pgxpool.Pool }

var _ Sessions = PGSessions{}

// ChatSessions implements Sessions.
func (p PGSessions) ChatSessions(ctx context.Context, agentSessions []string) (map[string]string, error) {
	out := map[string]string{}
	if len(agentSessions) == 0 {
		return out, nil
	}
	rows, err := p.DB.Query(ctx, `SELECT provider_session_id, id FROM sessions
		WHERE provider_session_id = ANY($1) ORDER BY updated_at`, agentSessions)
	if err != nil {
		return nil, fmt.Errorf("map agent sessions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var agentID, id string
		if err := rows.Scan(&agentID, &id); err != nil {
			return nil, fmt.Errorf("map agent sessions: %w", err)
		}
		out[agentID] = id // the most recently active wins (forks share a uuid until their first turn)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("map agent sessions: %w", err)
	}
	return out, nil
}

// AgentSession implements Sessions.
func (p PGSessions) AgentSession(ctx context.Context, chatSession string) (string, error) {
	var agentID string
	err := p.DB.QueryRow(ctx, `SELECT coalesce(provider_session_id, '') FROM sessions WHERE id = $1`, chatSession).Scan(&agentID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("session %s: %w", chatSession, ErrNoSession)
	}
	if err != nil {
		return "", fmt.Errorf("read session %s: %w", chatSession, err)
	}
	return agentID, nil
}
