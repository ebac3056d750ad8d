-- The turns whose changes the shadow journal has committed, one row per
-- turn id, so a turn event delivered twice is committed once.
CREATE TABLE shadow_turns (
    turn_id      text PRIMARY KEY,
    session_id   text NOT NULL,
    project      text NOT NULL,          -- the project's hash (its journal directory)
    turn_number  integer,
    base_commit  text,                   -- the baseline commit made at turn start, if any
    end_commit   text,                   -- the commit made at turn end, if any
    started_at   timestamptz,
    ended_at     timestamptz
);
CREATE INDEX shadow_turns_session ON shadow_turns (session_id, turn_number);
