package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// newID makes a sortable, human-typable record ID such as
// "r-20261129-083012-ab12cd": a kind letter, the UTC creation time to the
// second, and 24 random bits, so IDs sort by creation time and rarely
// collide (an insert retries on the rare collision).
func newID(kind string, t time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return kind + "-" + t.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// newToken makes an unguessable lock token.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checkID refuses IDs that would not survive a Slack button value or a
// command line, and keeps prefix lookups simple.
func checkID(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("invalid id %q", id)
	}
	for _, r := range id {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && !strings.ContainsRune("-_.:", r) {
			return fmt.Errorf("invalid id %q: only letters, digits and -_.: are allowed", id)
		}
	}
	return nil
}

// isUniqueViolation reports whether err is a primary key or unique
// constraint failure, which for a generated ID means "try another".
func isUniqueViolation(err error) bool {
	// SQLITE_CONSTRAINT_PRIMARYKEY and SQLITE_CONSTRAINT_UNIQUE.
	const primaryKey, unique = 1555, 2067
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		return coded.Code() == primaryKey || coded.Code() == unique
	}
	// PostgreSQL's unique_violation.
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}
