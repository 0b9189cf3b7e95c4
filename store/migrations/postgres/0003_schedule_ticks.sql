-- 0003: per-tick claims of scheduled audits. Every replica's scheduler
-- fires at each tick; the one whose INSERT makes the row runs the audit,
-- so that it runs once across the cluster. A tick whose claimer died
-- before it finished is taken over (caught up) by another replica, and a
-- tick nobody claimed is caught up or recorded as missed.

CREATE TABLE schedule_ticks (
	schedule        TEXT COLLATE "C" NOT NULL,
	tick            BIGINT NOT NULL,
	state           TEXT NOT NULL CHECK (state IN ('claimed', 'done', 'skipped', 'missed')),
	owner           TEXT NOT NULL,
	catch_up        INTEGER NOT NULL DEFAULT 0,
	taken_over_from TEXT,
	run_id          TEXT,
	claimed_at      BIGINT NOT NULL,
	done_at         BIGINT,
	PRIMARY KEY (schedule, tick)
);
