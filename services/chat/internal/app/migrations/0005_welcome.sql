-- The welcome view (internal/workspace): the files each session changed,
-- and full-text search over session titles and prompts.

-- The distinct file paths a session's agent wrote: the inputs of its
-- Edit, Write, MultiEdit and NotebookEdit tool_use blocks (file_path,
-- notebook_path, path, or changes[].path as the Codex provider reports
-- them). Paths over 2048 bytes are skipped. A trigger keeps it up to date
-- as agent messages are stored (forks included, since a fork copies its
-- log), so the welcome list counts without reading the logs.
CREATE TABLE session_files (
	session_id text        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	path       text        NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (session_id, path)
);

-- session_changed_paths returns the file paths an agent message's
-- file-editing tool_use blocks name. It never fails on an unexpected
-- shape: anything else yields no path.
CREATE FUNCTION session_changed_paths(payload jsonb) RETURNS SETOF text
LANGUAGE sql IMMUTABLE AS $$
	SELECT DISTINCT x.p
	FROM jsonb_array_elements(CASE WHEN jsonb_typeof(payload -> 'message' -> 'content') = 'array'
			THEN payload -> 'message' -> 'content' ELSE '[]'::jsonb END) AS c,
		LATERAL (
			SELECT c -> 'input' ->> 'file_path'
			UNION ALL SELECT c -> 'input' ->> 'notebook_path'
			UNION ALL SELECT c -> 'input' ->> 'path'
			UNION ALL SELECT ch ->> 'path'
				FROM jsonb_array_elements(CASE WHEN jsonb_typeof(c -> 'input' -> 'changes') = 'array'
					THEN c -> 'input' -> 'changes' ELSE '[]'::jsonb END) AS ch
		) AS x(p)
	WHERE jsonb_typeof(c) = 'object'
		AND c ->> 'type' = 'tool_use'
		AND c ->> 'name' IN ('Edit', 'Write', 'MultiEdit', 'NotebookEdit')
		AND x.p IS NOT NULL AND x.p <> '' AND octet_length(x.p) <= 2048
$$;

CREATE FUNCTION session_files_collect() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO session_files (session_id, path)
	SELECT NEW.session_id, p FROM session_changed_paths(NEW.payload) AS p
	ON CONFLICT DO NOTHING;
	RETURN NULL;
END
$$;

CREATE TRIGGER session_messages_collect_files
	AFTER INSERT ON session_messages
	FOR EACH ROW WHEN (NEW.kind = 'agent' AND NEW.payload ->> 'type' = 'assistant')
	EXECUTE FUNCTION session_files_collect();

INSERT INTO session_files (session_id, path)
SELECT DISTINCT m.session_id, p
FROM session_messages AS m, session_changed_paths(m.payload) AS p
WHERE m.kind = 'agent' AND m.payload ->> 'type' = 'assistant'
ON CONFLICT DO NOTHING;

-- Full-text search (POST /api/welcome/search): the queries use exactly
-- these expressions. A prompt is indexed on its first 32768 characters,
-- which keeps every tsvector far below PostgreSQL's 1 MB limit.
CREATE INDEX sessions_title_fts_idx ON sessions
	USING gin (to_tsvector('english', title));
CREATE INDEX session_messages_prompt_fts_idx ON session_messages
	USING gin (to_tsvector('english', left(coalesce(payload ->> 'content', ''), 32768)))
	WHERE kind = 'user_prompt';
