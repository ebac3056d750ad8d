-- An append to a session's log may fail without saying whether it was
-- committed (the connection lost during the commit: a crash or restart of
-- PostgreSQL). Chat then sends it again, and must not store it twice: every
-- append carries a key of its own, and one whose key is in the log already
-- returns the line it has (internal/store append_batch.go). NULL for rows
-- written before, or copied by a fork.
ALTER TABLE session_messages ADD COLUMN append_key uuid;
CREATE UNIQUE INDEX session_messages_append_key_idx ON session_messages (session_id, append_key)
	WHERE append_key IS NOT NULL;
