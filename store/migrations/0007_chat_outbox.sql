-- 0007: the chat outbox. Every message runbot posts and every update of one
-- is recorded here first and delivered by a background sender that paces
-- itself by the chat platform's limits and retries until the platform takes
-- it, so that a run never waits for chat and a chat outage loses nothing.
-- seq orders delivery; id is what runbot hands out as the message's
-- reference before the platform has given it one (platform_id). on_refusal
-- says whom to tell, and what, when the platform refuses the post for good.

CREATE TABLE chat_outbox (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	id           TEXT NOT NULL UNIQUE,
	dedup_key    TEXT UNIQUE,
	channel      TEXT NOT NULL,
	thread       TEXT NOT NULL DEFAULT '',
	content      TEXT NOT NULL,
	on_refusal   TEXT,
	version      INTEGER NOT NULL DEFAULT 1,
	sent_version INTEGER NOT NULL DEFAULT 0,
	platform_id  TEXT NOT NULL DEFAULT '',
	state        TEXT NOT NULL CHECK (state IN ('due', 'done', 'failed')),
	attempts     INTEGER NOT NULL DEFAULT 0,
	next_at      INTEGER NOT NULL,
	claim_owner  TEXT NOT NULL DEFAULT '',
	claim_until  INTEGER NOT NULL DEFAULT 0,
	last_error   TEXT NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX chat_outbox_due ON chat_outbox (state, next_at);
