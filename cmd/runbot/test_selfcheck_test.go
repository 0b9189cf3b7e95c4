package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunbotTestChecksTheReportItself: a case fails on a report that
// contradicts itself even when every expectation holds, and a case whose
// runbook runs a command its recording does not have says that first, at
// the case, before the verdict it leads to.
func TestRunbotTestChecksTheReportItself(t *testing.T) {
	runbot, _ := buildBinaries(t)
	out, stderr, code := runRunbot(t, runbot, "test", "testdata/selfcheck/")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, out, "--- FAIL: contra/loaded")
	require.Contains(t, out, "contra_test.yaml:4:5: the report contradicts itself\n"+
		"        expected: no fact both asserted and denied\n"+
		"        got:      finding up asserts app.serving, finding loaded denies it\n")
	require.Contains(t, out, "--- FAIL: contra/changed-command")
	require.Contains(t, out, "contra_test.yaml:15:5: the recording does not answer the runbook's steps (re-record after changing a step)\n"+
		"        expected: every step answered from the recording\n"+
		"        got:      replay: step probe on host runs a command the recording does not have: cat /run/app.state (recorded: cat /run/app.status)\n"+
		"    testdata/selfcheck/contra_test.yaml:24:7: diagnoses")
}
