-- The prompt queue: prompts sent while a turn runs, kept until the turn
-- ends and then stored in the log and sent, first position first
-- (internal/store queue.go, internal/room queue.go). A prompt leaves the
-- queue in the transaction that appends it to the log, so it is sent once
-- and never lost, whichever instance owns the session and whatever
-- restarts in between.
CREATE TABLE prompt_queue (
	id         text        PRIMARY KEY,
	session_id text        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	-- The order: the lowest goes first. New prompts take the next value of
	-- the sequence; send_now moves one below the session's lowest.
	position   bigint      NOT NULL,
	content    text        NOT NULL,
	-- The prompt's images (an array of image blocks), NULL when none.
	images     jsonb,
	created_at timestamptz NOT NULL DEFAULT now(),
	CHECK (id <> '')
);

CREATE SEQUENCE prompt_queue_position OWNED BY prompt_queue.position;

CREATE INDEX prompt_queue_session_idx ON prompt_queue (session_id, position);
