-- Chat sessions and their numbered message log.
--
-- Every user prompt and every agent message of a session gets the next
-- line number: AppendMessage bumps sessions.next_line and inserts the
-- message in one statement, so lines are unique and gapless per session.
-- The sid of a stored prompt is '{session_id}:{line}'.
CREATE TABLE sessions (
	id                  text        PRIMARY KEY,
	title               text        NOT NULL DEFAULT '',
	cwd                 text        NOT NULL,
	provider            text        NOT NULL,
	provider_locked     boolean     NOT NULL DEFAULT false,
	permission_mode     text        NOT NULL DEFAULT 'default',
	model               text        NOT NULL DEFAULT '',
	archived            boolean     NOT NULL DEFAULT false,
	parent_id           text        REFERENCES sessions (id) ON DELETE SET NULL,
	-- The agent's own conversation id, for --resume (NULL until reported).
	provider_session_id text,
	cost_usd            numeric     NOT NULL DEFAULT 0,
	turns               integer     NOT NULL DEFAULT 0,
	-- The last line handed out; the next message gets next_line + 1.
	next_line           bigint      NOT NULL DEFAULT 0,
	created_at          timestamptz NOT NULL DEFAULT now(),
	updated_at          timestamptz NOT NULL DEFAULT now(),
	CHECK (id <> ''),
	CHECK (cwd <> ''),
	CHECK (turns >= 0),
	CHECK (next_line >= 0)
);

-- GET /api/sessions: newest first, keyset-paginated on (created_at, id),
-- optionally filtered by cwd, always by archived.
CREATE INDEX sessions_list_idx ON sessions (archived, created_at DESC, id DESC);
CREATE INDEX sessions_cwd_list_idx ON sessions (cwd, archived, created_at DESC, id DESC);
CREATE INDEX sessions_parent_idx ON sessions (parent_id) WHERE parent_id IS NOT NULL;

CREATE TABLE session_messages (
	session_id  text        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	line        bigint      NOT NULL,
	kind        text        NOT NULL,
	payload     jsonb       NOT NULL,
	is_favorite boolean     NOT NULL DEFAULT false,
	created_at  timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (session_id, line),
	CHECK (line >= 1),
	CHECK (kind <> '')
);
