package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// openAtVersion makes a new database at schema version v, as a binary of
// that version would have created it: only migrations 1 to v are applied.
// Methods whose tables did not change since v work on it.
func openAtVersion(t *testing.T, ctx context.Context, path string, v int) *SQLite {
	t.Helper()
	ms, err := sqliteMigrations.load()
	require.NoError(t, err)
	require.LessOrEqual(t, v, len(ms))
	db, err := sql.Open("sqlite", dsn(path, 10*time.Second))
	require.NoError(t, err)
	s := &SQLite{sqlStore{db: db, d: sqliteDialect, now: time.Now, owner: processOwner(), alive: ownerAlive, writeSlot: make(chan struct{}, 1)}}
	require.NoError(t, s.applyMigrations(ctx, ms[:v]))
	got, err := s.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, v, got)
	return s
}

func upgradeCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// A database written by a binary at schema version 1 keeps its action
// records through migration 2, which rebuilds the actions table to allow
// the rerun states.
func TestUpgradeFromVersion1KeepsActions(t *testing.T) {
	ctx := upgradeCtx(t)
	path := filepath.Join(t.TempDir(), "runbot.db")
	s := openAtVersion(t, ctx, path, 1)
	// Version 1's runs table is not today's, so the run is written as
	// version 1 wrote it; plans, approvals and actions go through the
	// store, whose queries on them are the same since version 1.
	_, err := s.db.ExecContext(ctx, `INSERT INTO runs (id, runbook, trigger_type, requested_by, params, status, started_at)
		VALUES ('r-1', 'sglang-pd-wedge', 'slack', 'U-alice', '{}', 'running', 1)`)
	require.NoError(t, err)
	p, _, err := s.CreatePlan(ctx, Plan{RunID: "r-1", Remediation: "restart", Deployment: "dsv4", Hash: "h1", Body: json.RawMessage(`{}`),
		RequestedBy: "U-alice"})
	require.NoError(t, err)
	_, err = s.RecordApproval(ctx, Approval{PlanID: p.ID, User: "U-bob", Decision: Approve, PlanHash: "h1"})
	require.NoError(t, err)
	_, err = s.TransitionPlan(ctx, Transition{PlanID: p.ID, From: PlanApproved, To: PlanApplying})
	require.NoError(t, err)
	_, err = s.StartAction(ctx, ActionRecord{PlanID: p.ID, Index: 0, Target: "decode@gpu-1", Action: "systemd_restart"})
	require.NoError(t, err)
	_, err = s.SetActionState(ctx, p.ID, 0, ActionDone, json.RawMessage(`{"changed":true}`))
	require.NoError(t, err)
	_, err = s.SetActionState(ctx, p.ID, 0, ActionRerunning, nil)
	require.ErrorContains(t, err, "CHECK constraint failed", "version 1 has no rerun states")
	require.NoError(t, s.Close())

	s, err = Open(ctx, path)
	require.NoError(t, err)
	defer func() { _ = s.Close() }() // test cleanup
	v, err := s.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, SchemaVersion(), v)
	acts, err := s.Actions(ctx, p.ID)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, ActionDone, acts[0].State)
	require.JSONEq(t, `{"changed":true}`, string(acts[0].Detail))
	got, err := s.SetActionState(ctx, p.ID, 0, ActionRerunning, nil)
	require.NoError(t, err)
	require.Equal(t, ActionRerunning, got.State)
}

// A database written by a binary at schema version 2 kept Slack's message
// reference in slack_channel and slack_ts; migration 3 turns them into
// platform-neutral references without losing one, and leaves runs that
// were never posted without one.
func TestUpgradeFromVersion2KeepsMessageRefs(t *testing.T) {
	ctx := upgradeCtx(t)
	path := filepath.Join(t.TempDir(), "runbot.db")
	s := openAtVersion(t, ctx, path, 2)
	// The rows as version 2's CreateRun, FinishRun and SetRunSlack wrote them.
	_, err := s.db.ExecContext(ctx, `INSERT INTO runs (id, runbook, trigger_type, requested_by, params, status, outcome,
			started_at, finished_at, report, slack_channel, slack_ts, work_id, owner) VALUES
		('r-posted', 'sglang-pd-wedge', 'slack', 'U-alice', '{"deployment":"dsv4"}', 'finished', 'critical',
			1000, 2000, '{"outcome":"critical"}', 'C1', '1700000000.000100', NULL, 'host/1/2'),
		('r-quiet', 'host-basics', 'cli', 'alice', '{}', 'running', '', 3000, NULL, NULL, NULL, NULL, NULL, 'host/1/2')`)
	require.NoError(t, err)
	_, err = s.db.ExecContext(ctx, `INSERT INTO plans (id, run_id, remediation, deployment, hash, body, policy, state, created_at, updated_at)
		VALUES ('p-1', 'r-posted', 'restart', 'dsv4', 'h1', '{}', '{}', 'proposed', 1000, 1000)`)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s, err = Open(ctx, path)
	require.NoError(t, err)
	defer func() { _ = s.Close() }() // test cleanup
	v, err := s.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, SchemaVersion(), v)

	posted, err := s.GetRun(ctx, "r-posted")
	require.NoError(t, err)
	require.Equal(t, &MessageRef{Platform: "slack", Channel: "C1", ID: "1700000000.000100"}, posted.Message)
	require.Equal(t, RunFinished, posted.Status)
	require.Equal(t, OutcomeCritical, posted.Outcome)
	require.Equal(t, map[string]string{"deployment": "dsv4"}, posted.Params)
	require.JSONEq(t, `{"outcome":"critical"}`, string(posted.Report))
	require.Equal(t, time.Unix(0, 2000).UTC(), posted.FinishedAt)

	quiet, err := s.GetRun(ctx, "r-quiet")
	require.NoError(t, err)
	require.Nil(t, quiet.Message)
	require.NoError(t, s.SetRunMessage(ctx, quiet.ID, MessageRef{Platform: "slack", Channel: "C2", ID: "1.2"}))
	quiet, err = s.GetRun(ctx, "r-quiet")
	require.NoError(t, err)
	require.Equal(t, &MessageRef{Platform: "slack", Channel: "C2", ID: "1.2"}, quiet.Message)

	plan, err := s.GetPlan(ctx, "p-1")
	require.NoError(t, err)
	require.Equal(t, "r-posted", plan.RunID)

	_, err = s.db.ExecContext(ctx, `SELECT slack_channel, slack_ts FROM runs`)
	require.ErrorContains(t, err, "no such column", "the Slack columns are gone")
}

// The schema versions just before the migrations that renamed the chat
// trigger kind "slack" to "chat" (0009_trigger_chat.sql, and
// postgres/0007_trigger_chat.sql).
const (
	sqliteBeforeChatTrigger   = 8
	postgresBeforeChatTrigger = 6
)

// slackReport is a run's report as json.Marshal wrote it, the trigger at
// its top and a param named trigger further down, with what a rewrite of
// the document could spell differently: escapes, a float's trailing zero,
// an exponent. The migration keeps every byte of it but the value.
const slackReport = `{"run_id":"r-chat","runbook":"host-basics","title":"Host \u003cbasics\u003e \"quoted\" \u0026 more",` +
	`"trigger":"slack","params":{"trigger":"slack"},"started_at":"1970-01-01T00:00:00.000001Z","outcome":"critical",` +
	`"steps":[{"id":"disk","values":{"used":0.50,"inodes":1e+06},"evidence":["é \\ tab\tend"]}]}`

// spacedReport is a report json.Marshal did not write: spaced, a nested
// "trigger" first.
const spacedReport = `{"params": {"trigger": "slack"}, "trigger": "slack", "steps": []}`

// slackRows are rows as a binary before the rename wrote them, in the SQL
// both backends take: a chat command's run and work with trigger_type
// 'slack' (and a second, pending one), an alert's and a CLI run that keep
// theirs, the chat run's plan with an approval and an action (plans
// reference runs), and the audit entries that name a trigger kind
// (run.created, whose params sort before its trigger, and work.enqueued)
// beside ones that do not. r-spaced is a chat run whose report runbot
// did not write. r-chat and r-alert start at the same time: the listing
// breaks the tie on the order they were inserted.
const slackRows = `
INSERT INTO runs (id, runbook, trigger_type, requested_by, params, status, outcome, started_at, finished_at, report,
		message_channel, message_id, work_id, owner, message_platform) VALUES
	('r-chat', 'host-basics', 'slack', 'U-alice', '{"trigger":"slack"}', 'finished', 'critical', 1000, 2000,
		'` + slackReport + `', 'C1', '1700000000.000100', 'w-chat', 'host/1/2', 'slack'),
	('r-alert', 'sglang-pd-wedge', 'alert', 'alertmanager', '{"deployment":"dsv4"}', 'running', '', 1000, NULL,
		'{"run_id":"r-alert","runbook":"sglang-pd-wedge","trigger":"alert","params":{"deployment":"dsv4"}}', NULL, NULL, 'w-alert', 'host/1/2', NULL),
	('r-cli', 'host-basics', 'cli', 'alice', '{}', 'finished', 'ok', 3000, 4000, NULL, NULL, NULL, NULL, '', NULL),
	('r-spaced', 'host-basics', 'slack', 'U-bob', '{}', 'finished', 'ok', 500, 600, '` + spacedReport + `', NULL, NULL, NULL, '', NULL);
INSERT INTO work (id, dedup_key, trigger_type, runbook, params, requested_by, payload, state, attempts, run_id, owner,
		enqueued_at, started_at, done_at) VALUES
	('w-chat', 'command:Ev01', 'slack', 'host-basics', '{"trigger":"slack"}', 'U-alice', '{"channel":"C1","thread":"1.2"}',
		'done', 1, 'r-chat', 'host/1/2', 900, 950, 2000),
	('w-alert', 'alert/fp/1', 'alert', 'sglang-pd-wedge', '{"deployment":"dsv4"}', 'alertmanager',
		'{"trigger":{"labels":{"alertname":"DecodeStuck"}}}', 'started', 1, 'r-alert', 'host/1/2', 950, 990, NULL),
	('w-queued', NULL, 'slack', 'host-basics', '{}', 'U-bob', NULL, 'pending', 0, '', '', 3000, NULL, NULL);
INSERT INTO plans (id, run_id, remediation, deployment, hash, body, requested_by, policy, state, created_at, updated_at)
	VALUES ('p-1', 'r-chat', 'restart', 'dsv4', 'h1', '{"runbook":"host-basics"}', 'U-alice', '{}', 'applying', 2000, 2100);
INSERT INTO approvals (plan_id, approver, decision, plan_hash, at) VALUES ('p-1', 'U-bob', 'approve', 'h1', 2050);
INSERT INTO actions (plan_id, idx, target, action, state, detail, started_at) VALUES
	('p-1', 0, 'decode@gpu-1', 'systemd_restart', 'started', '{"changed":true}', 2100);
INSERT INTO audit (at, run_id, plan_id, kind, actor, detail) VALUES
	(900, '', '', 'work.enqueued', 'U-alice', '{"key":"command:Ev01","runbook":"host-basics","trigger":"slack","work":"w-chat"}'),
	(950, '', '', 'work.enqueued', 'alertmanager', '{"key":"alert/fp/1","runbook":"sglang-pd-wedge","trigger":"alert","work":"w-alert"}'),
	(1000, 'r-chat', '', 'run.created', 'U-alice', '{"params":{"trigger":"slack"},"runbook":"host-basics","trigger":"slack"}'),
	(1000, 'r-alert', '', 'run.created', 'alertmanager', '{"params":{"deployment":"dsv4"},"runbook":"sglang-pd-wedge","trigger":"alert"}'),
	(2000, 'r-chat', '', 'run.finished', '', '{"outcome":"critical","status":"finished"}'),
	(2050, 'r-chat', 'p-1', 'plan.approval', 'U-bob', '{"decision":"approve","plan_hash":"h1","trigger":"slack"}');
`

// tableRows is every row of the tables slackRows fills, column by column,
// with SQLite's rowid (PostgreSQL's runs and plans have theirs as a
// column).
func tableRows(t *testing.T, ctx context.Context, s *sqlStore) map[string][]map[string]any {
	t.Helper()
	rowid := ""
	if s.d == sqliteDialect {
		rowid = "rowid AS sqlite_rowid, "
	}
	out := map[string][]map[string]any{}
	for table, order := range map[string]string{"runs": "id", "work": "id", "plans": "id", "approvals": "plan_id, approver",
		"actions": "plan_id, idx", "audit": "id"} {
		rows, err := s.db.QueryContext(ctx, `SELECT `+rowid+`* FROM `+table+` ORDER BY `+order)
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			row := map[string]any{}
			for i, c := range cols {
				row[c] = vals[i]
			}
			out[table] = append(out[table], row)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
	}
	return out
}

// schemaObjects names the indexes and triggers of the database, with
// their definitions, and whether each trigger is enabled.
func schemaObjects(t *testing.T, ctx context.Context, s *sqlStore) []string {
	t.Helper()
	q := `SELECT type || ' ' || name || ' ON ' || tbl_name || ': ' || coalesce(sql, '') FROM sqlite_master
		WHERE type IN ('index', 'trigger') ORDER BY name`
	if s.d == postgresDialect {
		q = `SELECT indexdef FROM pg_indexes WHERE schemaname = 'public'
			UNION ALL SELECT tgname || ' ON ' || tgrelid::regclass::text || ' enabled ' || tgenabled::text FROM pg_trigger
			WHERE NOT tgisinternal ORDER BY 1`
	}
	rows, err := s.db.QueryContext(ctx, q)
	require.NoError(t, err)
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	var out []string
	for rows.Next() {
		var o string
		require.NoError(t, rows.Scan(&o))
		out = append(out, o)
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, out)
	return out
}

// checkChatTriggerUpgrade fills old, a database at the version before the
// rename, with slackRows, closes it, opens it with the current store
// (upgrade), and checks that every stored trigger kind "slack" reads
// "chat", that nothing else changed, and that the store refuses "slack"
// from then on.
func checkChatTriggerUpgrade(t *testing.T, ctx context.Context, old *sqlStore, upgrade func() *sqlStore) { //nolint:thelper // the body of the SQLite and PostgreSQL upgrade tests; t.Helper would hide the failing line
	_, err := old.db.ExecContext(ctx, slackRows)
	require.NoError(t, err)
	want, wantSchema := tableRows(t, ctx, old), schemaObjects(t, ctx, old)
	require.NoError(t, old.Close())

	s := upgrade()
	t.Cleanup(func() { _ = s.Close() }) // test cleanup

	// Every row is as it was but for the trigger kind, wherever one is
	// stored; a param named trigger, the message's platform and an audit
	// entry of another kind keep their "slack".
	chat := func(table, key string, id any, col, from, to string) {
		t.Helper()
		for _, row := range want[table] {
			if row[key] == id {
				require.Equal(t, from, row[col], "%s %v %s before", table, id, col)
				row[col] = to
				return
			}
		}
		t.Fatalf("no %s %v", table, id)
	}
	chat("runs", "id", "r-chat", "trigger_type", "slack", "chat")
	chat("runs", "id", "r-chat", "report", slackReport, strings.Replace(slackReport, `"trigger":"slack"`, `"trigger":"chat"`, 1))
	chat("work", "id", "w-chat", "trigger_type", "slack", "chat")
	chat("work", "id", "w-queued", "trigger_type", "slack", "chat")
	chat("audit", "detail", `{"key":"command:Ev01","runbook":"host-basics","trigger":"slack","work":"w-chat"}`, "detail",
		`{"key":"command:Ev01","runbook":"host-basics","trigger":"slack","work":"w-chat"}`,
		`{"key":"command:Ev01","runbook":"host-basics","trigger":"chat","work":"w-chat"}`)
	chat("audit", "detail", `{"params":{"trigger":"slack"},"runbook":"host-basics","trigger":"slack"}`, "detail",
		`{"params":{"trigger":"slack"},"runbook":"host-basics","trigger":"slack"}`,
		`{"params":{"trigger":"slack"},"runbook":"host-basics","trigger":"chat"}`)
	got := tableRows(t, ctx, s)
	for _, row := range got["runs"] {
		if row["id"] == "r-spaced" {
			// Rewritten as JSON, not byte for byte.
			require.JSONEq(t, `{"params":{"trigger":"slack"},"trigger":"chat","steps":[]}`, row["report"].(string))
			chat("runs", "id", "r-spaced", "report", spacedReport, row["report"].(string))
		}
	}
	chat("runs", "id", "r-spaced", "trigger_type", "slack", "chat")
	require.Equal(t, want, got)
	require.Equal(t, wantSchema, schemaObjects(t, ctx, s), "the indexes and triggers are as they were")

	// The store reads them so.
	run, err := s.GetRun(ctx, "r-chat")
	require.NoError(t, err)
	require.Equal(t, TriggerChat, run.Trigger)
	require.Equal(t, &MessageRef{Platform: "slack", Channel: "C1", ID: "1700000000.000100"}, run.Message, "the platform is still Slack")
	require.Equal(t, map[string]string{"trigger": "slack"}, run.Params)
	listed, err := s.ListRuns(ctx, RunFilter{})
	require.NoError(t, err)
	var ids []string
	for _, r := range listed {
		ids = append(ids, r.ID)
	}
	require.Equal(t, []string{"r-cli", "r-alert", "r-chat", "r-spaced"}, ids, "ties on the start time break as before")
	chatRuns, err := s.ListRuns(ctx, RunFilter{Trigger: TriggerChat})
	require.NoError(t, err)
	require.Len(t, chatRuns, 2)
	require.Equal(t, "r-chat", chatRuns[0].ID)
	require.Equal(t, "r-spaced", chatRuns[1].ID)
	for id, kind := range map[string]Trigger{"w-chat": TriggerChat, "w-queued": TriggerChat, "w-alert": TriggerAlert} {
		w, err := s.GetWork(ctx, id)
		require.NoError(t, err)
		require.Equal(t, kind, w.Trigger, id)
	}

	// "slack" is refused, by the store and by the CHECKs; "chat" is taken.
	_, err = s.CreateRun(ctx, Run{Runbook: "host-basics", Trigger: "slack"})
	require.ErrorContains(t, err, "invalid trigger")
	_, _, err = s.Enqueue(ctx, Work{Runbook: "host-basics", Trigger: "slack"})
	require.ErrorContains(t, err, "valid trigger")
	refused := "CHECK constraint failed"
	if s.d == postgresDialect {
		refused = "violates check constraint"
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO runs (id, runbook, trigger_type, status, started_at) VALUES ('r-raw', 'x', 'slack', 'running', 1)`)
	require.ErrorContains(t, err, refused)
	_, err = s.db.ExecContext(ctx, `INSERT INTO work (id, trigger_type, runbook, state, enqueued_at) VALUES ('w-raw', 'slack', 'x', 'pending', 1)`)
	require.ErrorContains(t, err, refused)
	_, err = s.db.ExecContext(ctx, `UPDATE runs SET trigger_type = 'slack' WHERE id = 'r-chat'`)
	require.ErrorContains(t, err, refused)
	created, err := s.CreateRun(ctx, Run{Runbook: "host-basics", Trigger: TriggerChat, RequestedBy: "U-carol"})
	require.NoError(t, err)
	require.Equal(t, TriggerChat, created.Trigger)
	_, _, err = s.Enqueue(ctx, Work{Runbook: "host-basics", Trigger: TriggerChat, Key: "command:Ev02"})
	require.NoError(t, err)

	// The guards the migration lifted are back: the audit log is
	// append-only, and a plan must name a run that exists.
	_, err = s.db.ExecContext(ctx, `UPDATE audit SET actor = 'mallory'`)
	require.ErrorContains(t, err, "audit log is append-only")
	_, _, err = s.CreatePlan(ctx, Plan{RunID: "r-missing", Remediation: "x", Deployment: "d", Hash: "h", Body: []byte(`{}`)})
	require.Error(t, err, "foreign keys are enforced again")
}

// A SQLite database written before the chat trigger kind was renamed
// reads "chat" wherever it stored "slack" once migration 9 has run, and
// keeps everything else, its plans' references to its runs included.
func TestUpgradeRenamesSlackTriggerToChat(t *testing.T) {
	ctx := upgradeCtx(t)
	path := filepath.Join(t.TempDir(), "runbot.db")
	old := openAtVersion(t, ctx, path, sqliteBeforeChatTrigger)
	checkChatTriggerUpgrade(t, ctx, &old.sqlStore, func() *sqlStore {
		s, err := Open(ctx, path)
		require.NoError(t, err)
		v, err := s.Version(ctx)
		require.NoError(t, err)
		require.Equal(t, SchemaVersion(), v)
		return &s.sqlStore
	})
}

// A migration that leaves a row referencing one that is gone is refused
// and rolled back, although SQLite migrations run with foreign keys off.
func TestMigrationThatBreaksAForeignKeyIsRefused(t *testing.T) {
	ctx := upgradeCtx(t)
	path := filepath.Join(t.TempDir(), "runbot.db")
	s, err := Open(ctx, path)
	require.NoError(t, err)
	defer func() { _ = s.Close() }() // test cleanup
	run, err := s.CreateRun(ctx, Run{Runbook: "host-basics", Trigger: TriggerCLI})
	require.NoError(t, err)
	_, _, err = s.CreatePlan(ctx, Plan{RunID: run.ID, Remediation: "x", Deployment: "d", Hash: "h", Body: []byte(`{}`)})
	require.NoError(t, err)
	ms, err := sqliteMigrations.load()
	require.NoError(t, err)
	ms = append(ms, migration{version: len(ms) + 1, name: "9999_orphan_plans.sql", sql: `DELETE FROM runs`})
	require.ErrorContains(t, s.applyMigrations(ctx, ms), "1 rows break a foreign key: plans row 1 references a missing runs")
	v, err := s.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, SchemaVersion(), v)
	_, err = s.GetRun(ctx, run.ID)
	require.NoError(t, err, "the migration was rolled back")
	var fk int
	for range 3 {
		require.NoError(t, s.db.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk))
		require.Equal(t, 1, fk)
	}
}
