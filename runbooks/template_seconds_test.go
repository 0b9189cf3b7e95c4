package runbooks_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks"
)

// TestSecondsIsKnownToLint: a runbook that uses `seconds` in a command
// lints clean, so the function is declared where templates are parsed.
func TestSecondsIsKnownToLint(t *testing.T) {
	const src = `name: wait-and-see
params:
  host: {type: host, required: true}
  wait: {type: duration, default: 1m30s}
steps:
  - id: pause
    check: command
    target: host
    with:
      cmd: 'sleep {{ .params.wait | seconds }}; echo done=yes'
      extract: {done: 'done=(\w+)'}
`
	rb, problems := runbooks.Parse("wait.yaml", []byte(src))
	require.Empty(t, problems)
	require.NotNil(t, rb)
}
