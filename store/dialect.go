package store

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
)

// dialect is what SQLite and PostgreSQL spell differently in the store's
// queries. The queries are written in SQLite's spelling; a dialect rewrites
// them or fills in the pieces that differ.
type dialect struct {
	name string
	// numbered rewrites "?" placeholders as "$1", "$2", ....
	numbered bool
	// forUpdate follows a SELECT in a write transaction whose rows the
	// transaction goes on to change, so that a concurrent writer waits for
	// it. SQLite needs none: one transaction writes at a time.
	forUpdate string
	// skipLocked follows the SELECT that picks work to claim: concurrent
	// claimers each take a different row instead of queueing on one.
	skipLocked string
	// lockKey, run with one argument, takes a lock on that name until the
	// transaction ends; empty when the write lock already serializes.
	lockKey string
	// schemaMigrations creates the table that records applied migrations.
	schemaMigrations string
	// migrationLock, when set, is run first in every migration
	// transaction, so that processes opening a new database at once apply
	// each migration once.
	migrationLock string
	// foreignKeysOff and foreignKeysOn, when set, are run on the
	// connection before and after each migration's transaction, and
	// foreignKeyCheck, run before it commits, lists the rows that break a
	// foreign key: SQLite's procedure for schema changes, without which a
	// table that others reference cannot be rebuilt (dropping it would
	// first delete its rows from under the rows that reference them).
	foreignKeysOff, foreignKeysOn, foreignKeyCheck string
	// clock reads the database's clock, in nanoseconds since the Unix
	// epoch (dbClock); empty where the store keeps its own clock.
	clock string

	cache sync.Map // query in SQLite's spelling -> in this dialect's
}

var sqliteDialect = &dialect{
	name: "sqlite",
	schemaMigrations: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`,
	foreignKeysOff:  `PRAGMA foreign_keys = OFF`,
	foreignKeysOn:   `PRAGMA foreign_keys = ON`,
	foreignKeyCheck: `PRAGMA foreign_key_check`,
}

var postgresDialect = &dialect{
	name:       "postgres",
	numbered:   true,
	forUpdate:  ` FOR UPDATE`,
	skipLocked: ` FOR UPDATE SKIP LOCKED`,
	// hashtextextended maps a name to the 64-bit key advisory locks take;
	// two names sharing a hash only wait for each other, which is safe.
	lockKey: `SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`,
	schemaMigrations: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`,
	// CREATE TABLE IF NOT EXISTS is not safe against a concurrent one in
	// PostgreSQL (both may try to create the type), hence a lock first.
	migrationLock: `SELECT pg_advisory_xact_lock(hashtextextended('runbot.schema_migrations', 0))`,
	// clock_timestamp() is the time as the statement runs (now() would be
	// the transaction's start); extract gives exact numeric seconds.
	clock: `SELECT (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint`,
}

// rebind rewrites a query's "?" placeholders for the dialect. The store's
// queries hold no "?" inside string literals, but quoted text is skipped
// anyway so that a literal can never be mistaken for a placeholder.
func (d *dialect) rebind(q string) string {
	if !d.numbered {
		return q
	}
	if v, ok := d.cache.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	n, quoted := 0, false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case c == '?' && !quoted:
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	out := b.String()
	d.cache.Store(q, out)
	return out
}

// paramEquals is the condition "the params JSON column holds value under
// key", with its arguments. The key is quoted as a JSON path member on
// SQLite, so any param name (dots and brackets included) names one member
// only; PostgreSQL's ->> takes the member name as it is.
func (d *dialect) paramEquals(key, value string) (string, []any, error) {
	if d.numbered {
		return "(params::jsonb ->> ?) = ?", []any{key, value}, nil
	}
	path, err := json.Marshal(key)
	if err != nil {
		return "", nil, err
	}
	return "json_extract(params, ?) = ?", []any{"$." + string(path), value}, nil
}
