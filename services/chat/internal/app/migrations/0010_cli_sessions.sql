-- The CLI session routes (internal/clisessions, /api/cli-sessions) link a
-- transcript of Claude Code or Codex to the svc-code session that runs it
-- by the agent's own conversation id: an index, so that a page of the
-- listing asks for its ids in one indexed query.
CREATE INDEX sessions_provider_session_id ON sessions (provider_session_id)
	WHERE provider_session_id IS NOT NULL;
