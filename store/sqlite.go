package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite is the Store kept in one SQLite file. Several processes may open the
// same file: WAL mode lets readers run beside the one writer, busy_timeout
// makes a writer wait for another rather than fail, and every transaction
// begins IMMEDIATE so that a read-then-write (a compare-and-set, a lock) holds
// the write lock from its first read and cannot be interleaved.
type SQLite struct {
	sqlStore
}

var _ Store = (*SQLite)(nil)

// Option configures Open.
type Option func(*options)

type options struct {
	now func() time.Time
	// localNow says now is this host's clock, which a store on PostgreSQL
	// corrects to the database's (dbClock); a test's clock from WithNow
	// stands for the database's as well.
	localNow    bool
	busyTimeout time.Duration
	dedupWindow time.Duration
	owner       string
	alive       func(owner string) bool
}

// WithNow sets the clock used for lock expiry, approval expiry and record
// timestamps. Tests pass a fake clock, which every store of the test shares:
// on PostgreSQL it replaces the database's clock too, so the store measures
// no offset from it (see dbClock).
func WithNow(now func() time.Time) Option {
	return func(o *options) { o.now, o.localNow = now, false }
}

// withLocalClock sets this host's clock, in place of time.Now: the test
// hook for a host whose clock is off, which a store on PostgreSQL corrects
// to the database's clock as it does time.Now.
func withLocalClock(now func() time.Time) Option {
	return func(o *options) { o.now, o.localNow = now, true }
}

// WithHostClockOffset is a test hook for a host whose clock is off: the
// store takes this host's clock to read time.Now plus d. A store on
// PostgreSQL corrects it to the database's clock (dbClock), as it does
// time.Now, so leases, locks, claims and approval windows come out the
// same whatever d is; SQLite, one file on one host, keeps the shifted
// clock. End-to-end tests shift one replica's clock with it (runbot serve
// reads RUNBOT_TEST_CLOCK_OFFSET) without changing the host's.
func WithHostClockOffset(d time.Duration) Option {
	return withLocalClock(func() time.Time { return time.Now().Add(d) })
}

// WithBusyTimeout sets how long a statement waits for another connection's
// write lock before failing with SQLITE_BUSY. The default is 10s. SQLite
// only: PostgreSQL writers wait on row locks, which they hold briefly.
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

func defaultOptions() options {
	return options{now: time.Now, localNow: true, busyTimeout: 10 * time.Second, dedupWindow: time.Hour, owner: processOwner(), alive: ownerAlive}
}

// Open opens (creating if needed) the store at path and brings its schema up
// to date.
func Open(ctx context.Context, path string, opts ...Option) (*SQLite, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("open store: invalid path %q", path)
	}
	if o.owner == "" || o.alive == nil {
		return nil, fmt.Errorf("open store %s: an owner and a liveness check are required", path)
	}
	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn(path, o.busyTimeout))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &SQLite{sqlStore{db: db, d: sqliteDialect, now: o.now, dedupWindow: o.dedupWindow, owner: o.owner, alive: o.alive,
		writeSlot: make(chan struct{}, 1)}}
	if err := enableWAL(ctx, db, o.busyTimeout); err != nil {
		_ = db.Close() // the WAL error is the one to report
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := s.migrate(ctx, sqliteMigrations); err != nil {
		_ = db.Close() // the migration error is the one to report
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

// createPrivate creates a new store file readable by its owner only: it
// holds command output as it was, before any redaction. SQLite creates its
// -wal and -shm files with the database file's permissions. An existing
// file keeps the mode an operator gave it.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	return f.Close()
}

// dsn builds the driver name. The pragmas run on every new connection of
// the pool: foreign keys and busy_timeout are per connection in SQLite.
// synchronous=FULL makes a commit durable before it returns, which the alert
// webhook relies on before it answers 2xx. The journal mode is not among
// them: WAL is a property of the file, set once by enableWAL, and setting it
// on every new connection fails at once with SQLITE_BUSY (busy_timeout does
// not cover it) while another process is creating the same new file.
func dsn(path string, busy time.Duration) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	return path + "?" + q.Encode()
}

// enableWAL puts the database file in WAL mode. Switching a new file's
// journal mode takes an exclusive lock, and SQLite reports SQLITE_BUSY at
// once, without its busy handler, when another process holds any lock on
// the file; so the switch is retried here for up to busy, as busy_timeout
// would for any other statement. On a file already in WAL mode it changes
// nothing and takes no exclusive lock.
func enableWAL(ctx context.Context, db *sql.DB, busy time.Duration) error {
	ctx, cancel := context.WithTimeoutCause(ctx, busy,
		fmt.Errorf("set WAL mode: the database stayed locked for %s", busy))
	defer cancel()
	wait := 5 * time.Millisecond
	for {
		var mode string
		err := db.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode)
		if err == nil {
			if !strings.EqualFold(mode, "wal") {
				return fmt.Errorf("set WAL mode: the database stays in %s mode", mode)
			}
			return nil
		}
		if !isBusy(err) {
			return fmt.Errorf("set WAL mode: %w", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("set WAL mode: %w (%w)", context.Cause(ctx), err)
		case <-t.C:
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (any extended code).
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}
