package runbooks_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/actions"
	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
)

// answer is a plug-in check type: it answers 42 without touching the
// target.
type answer struct{}

type answerOutputs struct {
	Value int `expr:"value" json:"value" doc:"the answer"`
}

func (answer) Plan(checks.Env) []string { return []string{"answer 42"} }

func (answer) Run(context.Context, checks.Env) (step.Result, error) {
	return step.Result{Values: answerOutputs{Value: 42}, Evidence: []string{"the answer is 42"}}, nil
}

const answerRunbook = `name: plug-in
title: A check from a plug-in registry
params:
  host: {type: host, default: here}
steps:
  - id: ask
    check: answer
    target: host
findings:
  - id: answered
    severity: info
    when: steps.ask.value == 42
    summary: The plug-in answered.
    evidence: [ask]
diagnoses:
  - id: fine
    severity: info
    when: findings.answered
    summary: The plug-in's check ran.
`

// A check type registered in a registry of one's own is known to the
// runbooks parsed with it, and runs; the default registry and the runbooks
// parsed without it never see it.
func TestPlugInVocabulary(t *testing.T) {
	t.Parallel()
	own := checks.NewRegistry(nil)
	require.NoError(t, own.Register("answer", checks.Type{
		Spec:  argspec.Spec{Name: "answer", Doc: "Answers 42.", Outputs: reflect.TypeFor[answerOutputs]()},
		Check: answer{},
	}))

	_, problems := runbooks.Parse("plug-in.yaml", []byte(answerRunbook))
	require.ErrorContains(t, problems.Err(), `unknown check "answer"`, "the default vocabulary does not know it")
	_, known := checks.Default.Lookup("answer")
	require.False(t, known)

	rb, problems := runbooks.ParseWith("plug-in.yaml", []byte(answerRunbook), runbooks.Vocabulary{Checks: own, Actions: actions.NewRegistry(nil)})
	require.NoError(t, problems.Err())
	e := localEngine(t)
	p, err := e.Prepare(t.Context(), rb, nil)
	require.NoError(t, err)
	rep := e.Run(t.Context(), p, engine.RunOptions{})
	require.Equal(t, step.OK, rep.Steps[0].Status, rep.Steps[0].Error)
	require.Len(t, rep.Diagnoses, 1)
	require.Equal(t, "fine", rep.Diagnoses[0].ID)
	require.Equal(t, []string{"answer 42"}, e.Explain(p)[0].Lines)
}
