package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// SQLite is the Store kept in one SQLite file. Several processes may open the
// same file: WAL mode lets readers run beside the one writer, busy_timeout
// makes a writer wait for another rather than fail, and every transaction
// begins IMMEDIATE so that a read-then-write (a compare-and-set, a lock) holds
// the write lock from its first read and cannot be interleaved.
type SQLite struct {
	db          *sql.DB
	now         func() time.Time
	dedupWindow time.Duration
	// owner names this process in the rows it claims (running runs,
	// applying plans, started work), so that MarkInterrupted in another
	// process can tell a live owner from a dead one.
	owner string
	// alive tells whether the owner of a row still runs.
	alive func(owner string) bool
	// writeSlot admits one write transaction of this process at a time.
	// SQLite allows one writer anyway; queueing here hands the write lock
	// over at once, where waiting inside SQLite's busy handler polls with
	// sleeps. busy_timeout still arbitrates between processes.
	writeSlot chan struct{}
}

var _ Store = (*SQLite)(nil)

// Option configures Open.
type Option func(*options)

type options struct {
	now         func() time.Time
	busyTimeout time.Duration
	dedupWindow time.Duration
	owner       string
	alive       func(owner string) bool
}

// WithNow sets the clock used for lock expiry, approval expiry and record
// timestamps. Tests pass a fake clock.
func WithNow(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithBusyTimeout sets how long a statement waits for another connection's
// write lock before failing with SQLITE_BUSY. The default is 10s.
func WithBusyTimeout(d time.Duration) Option { return func(o *options) { o.busyTimeout = d } }

// WithDedupWindow sets how long repeated deliveries of a firing alert are
// folded into the run they already triggered. The default is one hour.
func WithDedupWindow(d time.Duration) Option { return func(o *options) { o.dedupWindow = d } }

// WithOwner sets the name the store writes into the rows it claims
// (running runs, applying plans, started work). The default names this
// process, "host/pid/start-time". With WithOwnerAlive, tests play several
// processes in one, some of which die.
func WithOwner(owner string) Option { return func(o *options) { o.owner = owner } }

// WithOwnerAlive sets how MarkInterrupted tells whether the owner of a row
// still runs; the store's own owner always does. The default asks /proc
// whether the process named "host/pid/start-time" is alive.
func WithOwnerAlive(alive func(owner string) bool) Option {
	return func(o *options) { o.alive = alive }
}

// Open opens (creating if needed) the store at path and brings its schema up
// to date.
func Open(ctx context.Context, path string, opts ...Option) (*SQLite, error) {
	o := options{now: time.Now, busyTimeout: 10 * time.Second, dedupWindow: time.Hour, owner: processOwner(), alive: ownerAlive}
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("open store: invalid path %q", path)
	}
	if o.owner == "" || o.alive == nil {
		return nil, fmt.Errorf("open store %s: an owner and a liveness check are required", path)
	}
	db, err := sql.Open("sqlite", dsn(path, o.busyTimeout))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &SQLite{db: db, now: o.now, dedupWindow: o.dedupWindow, owner: o.owner, alive: o.alive, writeSlot: make(chan struct{}, 1)}
	if err := s.migrate(ctx); err != nil {
		_ = db.Close() // the migration error is the one to report
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

// dsn builds the driver name. The pragmas run on every new connection of
// the pool: foreign keys and busy_timeout are per connection in SQLite.
// synchronous=FULL makes a commit durable before it returns, which the alert
// webhook relies on before it answers 2xx.
func dsn(path string, busy time.Duration) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	return path + "?" + q.Encode()
}

// Close closes the database.
func (s *SQLite) Close() error { return s.db.Close() }

// DB exposes the database handle for tests and for read-only tooling. Code
// that writes through it bypasses the state machines and the audit log.
func (s *SQLite) DB() *sql.DB { return s.db }

func (s *SQLite) clock() time.Time { return s.now().UTC() }

// commitAnyway wraps an error that a transaction returns after doing work
// that must be kept (e.g. expiring a plan while refusing a late approval).
type commitAnyway struct{ err error }

func (c commitAnyway) Error() string { return c.err.Error() }

// write runs fn in one IMMEDIATE transaction and commits it when fn returns
// nil or commitAnyway.
func (s *SQLite) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	select {
	case s.writeSlot <- struct{}{}:
		defer func() { <-s.writeSlot }()
	case <-ctx.Done():
		return fmt.Errorf("wait to write: %w", ctx.Err())
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	ferr := fn(tx)
	var keep commitAnyway
	if ferr != nil && !errors.As(ferr, &keep) {
		_ = tx.Rollback()
		return ferr
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if ferr != nil {
		return keep.err
	}
	return nil
}

// querier is what reads need from *sql.DB and *sql.Tx alike.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Times are stored as INTEGER nanoseconds since the Unix epoch, NULL for the
// zero time: exact, compact and ordered.
func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func jsonText(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

func rawJSON(s sql.NullString) []byte {
	if !s.Valid || s.String == "" {
		return nil
	}
	return []byte(s.String)
}

// notFound turns sql.ErrNoRows into ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}
