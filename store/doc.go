// Package store is runbot's durable state: runs and their reports,
// remediation plans with their approvals and actions, an append-only audit
// log, cross-process locks, the alert inbox with its dedup state, and the
// queue of accepted triggers.
//
// Callers use the Store interface, which speaks in the domain's terms
// (message references with a platform, not Slack columns; trigger kinds from
// TriggerKinds). Package store/storetest is its conformance suite: every
// backend runs it, the SQLite one in sqlite_conformance_test.go.
//
// Open returns the SQLite implementation,
// which keeps everything in one file that several goroutines and several
// processes (a `runbot serve` and a `runbot run` beside it) may use at once.
// It runs in WAL mode with busy_timeout, foreign keys on and
// synchronous=FULL, and begins every write transaction IMMEDIATE, so that a
// read-then-write holds the write lock from its first read. That makes the
// compare-and-set of plan states and the lock acquisition atomic across
// processes, not only across goroutines. Within one process, write
// transactions queue on a channel rather than in SQLite's sleeping busy
// handler, so open one SQLite per process and share it.
//
// OpenPostgres returns the PostgreSQL implementation, for several processes
// (replicas) on several hosts sharing one database. It runs the same
// queries as SQLite through database/sql and pgx: the queries are written
// once in SQLite's spelling, and a small dialect (dialect.go) numbers the
// placeholders, adds the row locks (FOR UPDATE, and FOR UPDATE SKIP LOCKED
// for work claims) and advisory locks that give PostgreSQL's concurrent
// writers the guarantees SQLite's single writer gives for free, and spells
// the one JSON lookup differently. The conformance suite, replicas racing
// each other included, holds both to the same behaviour. OpenURL opens
// either from a location: a path or sqlite:///path, or postgres://...;
// RedactDSN is the location fit for logs.
//
// Decisions that depend on time (lease, lock and claim expiry, approval
// expiry, dedup windows) read the store's clock: the host's, or a test's
// given by WithNow. On PostgreSQL the host's clock is corrected to the
// database's (see Replicas).
//
// # Schema
//
// Migrations are embedded (migrations/NNNN_name.sql), applied in order, each
// in its own transaction with its row in schema_migrations(version, name,
// applied_at). On SQLite that transaction runs with foreign keys off and
// checks them all before it commits, SQLite's procedure for schema
// changes: a CHECK changes only by rebuilding the table, and runs, which
// plans reference, can only be rebuilt so. Times are INTEGER nanoseconds
// since the Unix epoch, UTC; NULL means "not yet". JSON columns hold TEXT.
// Tables are STRICT.
//
//	runs(id PK, runbook, trigger_type, requested_by, params JSON, status,
//	     outcome, started_at, finished_at, report JSON, message_channel,
//	     message_id, work_id, owner, message_platform)
//	    One runbook execution. trigger_type is one of TriggerKinds (the
//	    CHECK repeats the list; a test holds the two together); a chat
//	    command's was "slack" until migration 9 (PostgreSQL's 7) made it
//	    "chat". status:
//	    running → finished | failed | interrupted | canceled. outcome: ok |
//	    critical | inconclusive | error. report is the engine's report,
//	    opaque here. message_* is where a chat front end posted the run
//	    (MessageRef), NULL if none did.
//
//	plans(id PK, run_id → runs, remediation, diagnosis, deployment, hash,
//	      body JSON, requested_by, policy JSON, expires_at, state,
//	      created_at, updated_at, applied_at, finished_at, owner)
//	    A remediation plan; state follows the machine documented on
//	    PlanState, every move a compare-and-set on the current state.
//	    applied_at is when it entered applying (rate limits count it).
//
//	approvals(plan_id → plans, approver, decision, plan_hash, at;
//	          PK plan_id, approver, decision)
//	    Who approved or denied, bound to the plan hash they were shown.
//
//	actions(plan_id → plans, idx, target, action, state, detail JSON,
//	        started_at, finished_at; PK plan_id, idx)
//	    One action of a plan, written as started before its side effect;
//	    state: started → done | failed → rolled_back | rollback_failed;
//	    a done action that makes a rolled-back change take effect (a
//	    restart) runs again: done → rerunning → rerun | rerun_failed.
//
//	audit(id PK AUTOINCREMENT, at, run_id, plan_id, kind, actor, detail JSON)
//	    Every state change, written in the transaction that makes it.
//	    Triggers abort any UPDATE or DELETE (only migration 9, PostgreSQL's
//	    7, lifted that, to rename the trigger kind in details); there are
//	    no foreign keys, so the log outlives what it mentions.
//
//	locks(key PK, holder, token, since, expires_at)
//	    Leases. A row whose expires_at has passed is free.
//
//	alert_inbox(id PK AUTOINCREMENT, fingerprint, received_at, payload BLOB)
//	    Every alert delivery, stored before the webhook answers 2xx.
//
//	alert_state(fingerprint PK, status, first_seen, last_seen, triggered_at,
//	            repeats, trigger_key)
//	    Dedup state per alert; trigger_key is the dedup_key of the work the
//	    current trigger enqueues, which links the alert to its run.
//
//	work(id PK, dedup_key UNIQUE, trigger_type, runbook, params JSON,
//	     requested_by, payload JSON, state, attempts, run_id, owner,
//	     enqueued_at, started_at, done_at)
//	    Accepted triggers: pending → started → done.
//
// The PostgreSQL schema (migrations/postgres) has the same tables and
// columns, with BIGINT for the nanosecond times, TEXT COLLATE "C" for IDs
// and keys (prefix lookups rely on byte order), an identity rowid on runs
// and plans for the tie-breaks SQLite's rowid gives, and a trigger that
// keeps the audit log append-only. Its versions are numbered apart from
// SQLite's (PostgresSchemaVersion).
//
// # Ownership and recovery
//
// Rows that a process is working on (running runs, applying plans, started
// work) carry its owner, "host/pid/start-time". A process that owns rows
// holds a replica lease (Heartbeat, renewed by KeepAlive); at startup and
// then periodically, MarkInterrupted interrupts the rows of owners that no
// longer run (their lease expired, or on this host their pid is gone); it
// leaves rows of live processes alone. A plan interrupted while applying is never applied again
// without a new plan and a new approval. WithOwner and WithOwnerAlive
// replace the owner's name and the liveness check, so that a test can play
// several processes in one and declare one of them dead.
//
// # Replicas
//
// Several `runbot serve` processes may share one PostgreSQL database. Each
// renews its lease every DefaultHeartbeat for DefaultLeaseTTL and sweeps
// (MarkInterrupted) every DefaultRecoveryInterval, so that what a dead
// replica owned (runs, plans, started work, and the locks it took) is
// recovered by another within about DefaultLeaseTTL plus one sweep. Work
// is claimed with FOR UPDATE SKIP LOCKED; alerts, approvals, rate limits
// and the circuit breaker are read from the shared tables, so any replica
// may receive any delivery or click. Scheduled audits fire once per tick
// across replicas through ScheduleTicks, whose claims a catch-up takes
// over from a claimer whose lease expired.
//
// Leases, locks and claims are judged by the database's clock, not the
// host's: replicas on several hosts compare the expiries that others
// wrote, and a host whose clock ran 30 s fast would count another
// replica's lease expired 30 s early and take over its work (remediating
// twice), one 30 s slow would act on its own lease 30 s after the others
// counted it dead. So a store on PostgreSQL reads the database's clock
// (clock_timestamp()) at open and in every lease renewal, between two
// readings of its own, and from then on reads its own clock plus the
// offset measured; every time it writes (expiries, record times) and
// every expiry it judges is on the database's clock. The measurement is
// off by at most half its round trip, and the store takes the safe side
// of that: its own lease counts as expired that much earlier, another's
// lease, lock or claim that much later. Between renewals (DefaultHeartbeat)
// the offset is the last one measured, so a host clock stepped meanwhile
// counts until the next renewal. SQLite, one file on one host, keeps the
// host's clock, and so does a test's clock (WithNow), which stands for
// the database's too.
//
// # Failover
//
// The database may be a primary with a synchronous standby, named by one
// multi-host URL (postgres://runbot@db1:5432,db2:5432/runbot?target_session_attrs=read-write).
// Every connection asks for a read-write session (the store does even
// when the URL does not) and gives up on a host after a connect timeout
// (half a heartbeat unless the URL sets connect_timeout), so the pool
// follows a promotion without a restart: connections to the dead primary
// fail the operation that holds them, which its caller retries, and new
// ones reach the promoted standby. What a commit returned success for was
// on the standby (synchronous_commit=on), so it survives the promotion;
// with asynchronous replication the last commits before the crash would
// not. A commit the crash left unanswered may have committed: a work
// claim is handed back by the claimer's next MarkInterrupted (Recovery's
// Unconfirmed). A database out of reach for longer than the lease lapses
// every lease at once: a process whose lease expired claims nothing
// (ErrLeaseExpired) until KeepAlive renews it, and one whose own renewals
// failed counts no other replica dead for an expired lease until a lease's
// length after it renewed again, by when every live replica has renewed
// too. The tests in failover_postgres_test.go run all of this against a
// real primary and standby (pgtest.Pair).
package store
