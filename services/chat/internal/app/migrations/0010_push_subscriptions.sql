-- Web Push (internal/push): the browsers subscribed to notifications, one
-- row per device. endpoint is the push service's URL for that browser (a
-- capability: never answered in full); p256dh and auth are its RFC 8291
-- keys. A push service answering 404/410 for an endpoint deletes its row.
CREATE TABLE push_subscriptions (
	id              text        PRIMARY KEY,
	name            text        NOT NULL,
	endpoint        text        NOT NULL UNIQUE,
	p256dh          text        NOT NULL,
	auth            text        NOT NULL,
	user_agent      text        NOT NULL DEFAULT '',
	created_at      timestamptz NOT NULL DEFAULT now(),
	last_success_at timestamptz,
	last_error      text
);
