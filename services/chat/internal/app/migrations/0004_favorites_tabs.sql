-- Favorite sessions with a note, the favorite-prompt lookup, and the open
-- tabs of each browser profile (internal/workspace).
CREATE TABLE session_favorites (
	session_id text        PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	note       text        NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now()
);

-- Favorite prompts are session_messages rows with is_favorite. A new
-- prompt whose text is already a favorite is stored as one too
-- (store.AppendMessage looks it up by the first index: a hash index takes
-- prompts of any length), and GET /api/favorites lists them (the second).
CREATE INDEX session_messages_favorite_text_idx ON session_messages
	USING hash ((payload ->> 'content')) WHERE is_favorite AND kind = 'user_prompt';
CREATE INDEX session_messages_favorite_idx ON session_messages (created_at)
	WHERE is_favorite AND kind = 'user_prompt';

-- The open tabs of a browser profile ('default' unless the client names
-- one): a JSON array of tab objects and the id of the active tab.
CREATE TABLE app_tabs (
	profile    text        PRIMARY KEY,
	tabs       jsonb       NOT NULL DEFAULT '[]',
	active     text,
	updated_at timestamptz NOT NULL DEFAULT now(),
	CHECK (profile <> ''),
	CHECK (jsonb_typeof(tabs) = 'array')
);
