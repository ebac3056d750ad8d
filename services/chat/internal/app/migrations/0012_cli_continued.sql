-- A session made by "Continue here" (POST /api/cli-sessions/{provider}/{id}/continue)
-- records the CLI session it continues, so that the session object can link
-- back to the transcript (cli_session) for as long as the session holds
-- that conversation: Clear moves it to the archived copy.
ALTER TABLE sessions ADD COLUMN cli_session_id text;

-- Such sessions were created before this column with their provider
-- session id set and no turn yet: mark them, as far as they can be told.
UPDATE sessions SET cli_session_id = provider_session_id
	WHERE provider_session_id IS NOT NULL AND parent_id IS NULL AND turns = 0;

-- A session that resumes an agent conversation cannot change provider
-- (the other provider cannot resume it): its provider is locked from the
-- start, not only after the first turn.
UPDATE sessions SET provider_locked = true
	WHERE provider_session_id IS NOT NULL AND NOT provider_locked;
