-- 0006: a lock names the process that took it (its owner, as runs and
-- plans do), so that recovery releases the locks of a dead process with
-- its plans instead of leaving the deployment locked until the lease's
-- own expiry (half an hour for a remediation).

ALTER TABLE locks ADD COLUMN owner TEXT NOT NULL DEFAULT '';
