-- Turns recorded from chat's turn events, their tool calls, tags on turns
-- and on sessions, and the cost per turn and model. Column by column in
-- docs/api.md ("Analytics") and internal/schema; SELECT on these is granted
-- to the read-only role by the service after the migrations (schema.Tables).

CREATE TABLE turns (
	id                    text           PRIMARY KEY,
	session_id            text           NOT NULL,
	turn_number           integer,
	started_at            timestamptz    NOT NULL,
	ended_at              timestamptz,
	duration_ms           bigint,
	user_prompt           text           NOT NULL DEFAULT '',
	model                 text           NOT NULL DEFAULT '',
	provider              text           NOT NULL DEFAULT '',
	cost                  numeric(20,10) NOT NULL DEFAULT 0,
	input_tokens          bigint         NOT NULL DEFAULT 0,
	output_tokens         bigint         NOT NULL DEFAULT 0,
	cache_read_tokens     bigint         NOT NULL DEFAULT 0,
	cache_creation_tokens bigint         NOT NULL DEFAULT 0,
	tool_calls            integer        NOT NULL DEFAULT 0,
	is_error              boolean        NOT NULL DEFAULT false,
	stop_reason           text           NOT NULL DEFAULT '',
	project               text           NOT NULL DEFAULT '',
	cwd                   text           NOT NULL DEFAULT '',
	prompt_tsv            tsvector       NOT NULL GENERATED ALWAYS AS (to_tsvector('english', user_prompt)) STORED
);

-- Lists are newest first, paged by (started_at, id); filtered by session,
-- project or model.
CREATE INDEX turns_started_idx ON turns (started_at DESC, id DESC);
CREATE INDEX turns_session_idx ON turns (session_id, started_at DESC, id DESC);
CREATE INDEX turns_project_idx ON turns (project, started_at DESC, id DESC);
CREATE INDEX turns_model_idx ON turns (model, started_at DESC, id DESC);
-- Full-text prompt search.
CREATE INDEX turns_prompt_tsv_idx ON turns USING gin (prompt_tsv);

CREATE TABLE turn_tools (
	turn_id     text    NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
	seq         integer NOT NULL CHECK (seq > 0),
	name        text    NOT NULL,
	duration_ms bigint,
	outcome     text    NOT NULL CHECK (outcome IN ('ok', 'error', 'denied')),
	PRIMARY KEY (turn_id, seq)
);

-- Costs per tool.
CREATE INDEX turn_tools_name_idx ON turn_tools (name, turn_id);

CREATE TABLE turn_tags (
	turn_id    text        NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
	tag        text        NOT NULL CHECK (length(tag) BETWEEN 1 AND 64),
	created_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (turn_id, tag)
);

CREATE INDEX turn_tags_tag_idx ON turn_tags (tag, turn_id);

CREATE TABLE session_tags (
	session_id text        NOT NULL,
	tag        text        NOT NULL CHECK (length(tag) BETWEEN 1 AND 64),
	created_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (session_id, tag)
);

CREATE INDEX session_tags_tag_idx ON session_tags (tag, session_id);

CREATE VIEW turn_costs AS
SELECT id AS turn_id, session_id, project, model, provider,
	(started_at AT TIME ZONE 'UTC')::date AS day, started_at, cost,
	input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens
FROM turns
WHERE ended_at IS NOT NULL;
