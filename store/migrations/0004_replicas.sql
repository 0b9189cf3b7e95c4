-- 0004: replica leases. Every long-lived runbot process (serve, and a CLI
-- run while it goes) renews a lease under its owner name; MarkInterrupted
-- in any process counts the owner of a row dead once its lease expired,
-- which works across hosts where a PID check cannot.

CREATE TABLE replicas (
	owner      TEXT PRIMARY KEY,
	since      INTEGER NOT NULL,
	renewed_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT;
