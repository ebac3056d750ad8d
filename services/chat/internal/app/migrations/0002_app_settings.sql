-- Server-wide settings shared by every chat instance (provider paths, ...),
-- one JSON value per key.
CREATE TABLE app_settings (
	key        text        PRIMARY KEY,
	value      jsonb       NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now(),
	CHECK (key <> '')
);
