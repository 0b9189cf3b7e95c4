package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/run"
)

// Trigger says what started a run. It is run.Trigger, the one type the
// runbook language's reports carry too; the store keeps runs and work of
// the kinds TriggerKinds lists only.
type Trigger = run.Trigger

const (
	TriggerCLI = run.TriggerCLI
	// TriggerChat is a chat command, on whichever platform; see
	// run.TriggerChat for the "slack" it replaced.
	TriggerChat     = run.TriggerChat
	TriggerAlert    = run.TriggerAlert
	TriggerSchedule = run.TriggerSchedule
)

// TriggerKinds returns every valid trigger kind of a stored run or work:
// run.RecordedTriggers, the one list of them. Trigger's Valid reports
// whether a trigger is one of them.
func TriggerKinds() []Trigger { return run.RecordedTriggers() }

// RunStatus says whether a run is still going and how it ended as a process;
// Outcome says what it found.
type RunStatus string

const (
	RunRunning RunStatus = "running"
	// RunFinished means every step ran to its end (whatever it observed).
	RunFinished RunStatus = "finished"
	// RunFailed means the engine could not carry the run out.
	RunFailed RunStatus = "failed"
	// RunInterrupted means the process running it went away.
	RunInterrupted RunStatus = "interrupted"
	// RunCanceled means someone cancelled it.
	RunCanceled RunStatus = "canceled"
)

// Final reports whether the status ends a run.
func (s RunStatus) Final() bool {
	switch s {
	case RunFinished, RunFailed, RunInterrupted, RunCanceled:
		return true
	}
	return false
}

// Outcome is a run's verdict. It is run.Outcome, the one type the runbook
// language's reports carry (runbooks.Outcome): the store adds OutcomeNone
// for a run that has not finished and OutcomeError for one the engine
// could not carry out.
type Outcome = run.Outcome

const (
	OutcomeNone         = run.OutcomeNone
	OutcomeOK           = run.OutcomeOK
	OutcomeCritical     = run.OutcomeCritical
	OutcomeInconclusive = run.OutcomeInconclusive
	OutcomeError        = run.OutcomeError
)

// MessageRef locates a message that a chat front end posted, on any
// platform. The store keeps it opaque: Platform names the front end
// ("slack" for Slack, and for every reference recorded before platforms
// were named), Channel where the message is, ID the platform's name for the
// message (a Slack message's ts).
type MessageRef struct {
	Platform string `json:"platform"`
	Channel  string `json:"channel"`
	ID       string `json:"id"`
}

func (m MessageRef) check() error {
	if m.Platform == "" || m.ID == "" {
		return fmt.Errorf("message reference %+v: platform and id are required", m)
	}
	return nil
}

// Run is one execution of a runbook.
type Run struct {
	ID          string            `json:"id"`
	Runbook     string            `json:"runbook"`
	Trigger     Trigger           `json:"trigger"`
	RequestedBy string            `json:"requested_by"`
	Params      map[string]string `json:"params,omitempty"`
	Status      RunStatus         `json:"status"`
	Outcome     Outcome           `json:"outcome,omitempty"`
	StartedAt   time.Time         `json:"started_at"`
	FinishedAt  time.Time         `json:"finished_at,omitzero"`
	// Report is the engine's report (steps, findings, diagnoses); the
	// store keeps it as an opaque JSON document.
	Report json.RawMessage `json:"report,omitempty"`
	// Message is where a chat front end posted the run, nil if none did.
	Message *MessageRef `json:"message,omitempty"`
	// WorkID is the queued trigger the run carries out, if any; creating
	// the run links the work item to it.
	WorkID string `json:"work_id,omitempty"`
	// Owner names the process that runs it (host/pid/start).
	Owner string `json:"owner,omitempty"`
}

// RunFilter selects runs for ListRuns. Zero fields do not filter.
type RunFilter struct {
	Runbook string
	Trigger Trigger
	Status  RunStatus
	// RequestedBy keeps the runs of one requester: a user, or a schedule
	// by its name.
	RequestedBy string
	// Params keeps the runs whose params hold every one of these values
	// (the runs of one deployment, say).
	Params map[string]string
	// Since keeps runs started at or after it.
	Since time.Time
	// Limit caps the result; 0 means 50.
	Limit int
}

const runColumns = `id, runbook, trigger_type, requested_by, params, status, outcome, started_at, finished_at,
	report, message_platform, message_channel, message_id, work_id, owner`

func scanRun(row interface{ Scan(...any) error }) (Run, error) {
	var (
		r                     Run
		params                string
		started, finished     sql.NullInt64
		report                sql.NullString
		platform, channel, id sql.NullString
		work                  sql.NullString
	)
	err := row.Scan(&r.ID, &r.Runbook, &r.Trigger, &r.RequestedBy, &params, &r.Status, &r.Outcome,
		&started, &finished, &report, &platform, &channel, &id, &work, &r.Owner)
	if err != nil {
		return Run{}, err
	}
	if err := decodeParams(params, &r.Params); err != nil {
		return Run{}, fmt.Errorf("decode params of run %s: %w", r.ID, err)
	}
	r.StartedAt, r.FinishedAt = fromNanos(started), fromNanos(finished)
	r.Report = rawJSON(report)
	if platform.Valid {
		r.Message = &MessageRef{Platform: platform.String, Channel: channel.String, ID: id.String}
	}
	r.WorkID = work.String
	return r, nil
}

// decodeParams reads a params column; "{}" is a nil map, as it was written.
func decodeParams(text string, params *map[string]string) error {
	if text == "{}" {
		*params = nil
		return nil
	}
	return json.Unmarshal([]byte(text), params)
}

func checkJSON(what string, b []byte) error {
	if len(b) > 0 && !json.Valid(b) {
		return fmt.Errorf("%s is not valid JSON", what)
	}
	return nil
}

// CreateRun inserts a run in state running.
func (s *sqlStore) CreateRun(ctx context.Context, r Run) (Run, error) {
	if r.Runbook == "" {
		return Run{}, errors.New("create run: runbook is required")
	}
	if !r.Trigger.Valid() {
		return Run{}, fmt.Errorf("create run: invalid trigger %q", r.Trigger)
	}
	if err := checkJSON("report", r.Report); err != nil {
		return Run{}, fmt.Errorf("create run: %w", err)
	}
	if r.ID != "" {
		if err := checkID(r.ID); err != nil {
			return Run{}, fmt.Errorf("create run: %w", err)
		}
	}
	if r.Message != nil {
		if err := r.Message.check(); err != nil {
			return Run{}, fmt.Errorf("create run: %w", err)
		}
	}
	params, err := json.Marshal(r.Params)
	if err != nil {
		return Run{}, fmt.Errorf("create run: encode params: %w", err)
	}
	if r.Params == nil {
		params = []byte("{}")
	}
	now := s.clock()
	if r.StartedAt.IsZero() {
		r.StartedAt = now
	}
	r.Status, r.Outcome, r.FinishedAt, r.Owner = RunRunning, OutcomeNone, time.Time{}, s.owner
	generated := r.ID == ""
	for attempt := 0; ; attempt++ {
		if generated {
			r.ID = newID("r", r.StartedAt)
		}
		err = s.write(ctx, func(tx querier) error {
			var platform, channel, id any
			if m := r.Message; m != nil {
				platform, channel, id = m.Platform, m.Channel, m.ID
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO runs (`+runColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
				r.ID, r.Runbook, r.Trigger, r.RequestedBy, string(params), r.Status, r.Outcome,
				nanos(r.StartedAt), nil, jsonText(r.Report), platform, channel, id, nullString(r.WorkID), r.Owner); err != nil {
				return err
			}
			if r.WorkID != "" {
				res, err := tx.ExecContext(ctx, `UPDATE work SET run_id = ? WHERE id = ?`, r.ID, r.WorkID)
				if err != nil {
					return fmt.Errorf("link work %s: %w", r.WorkID, err)
				}
				if n, _ := res.RowsAffected(); n == 0 {
					return fmt.Errorf("link work %s: %w", r.WorkID, ErrNotFound)
				}
			}
			return appendAudit(ctx, tx, AuditEvent{At: now, RunID: r.ID, Kind: AuditRunCreated, Actor: r.RequestedBy,
				Detail: mustJSON(map[string]any{"runbook": r.Runbook, "trigger": r.Trigger, "params": r.Params})})
		})
		if generated && isUniqueViolation(err) && attempt < 5 {
			continue
		}
		if err != nil {
			return Run{}, fmt.Errorf("create run: %w", err)
		}
		return r, nil
	}
}

// GetRun finds a run by ID or unique ID prefix.
func (s *sqlStore) GetRun(ctx context.Context, idOrPrefix string) (Run, error) {
	if err := checkID(idOrPrefix); err != nil {
		return Run{}, fmt.Errorf("get run: %w", err)
	}
	r, err := scanRun(s.read().QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, idOrPrefix))
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("get run %s: %w", idOrPrefix, err)
	}
	id, err := s.resolvePrefix(ctx, "runs", idOrPrefix)
	if err != nil {
		return Run{}, fmt.Errorf("get run %s: %w", idOrPrefix, err)
	}
	r, err = scanRun(s.read().QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if err != nil {
		return Run{}, fmt.Errorf("get run %s: %w", id, err)
	}
	return r, nil
}

// resolvePrefix finds the one ID in table that starts with prefix. IDs hold
// only characters below '~' (checkID), so [prefix, prefix+"~") is exactly
// the IDs with that prefix, and the primary key index serves the range.
func (s *sqlStore) resolvePrefix(ctx context.Context, table, prefix string) (string, error) {
	rows, err := s.read().QueryContext(ctx, `SELECT id FROM `+table+` WHERE id >= ? AND id < ? ORDER BY id LIMIT 5`,
		prefix, prefix+"~")
	if err != nil {
		return "", err
	}
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	switch len(ids) {
	case 0:
		return "", ErrNotFound
	case 1:
		return ids[0], nil
	}
	return "", &AmbiguousIDError{Prefix: prefix, Matches: ids}
}

// ListRuns returns runs newest first.
func (s *sqlStore) ListRuns(ctx context.Context, f RunFilter) ([]Run, error) {
	var where []string
	var args []any
	if f.Runbook != "" {
		where, args = append(where, "runbook = ?"), append(args, f.Runbook)
	}
	if f.Trigger != "" {
		where, args = append(where, "trigger_type = ?"), append(args, f.Trigger)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	if f.RequestedBy != "" {
		where, args = append(where, "requested_by = ?"), append(args, f.RequestedBy)
	}
	for _, k := range slices.Sorted(maps.Keys(f.Params)) {
		cond, cargs, err := s.d.paramEquals(k, f.Params[k])
		if err != nil {
			return nil, fmt.Errorf("list runs: param %q: %w", k, err)
		}
		where, args = append(where, cond), append(args, cargs...)
	}
	if !f.Since.IsZero() {
		where, args = append(where, "started_at >= ?"), append(args, f.Since.UnixNano())
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	q := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY started_at DESC, rowid DESC LIMIT ?`
	rows, err := s.read().QueryContext(ctx, q, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	var runs []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}

// SetRunReport replaces the report of a running run. A report that names its
// outcome and finished_at is the run's result: if the process dies before
// FinishRun, MarkInterrupted finishes the run from it instead of
// interrupting it, so that the run is not run again.
func (s *sqlStore) SetRunReport(ctx context.Context, id string, report json.RawMessage) error {
	if err := checkJSON("report", report); err != nil {
		return fmt.Errorf("set report of run %s: %w", id, err)
	}
	err := s.write(ctx, func(tx querier) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET report = ? WHERE id = ? AND status = 'running'`, jsonText(report), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil
		}
		return runConflict(ctx, tx, id, RunRunning)
	})
	if err != nil {
		return fmt.Errorf("set report of run %s: %w", id, err)
	}
	return nil
}

// runConflict explains why an update guarded by "status = want" matched no row.
func runConflict(ctx context.Context, q querier, id string, want RunStatus) error {
	var got string
	err := q.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, id).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	return &StateConflictError{Kind: "run", ID: id, Want: string(want), Got: got}
}

// FinishRun moves a running run to a final status.
func (s *sqlStore) FinishRun(ctx context.Context, id string, status RunStatus, outcome Outcome, report json.RawMessage) (Run, error) {
	if !status.Final() {
		return Run{}, fmt.Errorf("finish run %s: %w", id, &InvalidTransitionError{Kind: "run", From: string(RunRunning), To: string(status)})
	}
	if !outcome.Valid() {
		return Run{}, fmt.Errorf("finish run %s: invalid outcome %q", id, outcome)
	}
	if err := checkJSON("report", report); err != nil {
		return Run{}, fmt.Errorf("finish run %s: %w", id, err)
	}
	now := s.clock()
	var r Run
	err := s.write(ctx, func(tx querier) error {
		// A nil report keeps the one SetRunReport stored last.
		row := tx.QueryRowContext(ctx, `UPDATE runs SET status = ?, outcome = ?, finished_at = ?, report = coalesce(?, report)
			WHERE id = ? AND status = 'running' RETURNING `+runColumns,
			status, outcome, now.UnixNano(), jsonText(report), id)
		var err error
		r, err = scanRun(row)
		if errors.Is(err, sql.ErrNoRows) {
			return runConflict(ctx, tx, id, RunRunning)
		}
		if err != nil {
			return err
		}
		return appendAudit(ctx, tx, AuditEvent{At: now, RunID: id, Kind: AuditRunFinished,
			Detail: mustJSON(map[string]any{"status": status, "outcome": outcome})})
	})
	if err != nil {
		return Run{}, fmt.Errorf("finish run %s: %w", id, err)
	}
	return r, nil
}

// SetRunMessage records where a chat front end posted the run, replacing
// any reference recorded before.
func (s *sqlStore) SetRunMessage(ctx context.Context, id string, ref MessageRef) error {
	if err := ref.check(); err != nil {
		return fmt.Errorf("set message of run %s: %w", id, err)
	}
	err := s.write(ctx, func(tx querier) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET message_platform = ?, message_channel = ?, message_id = ? WHERE id = ?`,
			ref.Platform, ref.Channel, ref.ID, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set message of run %s: %w", id, err)
	}
	return nil
}
