-- 0002: replica leases. Every long-lived runbot process (serve, and a CLI
-- run while it goes) renews a lease under its owner name; MarkInterrupted
-- in any process counts the owner of a row dead once its lease expired,
-- which works across hosts where a PID check cannot.

CREATE TABLE replicas (
	owner      TEXT COLLATE "C" PRIMARY KEY,
	since      BIGINT NOT NULL,
	renewed_at BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
);
