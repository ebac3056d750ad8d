-- The turns the shadow journal has handled, one row per turn id, so a turn
-- event delivered twice is committed once, and a session's turns can be
-- found (GET /api/sessions/{id}/changes) without scanning every journal.
CREATE TABLE shadow_turns (
    turn_id       text PRIMARY KEY,
    session_id    text NOT NULL,
    project       text NOT NULL,          -- the project's hash (its journal directory)
    cwd           text NOT NULL,          -- the project's real path
    turn_number   integer NOT NULL,
    base_commit   text,                   -- the branch head once turn_started was handled
    end_commit    text,                   -- the branch head once turn_ended was handled
    changed_files integer,                -- files the turn commit changed (0: no commit)
    started_at    timestamptz,            -- when turn_started was handled
    ended_at      timestamptz,            -- when turn_ended was handled
    CHECK (turn_id <> ''),
    CHECK (session_id <> ''),
    CHECK (turn_number >= 1)
);
CREATE INDEX shadow_turns_session ON shadow_turns (session_id, turn_number);
