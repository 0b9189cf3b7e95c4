-- 0002: actions may be run again after a rollback (a restart that makes the
-- restored config take effect): states rerunning, rerun and rerun_failed.
-- SQLite cannot change a CHECK constraint in place, so the table is rebuilt.

CREATE TABLE actions_new (
	plan_id     TEXT NOT NULL REFERENCES plans (id),
	idx         INTEGER NOT NULL,
	target      TEXT NOT NULL,
	action      TEXT NOT NULL,
	state       TEXT NOT NULL CHECK (state IN ('started', 'done', 'failed', 'rolled_back', 'rollback_failed',
	                                           'rerunning', 'rerun', 'rerun_failed')),
	detail      TEXT,
	started_at  INTEGER NOT NULL,
	finished_at INTEGER,
	PRIMARY KEY (plan_id, idx)
) STRICT;

INSERT INTO actions_new (plan_id, idx, target, action, state, detail, started_at, finished_at)
	SELECT plan_id, idx, target, action, state, detail, started_at, finished_at FROM actions;
DROP TABLE actions;
ALTER TABLE actions_new RENAME TO actions;
