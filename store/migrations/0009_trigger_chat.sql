-- 0009: a chat command's trigger kind is "chat", on whichever platform,
-- where runbot stored Slack's word "slack". Every trigger kind stored so far
-- is rewritten: runs.trigger_type, work.trigger_type, the "trigger" at the
-- top of a run's report, and the "trigger" in the details of the audit
-- log's run.created and work.enqueued entries. The CHECKs on trigger_type
-- take "chat" and refuse "slack" from now on.
--
-- SQLite cannot change a CHECK in place, so runs and work are rebuilt as
-- https://www.sqlite.org/lang_altertable.html ("Making Other Kinds Of Table
-- Schema Changes") says: create the new table, copy, drop the old, rename
-- the new, recreate the indexes. The migration runs with foreign keys off
-- (plans reference runs; dropping runs would otherwise delete its rows
-- first) and the store checks them all before it commits (migrate.go).
-- Each row keeps its rowid, which the queries break ties on. Both tables'
-- columns keep their order; neither has triggers or views.

CREATE TABLE runs_new (
	id               TEXT PRIMARY KEY,
	runbook          TEXT NOT NULL,
	trigger_type     TEXT NOT NULL CHECK (trigger_type IN ('cli', 'chat', 'alert', 'schedule')),
	requested_by     TEXT NOT NULL DEFAULT '',
	params           TEXT NOT NULL DEFAULT '{}',
	status           TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'interrupted', 'canceled')),
	outcome          TEXT NOT NULL DEFAULT '' CHECK (outcome IN ('', 'ok', 'critical', 'inconclusive', 'error')),
	started_at       INTEGER NOT NULL,
	finished_at      INTEGER,
	report           TEXT,
	message_channel  TEXT,
	message_id       TEXT,
	work_id          TEXT,
	owner            TEXT NOT NULL DEFAULT '',
	message_platform TEXT
) STRICT;
INSERT INTO runs_new (rowid, id, runbook, trigger_type, requested_by, params, status, outcome, started_at, finished_at,
		report, message_channel, message_id, work_id, owner, message_platform)
	SELECT rowid, id, runbook, CASE trigger_type WHEN 'slack' THEN 'chat' ELSE trigger_type END, requested_by, params,
		status, outcome, started_at, finished_at, report, message_channel, message_id, work_id, owner, message_platform
	FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_started_at ON runs (started_at);
CREATE INDEX runs_runbook ON runs (runbook, started_at);
CREATE INDEX runs_status ON runs (status);

CREATE TABLE work_new (
	id           TEXT PRIMARY KEY,
	dedup_key    TEXT UNIQUE,
	trigger_type TEXT NOT NULL CHECK (trigger_type IN ('cli', 'chat', 'alert', 'schedule')),
	runbook      TEXT NOT NULL,
	params       TEXT NOT NULL DEFAULT '{}',
	requested_by TEXT NOT NULL DEFAULT '',
	payload      TEXT,
	state        TEXT NOT NULL CHECK (state IN ('pending', 'started', 'done')),
	attempts     INTEGER NOT NULL DEFAULT 0,
	run_id       TEXT NOT NULL DEFAULT '',
	owner        TEXT NOT NULL DEFAULT '',
	enqueued_at  INTEGER NOT NULL,
	started_at   INTEGER,
	done_at      INTEGER
) STRICT;
INSERT INTO work_new (rowid, id, dedup_key, trigger_type, runbook, params, requested_by, payload, state, attempts,
		run_id, owner, enqueued_at, started_at, done_at)
	SELECT rowid, id, dedup_key, CASE trigger_type WHEN 'slack' THEN 'chat' ELSE trigger_type END, runbook, params,
		requested_by, payload, state, attempts, run_id, owner, enqueued_at, started_at, done_at
	FROM work;
DROP TABLE work;
ALTER TABLE work_new RENAME TO work;
CREATE INDEX work_state ON work (state, enqueued_at);

-- A report is the engine's, stored as json.Marshal wrote it (compact);
-- json_set changes the one value and keeps every other byte of such a
-- document. CASE keeps json_extract off anything that is not JSON.
UPDATE runs SET report = json_set(report, '$.trigger', 'chat')
	WHERE CASE WHEN json_valid(report) THEN json_extract(report, '$.trigger') = 'slack' END;

-- The audit log is append-only, even for raw SQL; this migration alone
-- lifts the guard on updates, within its transaction, to rename the kind
-- in the two entries that name one, and puts it back as 0001 made it.
DROP TRIGGER audit_no_update;
UPDATE audit SET detail = json_set(detail, '$.trigger', 'chat')
	WHERE CASE WHEN kind IN ('run.created', 'work.enqueued') AND json_valid(detail)
		THEN json_extract(detail, '$.trigger') = 'slack' END;
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN
	SELECT RAISE(ABORT, 'audit log is append-only');
END;
