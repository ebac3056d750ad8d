-- Saved prompt drafts and the per-session stash (internal/workspace).
--
-- A draft is server-wide: at most 500 are kept, the least recently updated
-- dropped when a new one would pass that (workspace.MaxDrafts). Its
-- session, when set, is cleared if the session is deleted.
CREATE TABLE drafts (
	id         text        PRIMARY KEY,
	text       text        NOT NULL,
	title      text        NOT NULL,
	cwd        text,
	session_id text        REFERENCES sessions (id) ON DELETE SET NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now(),
	CHECK (id <> ''),
	CHECK (text <> '')
);
CREATE INDEX drafts_recent_idx ON drafts (updated_at DESC, id DESC);
CREATE INDEX drafts_session_idx ON drafts (session_id) WHERE session_id IS NOT NULL;

-- Items put aside in a session to send later, in the order they were
-- stashed; sent_at is set when the client marks an item as sent. They go
-- with their session.
CREATE TABLE stash_items (
	id         text        PRIMARY KEY,
	session_id text        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	text       text        NOT NULL,
	sent_at    timestamptz,
	created_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now(),
	CHECK (id <> ''),
	CHECK (text <> '')
);
CREATE INDEX stash_items_session_idx ON stash_items (session_id, created_at, id);
