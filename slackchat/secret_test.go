package slackchat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/runbot/runbot/internal/secret"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSecretRefLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(file, []byte("xoxb-from-file\n"), 0o600))
	s, err := SecretRef{File: file}.Load()
	require.NoError(t, err)
	require.Equal(t, "xoxb-from-file", s.Reveal())

	t.Setenv("RUNBOT_TEST_TOKEN", "xoxb-from-env")
	s, err = SecretRef{Env: "RUNBOT_TEST_TOKEN"}.Load()
	require.NoError(t, err)
	require.Equal(t, "xoxb-from-env", s.Reveal())

	_, err = SecretRef{Env: "RUNBOT_TEST_UNSET_VARIABLE"}.Load()
	require.ErrorContains(t, err, "RUNBOT_TEST_UNSET_VARIABLE is not set")
	_, err = SecretRef{File: filepath.Join(dir, "missing")}.Load()
	require.ErrorContains(t, err, "missing")
	_, err = SecretRef{Env: "A", File: file}.Load()
	require.ErrorContains(t, err, "not both")
	_, err = SecretRef{}.Load()
	require.Error(t, err)
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	_, err = SecretRef{File: empty}.Load()
	require.ErrorContains(t, err, "is empty")
}

func TestSecretNeverPrints(t *testing.T) {
	t.Parallel()
	s := secret.New("xoxb-very-secret")
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("loaded", "token", s, "struct", struct{ T Secret }{s})
	j, err := json.Marshal(struct{ T Secret }{s})
	require.NoError(t, err)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s), logs.String(), string(j)} {
		require.NotContains(t, out, "very-secret")
		require.Contains(t, out, "redacted")
	}
}

func TestConfigNeedsTheRightSecrets(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Transport: TransportHTTP, BotToken: SecretRef{Env: "X"}}, nil, nil)
	require.ErrorContains(t, err, "signing_secret")
	_, err = New(Config{Transport: TransportSocket, BotToken: SecretRef{Env: "X"}}, nil, nil)
	require.ErrorContains(t, err, "app_token")
	_, err = New(Config{Transport: "pigeon"}, nil, nil)
	require.ErrorContains(t, err, `transport "pigeon"`)
}
