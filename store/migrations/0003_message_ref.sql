-- 0003: a run's message is a platform-neutral reference (platform, channel,
-- id) instead of Slack's (channel, ts). The columns are renamed in place, so
-- every recorded reference keeps its values; references recorded so far
-- were all Slack's.

ALTER TABLE runs RENAME COLUMN slack_channel TO message_channel;
ALTER TABLE runs RENAME COLUMN slack_ts TO message_id;
ALTER TABLE runs ADD COLUMN message_platform TEXT;
UPDATE runs SET message_platform = 'slack' WHERE message_channel IS NOT NULL OR message_id IS NOT NULL;
