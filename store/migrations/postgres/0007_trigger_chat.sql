-- 0007: a chat command's trigger kind is "chat", on whichever platform,
-- where runbot stored Slack's word "slack" (SQLite's 0009 does the same).
-- Every trigger kind stored so far is rewritten: runs.trigger_type,
-- work.trigger_type, the "trigger" at the top of a run's report, and the
-- "trigger" in the details of the audit log's run.created and
-- work.enqueued entries. The CHECKs on trigger_type take "chat" and refuse
-- "slack" from now on, so a replica of an older binary still running on
-- the upgraded database has its chat commands refused: upgrade the
-- replicas together.

ALTER TABLE runs DROP CONSTRAINT runs_trigger_type_check;
ALTER TABLE work DROP CONSTRAINT work_trigger_type_check;
UPDATE runs SET trigger_type = 'chat' WHERE trigger_type = 'slack';
UPDATE work SET trigger_type = 'chat' WHERE trigger_type = 'slack';
ALTER TABLE runs ADD CONSTRAINT runs_trigger_type_check CHECK (trigger_type IN ('cli', 'chat', 'alert', 'schedule'));
ALTER TABLE work ADD CONSTRAINT work_trigger_type_check CHECK (trigger_type IN ('cli', 'chat', 'alert', 'schedule'));

-- Reports and audit details are JSON kept as TEXT byte for byte, which
-- jsonb_set would not keep (it respaces and reorders the whole document).
-- runbot_chat_trigger(doc) rewrites the "slack" of doc's top-level
-- "trigger" where the document spells it "trigger":"slack", as
-- json.Marshal wrote every one of them, and changes nothing else: it tries
-- each occurrence in turn (a nested one, say a param named trigger, may
-- come first) until the top-level value reads "chat". A document spelled
-- otherwise goes through jsonb_set. The migration drops the function
-- before it commits: no other session ever sees it.
CREATE FUNCTION runbot_chat_trigger(doc TEXT) RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE
	slack_kv CONSTANT TEXT := '"trigger":"slack"';
	chat_kv  CONSTANT TEXT := '"trigger":"chat"';
	upto     INT := 0;
	hit      INT;
	fixed    TEXT;
BEGIN
	LOOP
		hit := position(slack_kv IN substr(doc, upto + 1));
		EXIT WHEN hit = 0;
		upto := upto + hit;
		fixed := overlay(doc PLACING chat_kv FROM upto FOR length(slack_kv));
		IF fixed::json ->> 'trigger' = 'chat' THEN
			RETURN fixed;
		END IF;
	END LOOP;
	RETURN jsonb_set(doc::jsonb, '{trigger}', '"chat"')::TEXT;
END;
$$;

-- The store validated every report and detail as JSON when it wrote them;
-- CASE parses only those that mention the old value.
UPDATE runs SET report = runbot_chat_trigger(report)
	WHERE CASE WHEN report LIKE '%"slack"%' THEN report::json ->> 'trigger' = 'slack' END;

-- The audit log is append-only, even for raw SQL; this migration alone
-- lifts the guard on updates, within its transaction, to rename the kind
-- in the two entries that name one.
ALTER TABLE audit DISABLE TRIGGER audit_append_only;
UPDATE audit SET detail = runbot_chat_trigger(detail)
	WHERE CASE WHEN kind IN ('run.created', 'work.enqueued') AND detail LIKE '%"slack"%'
		THEN detail::json ->> 'trigger' = 'slack' END;
ALTER TABLE audit ENABLE TRIGGER audit_append_only;

DROP FUNCTION runbot_chat_trigger(TEXT);
