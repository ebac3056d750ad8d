-- The turns running now, one row per turn, kept by the instance that runs
-- it from its start to its end (internal/room recover.go): a turn whose
-- instance died (kill -9, a crash, the machine) is still here when chat
-- starts again, and is closed then (a notice in the log, turn_ended
-- "interrupted"), exactly once: whoever deletes the row closes the turn.
CREATE TABLE open_turns (
	turn_id     text        PRIMARY KEY,
	session_id  text        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	prompt_line bigint      NOT NULL,
	-- The chat instance that runs the turn, and where it runs: host
	-- (host name, boot id and PID namespace), the process id and its
	-- start time (clock ticks since boot), so that an instance on the same
	-- host tells at once whether it is still alive.
	instance    text        NOT NULL,
	host        text        NOT NULL,
	pid         integer     NOT NULL,
	pid_start   bigint      NOT NULL,
	started_at  timestamptz NOT NULL,
	-- The turn's turn_started event fields (prompt, cwd, provider, model,
	-- turn_number), for its turn_ended.
	started     jsonb       NOT NULL,
	CHECK (turn_id <> '')
);

CREATE INDEX open_turns_instance_idx ON open_turns (instance);
