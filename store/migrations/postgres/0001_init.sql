-- 0001: the PostgreSQL schema, the same tables and columns as SQLite's
-- schema at its version 3, so that both backends run the same queries.
--
-- Times are BIGINT nanoseconds since the Unix epoch (UTC), NULL for "not
-- yet", as on SQLite: exact (timestamptz keeps microseconds only), and
-- ordered and compared the same way by both backends.
-- JSON columns hold TEXT that the Go side validated: the store keeps
-- reports and plan bodies byte for byte, which jsonb would not.
-- Identifiers, keys and everything the queries order by or compare by
-- range use COLLATE "C": ID prefix lookups rely on byte order ('~' sorts
-- after every ID character), which a locale's collation does not keep.
-- runs and plans have a rowid, the insertion order SQLite's rowid gives:
-- the shared queries break ties on it.

CREATE TABLE runs (
	rowid            BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
	id               TEXT COLLATE "C" PRIMARY KEY,
	runbook          TEXT COLLATE "C" NOT NULL,
	trigger_type     TEXT NOT NULL CHECK (trigger_type IN ('cli', 'slack', 'alert', 'schedule')),
	requested_by     TEXT COLLATE "C" NOT NULL DEFAULT '',
	params           TEXT NOT NULL DEFAULT '{}',
	status           TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'interrupted', 'canceled')),
	outcome          TEXT NOT NULL DEFAULT '' CHECK (outcome IN ('', 'ok', 'critical', 'inconclusive', 'error')),
	started_at       BIGINT NOT NULL,
	finished_at      BIGINT,
	report           TEXT,
	message_channel  TEXT,
	message_id       TEXT,
	work_id          TEXT COLLATE "C",
	owner            TEXT COLLATE "C" NOT NULL DEFAULT '',
	message_platform TEXT
);
CREATE INDEX runs_started_at ON runs (started_at);
CREATE INDEX runs_runbook ON runs (runbook, started_at);
CREATE INDEX runs_status ON runs (status);

CREATE TABLE plans (
	rowid        BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
	id           TEXT COLLATE "C" PRIMARY KEY,
	run_id       TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
	remediation  TEXT COLLATE "C" NOT NULL,
	diagnosis    TEXT COLLATE "C" NOT NULL DEFAULT '',
	deployment   TEXT COLLATE "C" NOT NULL,
	hash         TEXT NOT NULL,
	body         TEXT NOT NULL,
	requested_by TEXT COLLATE "C" NOT NULL DEFAULT '',
	policy       TEXT NOT NULL,
	expires_at   BIGINT,
	state        TEXT NOT NULL CHECK (state IN ('proposed', 'approved', 'applying', 'verifying', 'done',
	                 'rolled_back', 'failed', 'not_needed', 'denied', 'expired', 'superseded', 'interrupted')),
	created_at   BIGINT NOT NULL,
	updated_at   BIGINT NOT NULL,
	applied_at   BIGINT,
	finished_at  BIGINT,
	owner        TEXT COLLATE "C" NOT NULL DEFAULT ''
);
CREATE INDEX plans_run ON plans (run_id);
CREATE INDEX plans_state ON plans (state);
CREATE INDEX plans_remediation ON plans (deployment, remediation, state);
CREATE INDEX plans_applied ON plans (deployment, applied_at);

CREATE TABLE approvals (
	plan_id   TEXT COLLATE "C" NOT NULL REFERENCES plans (id),
	approver  TEXT COLLATE "C" NOT NULL,
	decision  TEXT NOT NULL CHECK (decision IN ('approve', 'deny')),
	plan_hash TEXT NOT NULL,
	at        BIGINT NOT NULL,
	PRIMARY KEY (plan_id, approver, decision)
);

CREATE TABLE actions (
	plan_id     TEXT COLLATE "C" NOT NULL REFERENCES plans (id),
	idx         INTEGER NOT NULL,
	target      TEXT COLLATE "C" NOT NULL,
	action      TEXT COLLATE "C" NOT NULL,
	state       TEXT NOT NULL CHECK (state IN ('started', 'done', 'failed', 'rolled_back', 'rollback_failed',
	                                           'rerunning', 'rerun', 'rerun_failed')),
	detail      TEXT,
	started_at  BIGINT NOT NULL,
	finished_at BIGINT,
	PRIMARY KEY (plan_id, idx)
);

-- The audit log has no foreign keys on purpose: it must outlive anything it
-- mentions. The trigger makes it append-only even for raw SQL.
CREATE TABLE audit (
	id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at      BIGINT NOT NULL,
	run_id  TEXT COLLATE "C" NOT NULL DEFAULT '',
	plan_id TEXT COLLATE "C" NOT NULL DEFAULT '',
	kind    TEXT COLLATE "C" NOT NULL,
	actor   TEXT NOT NULL DEFAULT '',
	detail  TEXT
);
CREATE INDEX audit_run ON audit (run_id) WHERE run_id <> '';
CREATE INDEX audit_plan ON audit (plan_id) WHERE plan_id <> '';
CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'audit log is append-only';
END;
$$;
CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit
	FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
	FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();

CREATE TABLE locks (
	key        TEXT COLLATE "C" PRIMARY KEY,
	holder     TEXT NOT NULL,
	token      TEXT NOT NULL,
	since      BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
);

CREATE TABLE alert_inbox (
	id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	fingerprint TEXT COLLATE "C" NOT NULL,
	received_at BIGINT NOT NULL,
	payload     BYTEA NOT NULL
);
CREATE INDEX alert_inbox_fingerprint ON alert_inbox (fingerprint, id);

CREATE TABLE alert_state (
	fingerprint  TEXT COLLATE "C" PRIMARY KEY,
	status       TEXT NOT NULL CHECK (status IN ('firing', 'resolved')),
	first_seen   BIGINT NOT NULL,
	last_seen    BIGINT NOT NULL,
	triggered_at BIGINT NOT NULL,
	repeats      INTEGER NOT NULL DEFAULT 0,
	trigger_key  TEXT COLLATE "C" NOT NULL
);
CREATE INDEX alert_state_last_seen ON alert_state (last_seen);

CREATE TABLE work (
	id           TEXT COLLATE "C" PRIMARY KEY,
	dedup_key    TEXT COLLATE "C" UNIQUE,
	trigger_type TEXT NOT NULL CHECK (trigger_type IN ('cli', 'slack', 'alert', 'schedule')),
	runbook      TEXT COLLATE "C" NOT NULL,
	params       TEXT NOT NULL DEFAULT '{}',
	requested_by TEXT COLLATE "C" NOT NULL DEFAULT '',
	payload      TEXT,
	state        TEXT NOT NULL CHECK (state IN ('pending', 'started', 'done')),
	attempts     INTEGER NOT NULL DEFAULT 0,
	run_id       TEXT COLLATE "C" NOT NULL DEFAULT '',
	owner        TEXT COLLATE "C" NOT NULL DEFAULT '',
	enqueued_at  BIGINT NOT NULL,
	started_at   BIGINT,
	done_at      BIGINT
);
CREATE INDEX work_state ON work (state, enqueued_at);
