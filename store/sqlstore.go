package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// sqlStore is the Store over database/sql that SQLite and Postgres share:
// every query is written once, in SQLite's spelling, and the dialect
// rewrites the few places where PostgreSQL differs (placeholders, row
// locks, a JSON lookup). What a backend needs beyond that (how it opens,
// its migrations) lives in its own file.
type sqlStore struct {
	db *sql.DB
	d  *dialect
	// now is this process's clock; clock corrects it to the database's.
	now func() time.Time
	// dbTime is the database's clock as this process measured it.
	dbTime      dbClock
	dedupWindow time.Duration
	// owner names this process in the rows it claims (running runs,
	// applying plans, started work), so that MarkInterrupted in another
	// process can tell a live owner from a dead one.
	owner string
	// alive tells whether the owner of a row still runs.
	alive func(owner string) bool
	// writeSlot admits one write transaction of this process at a time,
	// for SQLite only: SQLite allows one writer anyway, and queueing here
	// hands the write lock over at once, where waiting inside SQLite's busy
	// handler polls with sleeps. busy_timeout still arbitrates between
	// processes. PostgreSQL runs writers side by side, so it has none.
	writeSlot chan struct{}
	// lease is what this process knows of its own replica lease from its
	// heartbeats (leaseView).
	lease leaseView
	// claimsInDoubt are the started_at (nanoseconds) of this process's work
	// claims whose commit went unanswered; the next MarkInterrupted hands
	// back those that committed.
	claimsInDoubt struct {
		sync.Mutex
		at []int64
	}
	// connLost, when set, is called after a transaction failed because
	// its connection did not answer (connectionFailed): PostgreSQL's
	// drops the pool's idle connections, which went to the same server.
	connLost func()
}

// Ping reads one row of runs (not just the connection's liveness, which
// database/sql's own Ping checks): a database file gone bad or a closed
// store fails it. The query is the same in both dialects.
func (s *sqlStore) Ping(ctx context.Context) error {
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT 1 FROM runs LIMIT 1) AS probe").Scan(&n); err != nil {
		return fmt.Errorf("ping store: %w", err)
	}
	return nil
}

// PingWrite upserts this process's heartbeat row in a write transaction,
// durably committed like every write.
func (s *sqlStore) PingWrite(ctx context.Context) error {
	err := s.write(ctx, func(tx querier) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO heartbeats (owner, at) VALUES (?, ?)
			ON CONFLICT (owner) DO UPDATE SET at = excluded.at`, s.owner, s.clock().UnixNano())
		return err
	})
	if err != nil {
		return fmt.Errorf("write to store: %w", err)
	}
	return nil
}

// Close closes the database. Closing twice is harmless.
func (s *sqlStore) Close() error { return s.db.Close() }

// DB exposes the database handle for tests and for read-only tooling. Code
// that writes through it bypasses the state machines and the audit log.
func (s *sqlStore) DB() *sql.DB { return s.db }

// read is the handle reads go through outside a transaction.
func (s *sqlStore) read() querier { return conn{q: s.db, d: s.d} }

// commitAnyway wraps an error that a transaction returns after doing work
// that must be kept (e.g. expiring a plan while refusing a late approval).
type commitAnyway struct{ err error }

func (c commitAnyway) Error() string { return c.err.Error() }

// write runs fn in one transaction and commits it when fn returns nil or
// commitAnyway. On SQLite the transaction begins IMMEDIATE (the DSN says
// so), which makes every read in it see what it then writes. On PostgreSQL
// it runs at READ COMMITTED: the statements that read-then-write lock what
// they read (dialect.forUpdate, lockKey), and compare-and-set updates
// re-check their WHERE on the row they lock.
func (s *sqlStore) write(ctx context.Context, fn func(tx querier) error) error {
	release, err := s.takeWriteSlot(ctx)
	if err != nil {
		return err
	}
	defer release()
	return s.inTx(ctx, s.db, fn)
}

// takeWriteSlot waits for this process's turn to write (SQLite's
// writeSlot); release gives it back.
func (s *sqlStore) takeWriteSlot(ctx context.Context) (release func(), err error) {
	if s.writeSlot == nil {
		return func() {}, nil
	}
	select {
	case s.writeSlot <- struct{}{}:
		return func() { <-s.writeSlot }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait to write: %w", ctx.Err())
	}
}

// txBeginner is where a transaction begins: the pool (*sql.DB) or one
// connection of it (*sql.Conn).
type txBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// inTx runs fn in one transaction begun on b and commits it when fn
// returns nil or commitAnyway.
func (s *sqlStore) inTx(ctx context.Context, b txBeginner, fn func(tx querier) error) error {
	tx, err := b.BeginTx(ctx, nil)
	if err != nil {
		s.checkConn(err)
		return fmt.Errorf("begin: %w", err)
	}
	ferr := fn(conn{q: tx, d: s.d})
	var keep commitAnyway
	if ferr != nil && !errors.As(ferr, &keep) {
		_ = tx.Rollback() // fn's error is the one to report
		s.checkConn(ferr)
		return ferr
	}
	if err := tx.Commit(); err != nil {
		s.checkConn(err)
		return commitError{err}
	}
	if ferr != nil {
		return keep.err
	}
	return nil
}

// checkConn tells connLost when err says the connection failed rather
// than the statement.
func (s *sqlStore) checkConn(err error) {
	if s.connLost != nil && connectionFailed(err) {
		s.connLost()
	}
}

// connectionFailed reports whether err is a connection that did not
// answer or broke: no answer before the deadline, a network error, a
// connection closed under the statement. An error from the server is an
// answer, and a context cancelled by its caller (a shutdown) says nothing
// about the connection.
func connectionFailed(err error) bool {
	var pgErr *pgconn.PgError
	switch {
	case err == nil, errors.As(err, &pgErr):
		return false
	case errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr)
}

// commitError is a COMMIT that failed.
type commitError struct{ err error }

func (e commitError) Error() string { return "commit: " + e.err.Error() }

func (e commitError) Unwrap() error { return e.err }

// inDoubt reports whether err is a COMMIT that may have gone through all
// the same: the server never answered it, because the connection broke
// (the primary died, a failover) or the context ended while it waited
// (for a synchronous standby, say). An error from the server is an
// answer: the transaction rolled back.
func inDoubt(err error) bool {
	var c commitError
	if !errors.As(err, &c) {
		return false
	}
	var pgErr *pgconn.PgError
	var coded interface{ Code() int } // SQLite's, which commits or not in this process
	return !errors.As(c.err, &pgErr) && !errors.As(c.err, &coded)
}

// querier is what the queries need from a database or a transaction; conn
// implements it for both, in the store's dialect.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	// dialect is how the database spells what SQLite and PostgreSQL
	// spell differently.
	dialect() *dialect
}

// sqlQuerier is what *sql.DB and *sql.Tx have in common.
type sqlQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// conn runs the store's queries on a database or transaction, rewritten
// for its dialect.
type conn struct {
	q sqlQuerier
	d *dialect
}

func (c conn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return c.q.QueryRowContext(ctx, c.d.rebind(query), args...)
}

func (c conn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.q.QueryContext(ctx, c.d.rebind(query), args...)
}

func (c conn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.q.ExecContext(ctx, c.d.rebind(query), args...)
}

func (c conn) dialect() *dialect { return c.d }

// lockKey serializes the transactions of every process that read-then-write
// what key names (an alert fingerprint, a deployment's remediation) until
// the transaction ends. On SQLite the write lock already does.
func lockKey(ctx context.Context, tx querier, key string) error {
	q := tx.dialect().lockKey
	if q == "" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, q, key); err != nil {
		return fmt.Errorf("lock %s: %w", key, err)
	}
	return nil
}

// Times are stored as INTEGER nanoseconds since the Unix epoch, NULL for the
// zero time: exact, compact and ordered, the same on both backends.
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
