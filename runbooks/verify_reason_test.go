package runbooks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// A fix that does not verify says which part of verification failed and
// with what evidence, in the apply result and in its one-line message
// (which the CLI, Slack, show and the report page print): the diagnosis
// that still holds, a critical finding that still holds, or a verify_when
// that is false.
func TestFailedVerificationNamesWhatFailed(t *testing.T) {
	t.Parallel()
	remedy, err := os.ReadFile("testdata/valid/remedy.yaml")
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		app, edit, want string
	}{
		"diagnosis": {app: "app-hopeless.sh", want: "diagnosis app_broken still holds: the app runs without --safe-mode; finding broken still holds: the app reports broken ([health@app] `cat "},
		"critical finding": {app: "app-fixable.sh", edit: `findings:
  - id: running_flags
    severity: critical
    when: steps.health.stdout == "ok\n"
    summary: the app came back in safe mode only
    evidence: [health]
  - id: broken`,
			want: "critical finding running_flags still holds: the app came back in safe mode only ([health@app] `cat "},
		"verify_when": {app: "app-fixable.sh", edit: "    rollback: on_failed_verify\n    verify_when: steps.health.stdout == \"perfect\\n\"",
			want: `verify_when "steps.health.stdout == \"perfect\\n\"" is false`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			text := string(remedy)
			switch {
			case strings.HasPrefix(tc.edit, "findings:"):
				text = strings.Replace(text, "findings:\n  - id: broken", tc.edit, 1)
			case tc.edit != "":
				text = strings.Replace(text, "    rollback: on_failed_verify", tc.edit, 1)
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, "remedy.yaml"), []byte(text), 0o600))
			e := newRemedyFrom(t, tc.app, dir)
			prop := e.propose(t)
			e.approve(t, prop, "bob")
			res, err := e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil)
			require.NoError(t, err)
			require.False(t, res.Recovered)
			require.Equal(t, store.PlanRolledBack, res.State)
			// The finding's first evidence line follows its summary.
			require.True(t, strings.HasPrefix(res.Unverified, tc.want), res.Unverified)
			require.Contains(t, res.Message, "verification failed: the symptom is still there: "+tc.want)
		})
	}
}

// A partial fix verifies when what is left is not critical, and its
// outcome names what is left: the warnings that still hold, with their
// evidence, so "verified" does not read as "nothing is left".
func TestVerifiedFixNamesTheWarningsLeft(t *testing.T) {
	t.Parallel()
	remedy, err := os.ReadFile("testdata/valid/remedy.yaml")
	require.NoError(t, err)
	text := strings.Replace(string(remedy), "findings:\n  - id: broken", `findings:
  - id: safe_mode_only
    severity: warning
    when: steps.health.stdout == "ok\n"
    summary: the app came back in safe mode only
    evidence: [health]
  - id: broken`, 1)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "remedy.yaml"), []byte(text), 0o600))
	e := newRemedyFrom(t, "app-fixable.sh", dir)
	prop := e.propose(t)
	e.approve(t, prop, "bob")
	res, err := e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil)
	require.NoError(t, err)
	require.True(t, res.Recovered, res.Message)
	require.Equal(t, store.PlanDone, res.State)
	require.True(t, strings.HasPrefix(res.Message,
		"verified: the symptom is gone; warning finding safe_mode_only still holds: the app came back in safe mode only ([health@app] `cat "), res.Message)
}
