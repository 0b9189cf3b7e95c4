package store

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// Postgres is the Store kept in a PostgreSQL database, which any number of
// processes on any number of hosts may share. It runs the same queries as
// SQLite through database/sql (pgx's stdlib driver), so both backends are
// one implementation with one behaviour; the dialect fills in what
// PostgreSQL needs to give the same guarantees with writers side by side:
// a read that a transaction then writes on locks its rows (FOR UPDATE), a
// work claim skips the rows other claimers hold (FOR UPDATE SKIP LOCKED),
// and what has no row to lock yet (an alert's first delivery, a plan's
// first proposal) takes a transaction-scoped advisory lock on its name.
//
// Ownership: every process that owns rows holds a replica lease
// (Heartbeat, KeepAlive) and MarkInterrupted counts an owner dead once its
// lease expired, whatever host it runs on; the host-local liveness check
// (WithOwnerAlive) only speeds up what it can prove (a process on this
// host that is gone) and judges owners that never took a lease.
type Postgres struct {
	sqlStore
}

var _ Store = (*Postgres)(nil)

// postgresMaxConns caps the connections one store opens. Every write is
// one short transaction, so a few connections serve many goroutines; the
// cap keeps a fleet of replicas within the server's max_connections.
const postgresMaxConns = 8

// postgresConnectTimeout bounds the connection to each host of a DSN
// that sets no connect_timeout. A primary whose machine died (or whose
// network drops everything) does not refuse a connection: without a
// bound, every new connection would wait for the kernel to give up on it
// (minutes), past the deadline of any write (a lease renewal has
// DefaultHeartbeat), and never try the standby a multi-host DSN names
// after it. Half a heartbeat leaves the rest of one to the next host.
const postgresConnectTimeout = DefaultHeartbeat / 2

// followPrimary makes every connection of the store reach the host that
// takes writes, whichever a multi-host DSN (host1:port1,host2:port2) lists
// first: a session that cannot write is refused at connect time and the
// next host is tried, as target_session_attrs=read-write does. The store
// writes from its first statement (the migrations, a lease), so it never
// wants a read-only session; left to the default (any), a pool that
// connected to a standby, or to a node that came back as one, would fail
// every write for as long as it kept the connection. A DSN that names a
// target_session_attrs other than any keeps it.
func followPrimary(cfg *pgx.ConnConfig) {
	if cfg.ValidateConnect == nil {
		cfg.ValidateConnect = pgconn.ValidateConnectTargetSessionAttrsReadWrite
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = postgresConnectTimeout
	}
	cfg.DialFunc = noticeSilence()
}

// Silence on a connection: how soon one whose server went silent (its
// machine lost power, the network between dropped everything) fails, with
// nothing in flight (keepalive probes) or with data the server never
// acknowledged (TCP_USER_TIMEOUT). Without them the kernel waits minutes
// (the keepalive pgx sets is 5 min; retransmissions take ~15 min), and a
// statement without its own deadline (or a pooled connection the next
// statement takes) would hang that long. A live server's kernel answers
// the probes and acknowledges data whatever its load, so a slow query is
// never cut by them.
const (
	keepAliveIdle     = 10 * time.Second
	keepAliveInterval = 5 * time.Second
	keepAliveCount    = 3
	tcpUserTimeout    = 20 * time.Second
)

// noticeSilence returns pgx's dialer with keepalives that notice a
// silent server within about keepAliveIdle+keepAliveInterval*
// keepAliveCount while a connection is idle, and (on Linux) a
// TCP_USER_TIMEOUT that does within tcpUserTimeout while data waits for
// its acknowledgement. A DSN cannot name a dialer of its own, so nothing
// is replaced but pgx's default.
func noticeSilence() pgconn.DialFunc {
	d := &net.Dialer{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: keepAliveIdle, Interval: keepAliveInterval, Count: keepAliveCount},
		Control: func(network, _ string, c syscall.RawConn) error {
			if !strings.HasPrefix(network, "tcp") {
				return nil
			}
			var serr error
			if err := c.Control(func(fd uintptr) { serr = setUserTimeout(fd, tcpUserTimeout) }); err != nil {
				return err
			}
			return serr
		},
	}
	return d.DialContext
}

// dropIdle closes the pool's idle connections. A transaction whose
// connection did not answer says the server behind the pool is gone, or
// cut off: a primary whose machine lost power answers nothing, not even
// a reset, and each idle connection to it would cost the operation that
// next takes it a whole deadline (up to postgresMaxConns of them, tens of
// seconds of failed writes after a promotion, lease renewals among them).
// Dropped, the next operations connect afresh, through the multi-host
// DSN, to whichever host takes writes. Connections in use are dropped by
// the pool when their own statements fail.
func dropIdle(db *sql.DB) {
	db.SetMaxIdleConns(0)
	db.SetMaxIdleConns(postgresMaxConns)
}

// OpenPostgres opens the store in the PostgreSQL database named by dsn (a
// postgres:// URL or a "key=value" connection string) and brings its schema
// up to date. The password in dsn never appears in an error it returns.
func OpenPostgres(ctx context.Context, dsn string, opts ...Option) (*Postgres, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	where := RedactDSN(dsn)
	if o.owner == "" || o.alive == nil {
		return nil, fmt.Errorf("open store %s: an owner and a liveness check are required", where)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, redactErr(fmt.Errorf("open store %s: %w", where, err), dsn)
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "runbot"
	}
	followPrimary(cfg)
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(postgresMaxConns)
	db.SetMaxIdleConns(postgresMaxConns)
	s := &Postgres{sqlStore{db: db, d: postgresDialect, now: o.now, dbTime: dbClock{measured: o.localNow},
		dedupWindow: o.dedupWindow, owner: o.owner, alive: o.alive}}
	s.connLost = func() { dropIdle(db) }
	if err := s.migrate(ctx, postgresMigrations); err != nil {
		_ = db.Close() // the migration error is the one to report
		return nil, redactErr(fmt.Errorf("open store %s: %w", where, err), dsn)
	}
	if err := s.syncClock(ctx, s.read()); err != nil {
		_ = db.Close() // the clock's error is the one to report
		return nil, redactErr(fmt.Errorf("open store %s: %w", where, err), dsn)
	}
	return s, nil
}
