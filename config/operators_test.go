package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/config"
)

const operatorsBase = "store: /var/lib/runbot/runbot.db\n"

// operators: maps OS users to the identities approval policies name, and
// Operator answers for a mapped user only.
func TestOperators(t *testing.T) {
	t.Parallel()
	c, err := config.Parse("runbot.yaml", []byte(operatorsBase+`operators:
  alice: U01ALICE
  bob.smith: U02BOB
  svc_ops-1: ops-bot
`))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"alice": "U01ALICE", "bob.smith": "U02BOB", "svc_ops-1": "ops-bot"}, c.Operators)
	id, err := c.Operator("alice")
	require.NoError(t, err)
	require.Equal(t, "U01ALICE", id)

	_, err = c.Operator("mallory")
	var unknown *config.UnknownOperatorError
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, `runbot.yaml:3:3: operators: has no entry for OS user "mallory", so it may not vote from the CLI; add "mallory" mapped to the identity approval policies name (mallory: U01ALICE)`, err.Error())

	c, err = config.Parse("runbot.yaml", []byte(operatorsBase))
	require.NoError(t, err)
	require.Empty(t, c.Operators)
	_, err = c.Operator("alice")
	require.ErrorAs(t, err, &unknown, "no operators: maps nobody")
	require.Equal(t, `runbot.yaml: no operators: mapping, so OS user "alice" may not vote from the CLI; add one mapping it to the identity approval policies name (operators: {alice: U01ALICE})`, err.Error())
}

// Every mistake in operators: is reported at its file:line:col.
func TestOperatorsErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, yaml string
		want       string
	}{
		{"not a mapping", "operators: [alice]", "runbot.yaml:2:12: operators must be a mapping, got a list"},
		{"a list as identity", "operators:\n  alice: [U01ALICE]", "runbot.yaml:3:10: operators.alice must be a string, got a list"},
		{"no identity", "operators:\n  alice:", "runbot.yaml:3:9: operators.alice must be a string, got nothing"},
		{"empty identity", "operators:\n  alice: ''", "runbot.yaml:3:10: operators.alice: give the identity approval policies name alice by, such as a Slack user id U01ALICE"},
		{"a group", "operators:\n  alice: '@sre-oncall'", `runbot.yaml:3:10: operators.alice: "@sre-oncall" names a group; map an OS user to one person's identity`},
		{"a group: reference", "operators:\n  alice: group:sre", `runbot.yaml:3:10: operators.alice: "group:sre" names a group`},
		{"two words", "operators:\n  alice: Alice Smith", `runbot.yaml:3:10: operators.alice: "Alice Smith" has a space in it`},
		{"not a login", "operators:\n  -alice: U01ALICE", `runbot.yaml:3:3: operators: "-alice" is not an OS user name`},
		{"a login with a slash", "operators:\n  ../root: U01ALICE", `runbot.yaml:3:3: operators: "../root" is not an OS user name`},
		{"twice", "operators:\n  alice: U01ALICE\n  alice: U09MALLORY", `runbot.yaml:4:3: operators: key "alice" appears twice`},
		{"misspelt key", "operatrs:\n  alice: U01ALICE", `runbot.yaml:2:1: config: unknown key "operatrs" (did you mean "operators"?)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Parse("runbot.yaml", []byte(operatorsBase+tc.yaml+"\n"))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
