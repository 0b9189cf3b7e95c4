package store_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// store.TriggerKinds is the one list of trigger kinds; the schema's CHECKs
// on trigger_type are only a safety net and must say the same, or a kind
// added to the list would be refused by the database.
func TestTriggerCheckConstraintsMatchTriggerKinds(t *testing.T) {
	s, _ := openTest(t)
	var want []string
	for _, k := range store.TriggerKinds() {
		want = append(want, string(k))
	}
	check := regexp.MustCompile(`CHECK \(trigger_type IN \(([^)]*)\)\)`)
	for _, table := range []string{"runs", "work"} {
		var ddl string
		require.NoError(t, s.DB().QueryRowContext(testCtx(t), `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&ddl))
		m := check.FindStringSubmatch(ddl)
		require.NotNil(t, m, "%s has no CHECK on trigger_type:\n%s", table, ddl)
		var got []string
		for _, quoted := range strings.Split(m[1], ",") {
			got = append(got, strings.Trim(strings.TrimSpace(quoted), "'"))
		}
		require.ElementsMatch(t, want, got, "the CHECK on %s.trigger_type differs from store.TriggerKinds", table)
	}
}

func TestTriggerValid(t *testing.T) {
	for _, k := range store.TriggerKinds() {
		require.True(t, k.Valid(), k)
	}
	for _, k := range []store.Trigger{"", "pager", "Slack"} {
		require.False(t, k.Valid(), k)
	}
	kinds := store.TriggerKinds()
	kinds[0] = "pager"
	require.False(t, store.Trigger("pager").Valid(), "TriggerKinds returns a copy")
}
