package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// AlertStatus is an alert's state as Alertmanager reports it.
type AlertStatus string

const (
	AlertFiring   AlertStatus = "firing"
	AlertResolved AlertStatus = "resolved"
)

// AlertState is the dedup state of one alert fingerprint.
//
// Alertmanager delivers the same alert many times: on every group_interval
// tick while it changes, every repeat_interval while it fires, and again
// after any delivery it thinks failed. One trigger (one run) covers a firing
// alert for the store's dedup window; deliveries inside the window are
// counted in Repeats. A delivery after the window, or after the alert had
// resolved, starts a new trigger.
type AlertState struct {
	Fingerprint string      `json:"fingerprint"`
	Status      AlertStatus `json:"status"`
	// FirstSeen is the first delivery ever, LastSeen the latest.
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// TriggeredAt is when the current trigger started, and Repeats how
	// many further firing deliveries were folded into it.
	TriggeredAt time.Time `json:"triggered_at"`
	Repeats     int       `json:"repeats"`
	// TriggerKey is the Work.Key to enqueue the current trigger's work
	// under. Enqueueing under it on every firing delivery is idempotent,
	// so a crash between RecordAlert and Enqueue loses nothing: the next
	// delivery enqueues it. Empty when the alert was never seen firing.
	TriggerKey string `json:"trigger_key,omitempty"`
	// RunID is the run created for the current trigger's work, once there
	// is one.
	RunID string `json:"run_id,omitempty"`
	// Fresh is set on RecordAlert's result for exactly the one delivery
	// that started a new trigger.
	Fresh bool `json:"fresh,omitempty"`
}

// AlertDelivery is one stored webhook delivery of an alert.
type AlertDelivery struct {
	ID          int64           `json:"id"`
	Fingerprint string          `json:"fingerprint"`
	ReceivedAt  time.Time       `json:"received_at"`
	Payload     json.RawMessage `json:"payload"`
}

const alertColumns = `s.fingerprint, s.status, s.first_seen, s.last_seen, s.triggered_at, s.repeats, s.trigger_key,
	coalesce(w.run_id, '')`

const alertFrom = ` FROM alert_state s LEFT JOIN work w ON w.dedup_key = s.trigger_key AND s.trigger_key <> ''`

func scanAlert(row interface{ Scan(...any) error }) (AlertState, error) {
	var (
		a                      AlertState
		first, last, triggered sql.NullInt64
	)
	if err := row.Scan(&a.Fingerprint, &a.Status, &first, &last, &triggered, &a.Repeats, &a.TriggerKey, &a.RunID); err != nil {
		return AlertState{}, err
	}
	a.FirstSeen, a.LastSeen, a.TriggeredAt = fromNanos(first), fromNanos(last), fromNanos(triggered)
	return a, nil
}

// RecordAlert stores a delivery and updates the fingerprint's dedup state in
// one transaction; when it returns, both are on disk.
func (s *sqlStore) RecordAlert(ctx context.Context, fingerprint string, payload []byte, receivedAt time.Time) (AlertState, error) {
	if fingerprint == "" || receivedAt.IsZero() {
		return AlertState{}, errors.New("record alert: fingerprint and receive time are required")
	}
	var body struct {
		Status AlertStatus `json:"status"`
	}
	if err := json.Unmarshal(payload, &body); err != nil {
		return AlertState{}, fmt.Errorf("record alert %s: payload is not a JSON object: %w", fingerprint, err)
	}
	status := AlertFiring
	if body.Status == AlertResolved {
		status = AlertResolved
	}
	at := receivedAt.UTC()
	var st AlertState
	err := s.write(ctx, func(tx querier) error {
		// Deliveries of one fingerprint fold into its state one after
		// the other, in whichever process they arrive: the lock holds
		// even while the state row does not exist yet.
		if err := lockKey(ctx, tx, "alert/"+fingerprint); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO alert_inbox (fingerprint, received_at, payload) VALUES (?, ?, ?)`,
			fingerprint, at.UnixNano(), payload); err != nil {
			return fmt.Errorf("store delivery: %w", err)
		}
		prev, err := scanAlert(tx.QueryRowContext(ctx, `SELECT `+alertColumns+alertFrom+` WHERE s.fingerprint = ?`, fingerprint))
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		st = prev
		if !exists {
			st = AlertState{Fingerprint: fingerprint, FirstSeen: at, LastSeen: at, TriggeredAt: at}
		}
		if at.After(st.LastSeen) {
			st.LastSeen = at
		}
		wasFiring := exists && prev.Status == AlertFiring
		switch {
		case status == AlertResolved:
			st.Status = AlertResolved
		case !wasFiring || st.TriggerKey == "" || !at.Before(st.TriggeredAt.Add(s.dedupWindow)):
			st.Status, st.TriggeredAt, st.Repeats, st.RunID, st.Fresh = AlertFiring, at, 0, "", true
			st.TriggerKey = "alert/" + fingerprint + "/" + strconv.FormatInt(at.UnixNano(), 10)
		default:
			st.Repeats++
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO alert_state
			(fingerprint, status, first_seen, last_seen, triggered_at, repeats, trigger_key) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (fingerprint) DO UPDATE SET status = excluded.status, last_seen = excluded.last_seen,
				triggered_at = excluded.triggered_at, repeats = excluded.repeats, trigger_key = excluded.trigger_key`,
			fingerprint, st.Status, st.FirstSeen.UnixNano(), st.LastSeen.UnixNano(), st.TriggeredAt.UnixNano(),
			st.Repeats, st.TriggerKey); err != nil {
			return err
		}
		// Status changes are audited; repeats are counted, not logged.
		switch {
		case st.Fresh:
			return appendAudit(ctx, tx, AuditEvent{At: at, Kind: AuditAlertFiring, Actor: "alertmanager",
				Detail: mustJSON(map[string]any{"fingerprint": fingerprint, "trigger_key": st.TriggerKey})})
		case status == AlertResolved && wasFiring:
			return appendAudit(ctx, tx, AuditEvent{At: at, Kind: AuditAlertResolved, Actor: "alertmanager",
				Detail: mustJSON(map[string]any{"fingerprint": fingerprint, "repeats": st.Repeats})})
		}
		return nil
	})
	if err != nil {
		return AlertState{}, fmt.Errorf("record alert %s: %w", fingerprint, err)
	}
	return st, nil
}

// GetAlert returns the dedup state of one fingerprint.
func (s *sqlStore) GetAlert(ctx context.Context, fingerprint string) (AlertState, error) {
	st, err := scanAlert(s.read().QueryRowContext(ctx, `SELECT `+alertColumns+alertFrom+` WHERE s.fingerprint = ?`, fingerprint))
	if err != nil {
		return AlertState{}, fmt.Errorf("get alert %s: %w", fingerprint, notFound(err))
	}
	return st, nil
}

// RecentAlerts returns fingerprints last seen at or after since, most
// recent first.
func (s *sqlStore) RecentAlerts(ctx context.Context, since time.Time) ([]AlertState, error) {
	rows, err := s.read().QueryContext(ctx, `SELECT `+alertColumns+alertFrom+` WHERE s.last_seen >= ?
		ORDER BY s.last_seen DESC, s.fingerprint`, since.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("list recent alerts: %w", err)
	}
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	var out []AlertState
	for rows.Next() {
		st, err := scanAlert(rows)
		if err != nil {
			return nil, fmt.Errorf("list recent alerts: %w", err)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list recent alerts: %w", err)
	}
	return out, nil
}

// AlertDeliveries returns a fingerprint's stored deliveries, oldest first.
func (s *sqlStore) AlertDeliveries(ctx context.Context, fingerprint string) ([]AlertDelivery, error) {
	rows, err := s.read().QueryContext(ctx, `SELECT id, fingerprint, received_at, payload FROM alert_inbox
		WHERE fingerprint = ? ORDER BY id`, fingerprint)
	if err != nil {
		return nil, fmt.Errorf("list deliveries of alert %s: %w", fingerprint, err)
	}
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	var out []AlertDelivery
	for rows.Next() {
		var (
			d  AlertDelivery
			at sql.NullInt64
		)
		if err := rows.Scan(&d.ID, &d.Fingerprint, &at, &d.Payload); err != nil {
			return nil, fmt.Errorf("list deliveries of alert %s: %w", fingerprint, err)
		}
		d.ReceivedAt = fromNanos(at)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list deliveries of alert %s: %w", fingerprint, err)
	}
	return out, nil
}
