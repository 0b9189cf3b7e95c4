package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var sqliteMigrationFiles embed.FS

//go:embed migrations/postgres/*.sql
var postgresMigrationFiles embed.FS

// migrationSet is one backend's migrations: the files in dir of fsys.
type migrationSet struct {
	fsys embed.FS
	dir  string
}

var (
	sqliteMigrations   = migrationSet{sqliteMigrationFiles, "migrations"}
	postgresMigrations = migrationSet{postgresMigrationFiles, "migrations/postgres"}
)

// migration is one numbered schema change, migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

func (set migrationSet) load() ([]migration, error) {
	entries, err := fs.ReadDir(set.fsys, set.dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", name)
		}
		b, err := set.fsys.ReadFile(set.dir + "/" + name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this binary brings a SQLite database
// to.
func SchemaVersion() int { return sqliteMigrations.version() }

// PostgresSchemaVersion is the schema version this binary brings a
// PostgreSQL database to. The two backends number their migrations apart.
func PostgresSchemaVersion() int { return postgresMigrations.version() }

func (set migrationSet) version() int {
	ms, err := set.load()
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrate applies the migrations the database lacks, each in its own write
// transaction together with its row in schema_migrations. The version is
// read again inside the transaction (after the dialect's migration lock),
// so two processes opening a new database at once apply each migration
// exactly once.
func (s *sqlStore) migrate(ctx context.Context, set migrationSet) error {
	ms, err := set.load()
	if err != nil {
		return err
	}
	return s.applyMigrations(ctx, ms)
}

// applyMigrations brings the database to the last of ms, which are the
// migrations from version 1 on. Tests pass a prefix to make a database of
// an older version.
func (s *sqlStore) applyMigrations(ctx context.Context, ms []migration) error {
	for _, m := range ms {
		err := s.writeMigration(ctx, func(tx querier) error {
			if s.d.migrationLock != "" {
				if _, err := tx.ExecContext(ctx, s.d.migrationLock); err != nil {
					return fmt.Errorf("lock schema_migrations: %w", err)
				}
			}
			if _, err := tx.ExecContext(ctx, s.d.schemaMigrations); err != nil {
				return fmt.Errorf("create schema_migrations: %w", err)
			}
			v, err := currentVersion(ctx, tx)
			if err != nil {
				return err
			}
			if v > len(ms) {
				return fmt.Errorf("database schema version %d is newer than this binary's %d", v, len(ms))
			}
			if v >= m.version {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			if err := checkForeignKeys(ctx, tx); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, s.clock().UnixNano()); err != nil {
				return fmt.Errorf("record migration %s: %w", m.name, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// writeMigration is write for a migration. Where the dialect says so
// (SQLite), the transaction runs on a connection of its own whose foreign
// key enforcement is off until it ends, as SQLite's procedure for schema
// changes asks: a migration may then rebuild a table that others reference
// (create the new table, copy, drop the old, rename the new), and
// checkForeignKeys proves before the commit that no reference broke. A
// connection whose enforcement could not be turned back on is closed,
// never handed back to the pool.
func (s *sqlStore) writeMigration(ctx context.Context, fn func(tx querier) error) error {
	if s.d.foreignKeysOff == "" {
		return s.write(ctx, fn)
	}
	release, err := s.takeWriteSlot(ctx)
	if err != nil {
		return err
	}
	defer release()
	c, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect to migrate: %w", err)
	}
	defer func() { _ = c.Close() }() // back to the pool, enforcing again
	if _, err := c.ExecContext(ctx, s.d.foreignKeysOff); err != nil {
		return fmt.Errorf("turn foreign keys off to migrate: %w", err)
	}
	defer func() {
		if _, err := c.ExecContext(context.WithoutCancel(ctx), s.d.foreignKeysOn); err != nil {
			_ = c.Raw(func(any) error { return driver.ErrBadConn }) // discards the connection
		}
	}()
	return s.inTx(ctx, c, fn)
}

// checkForeignKeys fails when a row breaks a foreign key, for a dialect
// that turned enforcement off to migrate.
func checkForeignKeys(ctx context.Context, tx querier) error {
	d := tx.dialect()
	if d.foreignKeyCheck == "" {
		return nil
	}
	rows, err := tx.QueryContext(ctx, d.foreignKeyCheck)
	if err != nil {
		return fmt.Errorf("check foreign keys: %w", err)
	}
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	var (
		broken []string
		n      int
	)
	for rows.Next() {
		var (
			table, parent string
			rowid         sql.NullInt64
			fk            int
		)
		if err := rows.Scan(&table, &rowid, &parent, &fk); err != nil {
			return fmt.Errorf("check foreign keys: %w", err)
		}
		if n++; n <= 5 {
			broken = append(broken, fmt.Sprintf("%s row %d references a missing %s", table, rowid.Int64, parent))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check foreign keys: %w", err)
	}
	if n > 0 {
		return fmt.Errorf("%d rows break a foreign key: %s", n, strings.Join(broken, "; "))
	}
	return nil
}

func currentVersion(ctx context.Context, q querier) (int, error) {
	var v sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return int(v.Int64), nil
}

// Version returns the schema version recorded in the database.
func (s *sqlStore) Version(ctx context.Context) (int, error) {
	return currentVersion(ctx, s.read())
}
