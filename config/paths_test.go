package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/config"
)

// TestListenAddress: listen is refused at load, at its position, unless
// it is host:port with a port a listener can bind and a client be told:
// net.Listen would take a missing port or port 0 as "any port", and a
// service name only this host knows fails where serve runs.
func TestListenAddress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string // under testdata/listen
		want string // the error; "" when it loads
	}{
		{file: "out-of-range.yaml", want: `listen must be host:port with a port from 1 to 65535 or a TCP service name, got ":99999": port 99999 is out of range`},
		{file: "zero.yaml", want: `listen must be host:port with a port from 1 to 65535 or a TCP service name, got ":0": port 0 is out of range`},
		{file: "negative.yaml", want: `listen must be host:port with a port from 1 to 65535 or a TCP service name, got ":-1": port -1 is out of range`},
		{file: "unknown-service.yaml", want: `listen must be host:port with a port from 1 to 65535 or a TCP service name, got "localhost:no-such-service": port "no-such-service" is not a known TCP service on this host`},
		{file: "no-port.yaml", want: `listen must be host:port with a port from 1 to 65535 or a TCP service name, got "127.0.0.1": missing port in address`},
		{file: "empty-port.yaml", want: `listen must be host:port with a port from 1 to 65535 or a TCP service name, got "127.0.0.1:": the port is empty`},
		{file: "bare-ipv6.yaml", want: `listen must be host:port with a port from 1 to 65535 or a TCP service name, got "::1:8080": too many colons in address`},
		{file: "ipv6.yaml"},
		{file: "named.yaml"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", "listen", tc.file)
			_, err := config.Load(path)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, path+":1:9: "+tc.want)
		})
	}
}

// TestRelativePathsFromTheConfigsDirectory: the paths a config names are
// read from the config's directory, not from where runbot was started
// (systemd starts it in /); absolute paths and URLs are kept as written.
func TestRelativePathsFromTheConfigsDirectory(t *testing.T) {
	dir := t.TempDir()
	etc := filepath.Join(dir, "etc")
	require.NoError(t, os.MkdirAll(etc, 0o700))
	src := `store: state/runbot.db
inventory: inventory.yaml
runbooks: [rb, /opt/runbooks]
tls: {cert: tls/cert.pem, key: /etc/tls/key.pem}
slack:
  bot_token: {file: secrets/bot}
  signing_secret: {env: SIGNING}
  channel: C0123
`
	require.NoError(t, os.WriteFile(filepath.Join(etc, "runbot.yaml"), []byte(src), 0o600))
	elsewhere := filepath.Join(dir, "elsewhere")
	require.NoError(t, os.MkdirAll(elsewhere, 0o700))
	t.Chdir(elsewhere)

	for _, path := range []string{filepath.Join(etc, "runbot.yaml"), filepath.Join("..", "etc", "runbot.yaml")} {
		c, err := config.Load(path)
		require.NoError(t, err)
		base := filepath.Dir(path)
		require.Equal(t, filepath.Join(base, "state/runbot.db"), c.Store)
		require.Equal(t, filepath.Join(base, "state/runbot.db"), c.SQLitePath())
		require.Equal(t, filepath.Join(base, "inventory.yaml"), c.Inventory)
		require.Equal(t, []string{filepath.Join(base, "rb"), "/opt/runbooks"}, c.Runbooks)
		require.Equal(t, &config.TLS{Cert: filepath.Join(base, "tls/cert.pem"), Key: "/etc/tls/key.pem"}, c.TLS)
		require.Equal(t, filepath.Join(base, "secrets/bot"), c.Slack.BotToken.File)
		abs, err := filepath.Abs(c.Inventory)
		require.NoError(t, err)
		require.Equal(t, filepath.Join(etc, "inventory.yaml"), abs, "from the working directory, the path leads to the config's directory")
	}
}

// TestSQLiteStoreFromTheConfigsDirectory: a SQLite store written relative to the config is
// resolved whichever way it is written; other locations are kept.
func TestSQLiteStoreFromTheConfigsDirectory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ store, want, sqlite string }{
		{store: "runbot.db", want: "/etc/runbot/runbot.db", sqlite: "/etc/runbot/runbot.db"},
		{store: "sqlite:state/runbot.db", want: "sqlite:/etc/runbot/state/runbot.db", sqlite: "/etc/runbot/state/runbot.db"},
		{store: "sqlite:///var/lib/runbot/runbot.db", want: "sqlite:///var/lib/runbot/runbot.db", sqlite: "/var/lib/runbot/runbot.db"},
		{store: "/var/lib/runbot/runbot.db", want: "/var/lib/runbot/runbot.db", sqlite: "/var/lib/runbot/runbot.db"},
		{store: "postgres://runbot@db/runbot", want: "postgres://runbot@db/runbot"},
	} {
		t.Run(tc.store, func(t *testing.T) {
			t.Parallel()
			c, err := config.Parse("/etc/runbot/runbot.yaml", []byte("store: "+tc.store+"\n"))
			require.NoError(t, err)
			require.Equal(t, tc.want, c.Store)
			require.Equal(t, tc.sqlite, c.SQLitePath())
		})
	}
}
