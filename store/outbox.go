package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ChatOutbox is the durable queue of chat messages: each message runbot
// posts, with the newest content it should show, until the chat platform
// has taken it. A message is recorded before anything is sent, so that a
// run never waits for the chat and a chat outage or a restart loses
// nothing; a sender claims due messages, delivers them at the platform's
// pace and records what it delivered.
type ChatOutbox interface {
	// QueueChatMessage records a message to post. A message with the Key
	// of an existing one is that message: it is returned, with created
	// false, and its content is left alone.
	QueueChatMessage(ctx context.Context, m ChatMessage) (msg ChatMessage, created bool, err error)
	// SetChatMessageContent makes content the message's newest content.
	// Content not yet delivered is replaced, never queued behind: the
	// platform only ever needs the newest.
	SetChatMessageContent(ctx context.Context, id string, content json.RawMessage) (ChatMessage, error)
	// ClaimChatMessages claims up to limit due messages for this process
	// until lease from now, oldest first. A message claimed by another
	// process whose claim has not run out is not claimed.
	ClaimChatMessages(ctx context.Context, limit int, lease time.Duration) ([]ChatMessage, error)
	// ChatMessageDelivered records that version of the message was
	// delivered, and the platform's id of it when it was posted, and
	// releases the claim.
	ChatMessageDelivered(ctx context.Context, d ChatDelivery) (ChatMessage, error)
	// ChatMessageDeferred releases the claim and makes the message due
	// again at d.Until, counting a failed attempt when d.Failed says so,
	// or gives it up for good when d.GiveUp does.
	ChatMessageDeferred(ctx context.Context, d ChatDeferral) (ChatMessage, error)
	// GetChatMessage returns one message by its id.
	GetChatMessage(ctx context.Context, id string) (ChatMessage, error)
	// ChatBacklog counts the messages not yet delivered and says since
	// when the oldest of them waits.
	ChatBacklog(ctx context.Context) (ChatBacklog, error)
}

// ChatMessageState is where a message of the outbox is: due while it has
// content the platform has not been given, done once it has all of it,
// failed when the platform refused it for good.
type ChatMessageState string

const (
	ChatMessageDue    ChatMessageState = "due"
	ChatMessageDone   ChatMessageState = "done"
	ChatMessageFailed ChatMessageState = "failed"
)

// ChatMessagePrefix starts the id the outbox gives a message: a reference
// whose ID has it names a message of the outbox, not yet the platform's.
const ChatMessagePrefix = "m-"

// ChatMessage is one message of the outbox.
type ChatMessage struct {
	ID string `json:"id"`
	// Key deduplicates: one message per key (an alert group's summary).
	Key     string `json:"key,omitempty"`
	Channel string `json:"channel"`
	// Thread, when set, posts the message as a reply: the platform's id
	// of the thread's first message, or the outbox id of it.
	Thread string `json:"thread,omitempty"`
	// Content is the newest content, as the chat layer encodes it.
	Content json.RawMessage `json:"content"`
	// OnRefusal is what the chat layer does when the platform refuses
	// the post for good (tell the person who asked), as it encodes it.
	OnRefusal json.RawMessage `json:"on_refusal,omitempty"`
	// Version counts content changes; SentVersion is the version the
	// platform has (0: not posted yet).
	Version     int              `json:"version"`
	SentVersion int              `json:"sent_version"`
	PlatformID  string           `json:"platform_id,omitempty"`
	State       ChatMessageState `json:"state"`
	Attempts    int              `json:"attempts"`
	NextAt      time.Time        `json:"next_at"`
	LastError   string           `json:"last_error,omitempty"`
	CreatedAt   time.Time        `json:"created_at"`
	UpdatedAt   time.Time        `json:"updated_at"`
}

// Posted reports whether the platform has the message.
func (m ChatMessage) Posted() bool { return m.PlatformID != "" }

// ChatDelivery is what a sender delivered of a message.
type ChatDelivery struct {
	ID      string
	Version int
	// PlatformID is the platform's id of a message just posted.
	PlatformID string
}

// ChatDeferral is a delivery that did not happen now.
type ChatDeferral struct {
	ID    string
	Until time.Time
	// Failed counts an attempt the platform failed; a message waiting
	// for its thread's first message to be posted is deferred without.
	Failed bool
	// GiveUp marks the message failed for good (the platform refused it:
	// the channel does not exist, the bot is not in it).
	GiveUp bool
	Reason string
}

// ChatBacklog is how much the outbox holds undelivered.
type ChatBacklog struct {
	Due int
	// Oldest is when the oldest undelivered message was queued or last
	// changed; zero when nothing is due.
	Oldest time.Time
}

const chatColumns = `id, dedup_key, channel, thread, content, on_refusal, version, sent_version, platform_id, state, attempts,
	next_at, last_error, created_at, updated_at`

func scanChatMessage(row interface{ Scan(...any) error }) (ChatMessage, error) {
	var (
		m                     ChatMessage
		key, refusal          sql.NullString
		content               string
		next, created, update int64
	)
	if err := row.Scan(&m.ID, &key, &m.Channel, &m.Thread, &content, &refusal, &m.Version, &m.SentVersion, &m.PlatformID,
		&m.State, &m.Attempts, &next, &m.LastError, &created, &update); err != nil {
		return ChatMessage{}, err
	}
	m.Key, m.Content, m.OnRefusal = key.String, json.RawMessage(content), rawJSON(refusal)
	m.NextAt, m.CreatedAt, m.UpdatedAt = time.Unix(0, next).UTC(), time.Unix(0, created).UTC(), time.Unix(0, update).UTC()
	return m, nil
}

// QueueChatMessage records a message to post, due now.
func (s *sqlStore) QueueChatMessage(ctx context.Context, m ChatMessage) (ChatMessage, bool, error) {
	if m.Channel == "" {
		return ChatMessage{}, false, errors.New("queue chat message: a channel is required")
	}
	if err := checkContent(m.Content); err != nil {
		return ChatMessage{}, false, fmt.Errorf("queue chat message: %w", err)
	}
	if err := checkJSON("on_refusal", m.OnRefusal); err != nil {
		return ChatMessage{}, false, fmt.Errorf("queue chat message: %w", err)
	}
	now := s.clock()
	created := false
	for attempt := 0; ; attempt++ {
		id := newID(strings.TrimSuffix(ChatMessagePrefix, "-"), now)
		var out ChatMessage
		err := s.write(ctx, func(tx querier) error {
			res, err := tx.ExecContext(ctx, `INSERT INTO chat_outbox (id, dedup_key, channel, thread, content, on_refusal, version,
				sent_version, state, next_at, created_at, updated_at) VALUES (?,?,?,?,?,?,1,0,'due',?,?,?)
				ON CONFLICT (dedup_key) DO NOTHING`,
				id, nullString(m.Key), m.Channel, m.Thread, string(m.Content), jsonText(m.OnRefusal), now.UnixNano(), now.UnixNano(), now.UnixNano())
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				created = false
				out, err = scanChatMessage(tx.QueryRowContext(ctx, `SELECT `+chatColumns+` FROM chat_outbox WHERE dedup_key = ?`, m.Key))
				return err
			}
			created = true
			out, err = scanChatMessage(tx.QueryRowContext(ctx, `SELECT `+chatColumns+` FROM chat_outbox WHERE id = ?`, id))
			return err
		})
		if isUniqueViolation(err) && attempt < 5 {
			continue
		}
		if err != nil {
			return ChatMessage{}, false, fmt.Errorf("queue chat message in %s: %w", m.Channel, err)
		}
		return out, created, nil
	}
}

// SetChatMessageContent replaces the newest content and makes the message
// due again. A message whose post the platform refused stays failed: there
// is nothing to update.
func (s *sqlStore) SetChatMessageContent(ctx context.Context, id string, content json.RawMessage) (ChatMessage, error) {
	if err := checkContent(content); err != nil {
		return ChatMessage{}, fmt.Errorf("set content of chat message %s: %w", id, err)
	}
	now := s.clock()
	var out ChatMessage
	err := s.write(ctx, func(tx querier) error {
		var err error
		out, err = scanChatMessage(tx.QueryRowContext(ctx, `UPDATE chat_outbox SET content = ?, version = version + 1,
			state = CASE WHEN state = 'failed' AND platform_id = '' THEN 'failed' ELSE 'due' END,
			next_at = CASE WHEN state = 'due' THEN next_at ELSE ? END, updated_at = ?
			WHERE id = ? RETURNING `+chatColumns, string(content), now.UnixNano(), now.UnixNano(), id))
		return notFound(err)
	})
	if err != nil {
		return ChatMessage{}, fmt.Errorf("set content of chat message %s: %w", id, err)
	}
	return out, nil
}

// ClaimChatMessages claims due messages oldest first. On PostgreSQL the
// pick skips rows other claimers hold locked, and the UPDATE re-checks
// that the claim is free on the row it locks.
func (s *sqlStore) ClaimChatMessages(ctx context.Context, limit int, lease time.Duration) ([]ChatMessage, error) {
	now := s.clock()
	// Another's claim is free once it expired by the earliest the
	// database's clock may read.
	free := s.dbEarliest(now).UnixNano()
	// A read first: the sender asks every second, and a claim that finds
	// nothing need not take the write lock.
	var due int
	if err := s.read().QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM chat_outbox
		WHERE state = 'due' AND next_at <= ? AND claim_until <= ? LIMIT 1) AS due`, now.UnixNano(), free).Scan(&due); err != nil {
		return nil, fmt.Errorf("claim chat messages: %w", err)
	}
	if due == 0 {
		return nil, nil
	}
	if err := s.claimable(now); err != nil {
		return nil, fmt.Errorf("claim chat messages: %w", err)
	}
	type claimed struct {
		seq int64
		m   ChatMessage
	}
	var got []claimed
	err := s.write(ctx, func(tx querier) error {
		got = got[:0]
		rows, err := tx.QueryContext(ctx, `UPDATE chat_outbox SET claim_owner = ?, claim_until = ?
			WHERE state = 'due' AND next_at <= ? AND claim_until <= ? AND seq IN (
				SELECT seq FROM chat_outbox WHERE state = 'due' AND next_at <= ? AND claim_until <= ?
				ORDER BY seq LIMIT ?`+tx.dialect().skipLocked+`)
			RETURNING seq, `+chatColumns,
			s.owner, now.Add(lease).UnixNano(), now.UnixNano(), free, now.UnixNano(), free, limit)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }() // rows.Err reports how reading went
		for rows.Next() {
			var c claimed
			var err error
			c.m, err = scanChatMessage(seqScanner{rows: rows, seq: &c.seq})
			if err != nil {
				return err
			}
			got = append(got, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("claim chat messages: %w", err)
	}
	// RETURNING promises no order.
	slices.SortFunc(got, func(a, b claimed) int { return int(a.seq - b.seq) })
	out := make([]ChatMessage, len(got))
	for i, c := range got {
		out[i] = c.m
	}
	return out, nil
}

// checkContent requires a message's content: JSON, not empty.
func checkContent(b []byte) error {
	if len(b) == 0 || !json.Valid(b) {
		return errors.New("content must be JSON")
	}
	return nil
}

// seqScanner scans a row that has seq before the message's columns.
type seqScanner struct {
	rows *sql.Rows
	seq  *int64
}

func (s seqScanner) Scan(dest ...any) error {
	return s.rows.Scan(append([]any{s.seq}, dest...)...)
}

// ChatMessageDelivered records a delivery. The sent version only grows, so
// a late report of an older delivery cannot undo a newer one; the message
// stays due when newer content arrived while it was being sent.
func (s *sqlStore) ChatMessageDelivered(ctx context.Context, d ChatDelivery) (ChatMessage, error) {
	now := s.clock()
	var out ChatMessage
	err := s.write(ctx, func(tx querier) error {
		var err error
		out, err = scanChatMessage(tx.QueryRowContext(ctx, `UPDATE chat_outbox SET
			sent_version = CASE WHEN sent_version > ? THEN sent_version ELSE ? END,
			platform_id = CASE WHEN platform_id = '' THEN ? ELSE platform_id END,
			state = CASE WHEN version > (CASE WHEN sent_version > ? THEN sent_version ELSE ? END)
				OR (platform_id = '' AND ? = '') THEN 'due' ELSE 'done' END,
			attempts = 0, last_error = '', claim_owner = '', claim_until = 0, next_at = ?, updated_at = ?
			WHERE id = ? RETURNING `+chatColumns,
			d.Version, d.Version, d.PlatformID, d.Version, d.Version, d.PlatformID, now.UnixNano(), now.UnixNano(), d.ID))
		return notFound(err)
	})
	if err != nil {
		return ChatMessage{}, fmt.Errorf("record delivery of chat message %s: %w", d.ID, err)
	}
	return out, nil
}

// ChatMessageDeferred releases a claim for later, or for good.
func (s *sqlStore) ChatMessageDeferred(ctx context.Context, d ChatDeferral) (ChatMessage, error) {
	now := s.clock()
	state := ChatMessageDue
	if d.GiveUp {
		state = ChatMessageFailed
	}
	failed := 0
	if d.Failed || d.GiveUp {
		failed = 1
	}
	var out ChatMessage
	err := s.write(ctx, func(tx querier) error {
		var err error
		out, err = scanChatMessage(tx.QueryRowContext(ctx, `UPDATE chat_outbox SET state = ?, attempts = attempts + ?,
			next_at = ?, last_error = CASE WHEN ? = '' THEN last_error ELSE ? END, claim_owner = '', claim_until = 0, updated_at = ?
			WHERE id = ? RETURNING `+chatColumns,
			state, failed, d.Until.UnixNano(), d.Reason, d.Reason, now.UnixNano(), d.ID))
		return notFound(err)
	})
	if err != nil {
		return ChatMessage{}, fmt.Errorf("defer chat message %s: %w", d.ID, err)
	}
	return out, nil
}

// GetChatMessage returns one message of the outbox.
func (s *sqlStore) GetChatMessage(ctx context.Context, id string) (ChatMessage, error) {
	m, err := scanChatMessage(s.read().QueryRowContext(ctx, `SELECT `+chatColumns+` FROM chat_outbox WHERE id = ?`, id))
	if err != nil {
		return ChatMessage{}, fmt.Errorf("get chat message %s: %w", id, notFound(err))
	}
	return m, nil
}

// ChatBacklog counts the due messages.
func (s *sqlStore) ChatBacklog(ctx context.Context) (ChatBacklog, error) {
	var (
		b      ChatBacklog
		oldest sql.NullInt64
	)
	if err := s.read().QueryRowContext(ctx, `SELECT count(*), min(updated_at) FROM chat_outbox WHERE state = 'due'`).
		Scan(&b.Due, &oldest); err != nil {
		return ChatBacklog{}, fmt.Errorf("count undelivered chat messages: %w", err)
	}
	b.Oldest = fromNanos(oldest)
	return b, nil
}
