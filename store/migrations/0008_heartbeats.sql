-- 0008: each process writes its heartbeat row every few seconds: the
-- readiness probe proves the store takes a write (a full disk, a read-only
-- file, a database gone read-only all fail it), which a read cannot.

CREATE TABLE heartbeats (
	owner TEXT PRIMARY KEY,
	at    INTEGER NOT NULL
) STRICT;
