-- 0001: runs, plans, approvals, actions, audit, locks, alerts, work.
-- Times are INTEGER nanoseconds since the Unix epoch (UTC); NULL is "not yet".
-- JSON columns hold TEXT that the Go side validated.

CREATE TABLE runs (
	id            TEXT PRIMARY KEY,
	runbook       TEXT NOT NULL,
	trigger_type  TEXT NOT NULL CHECK (trigger_type IN ('cli', 'slack', 'alert', 'schedule')),
	requested_by  TEXT NOT NULL DEFAULT '',
	params        TEXT NOT NULL DEFAULT '{}',
	status        TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'interrupted', 'canceled')),
	outcome       TEXT NOT NULL DEFAULT '' CHECK (outcome IN ('', 'ok', 'critical', 'inconclusive', 'error')),
	started_at    INTEGER NOT NULL,
	finished_at   INTEGER,
	report        TEXT,
	slack_channel TEXT,
	slack_ts      TEXT,
	work_id       TEXT,
	owner         TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX runs_started_at ON runs (started_at);
CREATE INDEX runs_runbook ON runs (runbook, started_at);
CREATE INDEX runs_status ON runs (status);

CREATE TABLE plans (
	id           TEXT PRIMARY KEY,
	run_id       TEXT NOT NULL REFERENCES runs (id),
	remediation  TEXT NOT NULL,
	diagnosis    TEXT NOT NULL DEFAULT '',
	deployment   TEXT NOT NULL,
	hash         TEXT NOT NULL,
	body         TEXT NOT NULL,
	requested_by TEXT NOT NULL DEFAULT '',
	policy       TEXT NOT NULL,
	expires_at   INTEGER,
	state        TEXT NOT NULL CHECK (state IN ('proposed', 'approved', 'applying', 'verifying', 'done',
	                 'rolled_back', 'failed', 'not_needed', 'denied', 'expired', 'superseded', 'interrupted')),
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	applied_at   INTEGER,
	finished_at  INTEGER,
	owner        TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX plans_run ON plans (run_id);
CREATE INDEX plans_state ON plans (state);
CREATE INDEX plans_remediation ON plans (deployment, remediation, state);
CREATE INDEX plans_applied ON plans (deployment, applied_at);

CREATE TABLE approvals (
	plan_id   TEXT NOT NULL REFERENCES plans (id),
	approver  TEXT NOT NULL,
	decision  TEXT NOT NULL CHECK (decision IN ('approve', 'deny')),
	plan_hash TEXT NOT NULL,
	at        INTEGER NOT NULL,
	PRIMARY KEY (plan_id, approver, decision)
) STRICT;

CREATE TABLE actions (
	plan_id     TEXT NOT NULL REFERENCES plans (id),
	idx         INTEGER NOT NULL,
	target      TEXT NOT NULL,
	action      TEXT NOT NULL,
	state       TEXT NOT NULL CHECK (state IN ('started', 'done', 'failed', 'rolled_back', 'rollback_failed')),
	detail      TEXT,
	started_at  INTEGER NOT NULL,
	finished_at INTEGER,
	PRIMARY KEY (plan_id, idx)
) STRICT;

-- The audit log has no foreign keys on purpose: it must outlive anything it
-- mentions. The triggers make it append-only even for raw SQL.
CREATE TABLE audit (
	id      INTEGER PRIMARY KEY AUTOINCREMENT,
	at      INTEGER NOT NULL,
	run_id  TEXT NOT NULL DEFAULT '',
	plan_id TEXT NOT NULL DEFAULT '',
	kind    TEXT NOT NULL,
	actor   TEXT NOT NULL DEFAULT '',
	detail  TEXT
) STRICT;
CREATE INDEX audit_run ON audit (run_id) WHERE run_id <> '';
CREATE INDEX audit_plan ON audit (plan_id) WHERE plan_id <> '';
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN
	SELECT RAISE(ABORT, 'audit log is append-only');
END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN
	SELECT RAISE(ABORT, 'audit log is append-only');
END;

CREATE TABLE locks (
	key        TEXT PRIMARY KEY,
	holder     TEXT NOT NULL,
	token      TEXT NOT NULL,
	since      INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT;

CREATE TABLE alert_inbox (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	fingerprint TEXT NOT NULL,
	received_at INTEGER NOT NULL,
	payload     BLOB NOT NULL
) STRICT;
CREATE INDEX alert_inbox_fingerprint ON alert_inbox (fingerprint, id);

CREATE TABLE alert_state (
	fingerprint  TEXT PRIMARY KEY,
	status       TEXT NOT NULL CHECK (status IN ('firing', 'resolved')),
	first_seen   INTEGER NOT NULL,
	last_seen    INTEGER NOT NULL,
	triggered_at INTEGER NOT NULL,
	repeats      INTEGER NOT NULL DEFAULT 0,
	trigger_key  TEXT NOT NULL
) STRICT;
CREATE INDEX alert_state_last_seen ON alert_state (last_seen);

CREATE TABLE work (
	id           TEXT PRIMARY KEY,
	dedup_key    TEXT UNIQUE,
	trigger_type TEXT NOT NULL CHECK (trigger_type IN ('cli', 'slack', 'alert', 'schedule')),
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
CREATE INDEX work_state ON work (state, enqueued_at);
