package timeline

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/checks"
)

// The timeline reads the event kinds and labels the checks write; it keeps
// its own copies (layering), and this holds them in step.
func TestEventVocabularyMatchesChecks(t *testing.T) {
	require.Equal(t, checks.EventProbe, kindProbe)
	require.Equal(t, checks.EventSample, kindSample)
	require.Equal(t, checks.EventProgress, kindProgress)
	require.Equal(t, checks.EventProgressRate, kindProgressRate)
	require.Equal(t, checks.EventStall, kindStall)
	require.Equal(t, checks.EventLogMatch, kindLogMatch)
	require.Equal(t, checks.AttrEcho, Echo)
	require.Equal(t, checks.AttrUnexplained, Unexplained)
	require.Equal(t, checks.OutcomeOK, outcomeOK)
	require.Equal(t, checks.OutcomeBadStatus, outcomeBadStatus)
	require.Equal(t, checks.OutcomeTimeout, outcomeTimeout)
	require.Equal(t, checks.OutcomeRefused, outcomeRefused)
	require.Equal(t, checks.OutcomeError, outcomeError)
}
