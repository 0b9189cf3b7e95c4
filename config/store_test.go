package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/config"
)

// store: is a SQLite path or URL, a PostgreSQL URL without a password, or a
// secret reference to a DSN; StoreLocation is what to open in each case.
func TestStoreLocations(t *testing.T) {
	t.Setenv("RUNBOT_STORE_DSN", "postgres://runbot:s3cret@db.internal/runbot")
	for _, tc := range []struct {
		yaml, want string
	}{
		{"/var/lib/runbot/runbot.db", "/var/lib/runbot/runbot.db"},
		{"sqlite:///var/lib/runbot/runbot.db", "sqlite:///var/lib/runbot/runbot.db"},
		{"postgres://runbot@db.internal/runbot?sslmode=verify-full", "postgres://runbot@db.internal/runbot?sslmode=verify-full"},
		{"{env: RUNBOT_STORE_DSN}", "postgres://runbot:s3cret@db.internal/runbot"},
	} {
		t.Run(tc.yaml, func(t *testing.T) {
			c, err := config.Parse("runbot.yaml", []byte("store: "+tc.yaml+"\n"))
			require.NoError(t, err)
			loc, err := c.StoreLocation()
			require.NoError(t, err)
			require.Equal(t, tc.want, loc.Reveal())
			require.NotContains(t, fmt.Sprintf("%v %+v %s", c, c, loc), "s3cret", "the DSN never prints")
		})
	}
}

// A DSN behind a file reference is read from the file.
func TestStoreDSNFromFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "store-dsn")
	require.NoError(t, os.WriteFile(file, []byte("postgres://runbot:s3cret@db.internal/runbot\n"), 0o600))
	c, err := config.Parse("runbot.yaml", []byte("store: {file: "+file+"}\n"))
	require.NoError(t, err)
	require.Empty(t, c.Store)
	loc, err := c.StoreLocation()
	require.NoError(t, err)
	require.Equal(t, "postgres://runbot:s3cret@db.internal/runbot", loc.Reveal())

	c, err = config.Parse("runbot.yaml", []byte("store: {file: "+file+".missing}\n"))
	require.NoError(t, err)
	_, err = c.StoreLocation()
	require.ErrorContains(t, err, "load the store DSN")
}

// A store: that cannot be used is reported at its position, and a password
// written into the file is never echoed.
func TestStoreRefusesBadLocations(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{`""`, "runbot.yaml:1:8: store must not be empty"},
		{"postgres://runbot:s3cret@db.internal/runbot", "runbot.yaml:1:8: store: this PostgreSQL URL holds a password; give the URL as a reference such as {env: NAME} or {file: /path}, never the secret itself"},
		{"postgres://db.internal/runbot?password=s3cret", "runbot.yaml:1:8: store: this PostgreSQL URL holds a password"},
		{"postgres://runbot:s3cret@db:port/runbot", "runbot.yaml:1:8: store: not a valid PostgreSQL URL"},
		{"mysql://runbot:s3cret@db/runbot", `runbot.yaml:1:8: store: unknown scheme "mysql"`},
		{"{env: A, file: /b}", "runbot.yaml:1:8: store: give env or file, not both"},
		{"{path: /b}", `unknown key "path"`},
	} {
		t.Run(tc.yaml, func(t *testing.T) {
			_, err := config.Parse("runbot.yaml", []byte("store: "+tc.yaml+"\n"))
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "s3cret")
		})
	}
	_, err := config.Parse("runbot.yaml", []byte("listen: 127.0.0.1:8080\n"))
	require.ErrorContains(t, err, "config: store is required")
}
