package replay

import (
	"context"
	"fmt"
	"github.com/runbot/runbot/runbooks"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/internal/yamlnode"
)

// TestFile is one runbook test file: cases that replay a recording
// against a runbook and say what it must (and must not) conclude, like
// `promtool test rules` does for alerting rules.
//
//	runbook: sglang-pd-wedge      # a runbook beside this file, else a built-in
//	tests:
//	  - name: incident-2026-06-18
//	    recording: testdata/recordings/sglang-pd-wedge/incident  # relative to this file
//	    # or, instead of recording, the observations themselves (see inlineDoc)
//	    params: {stall_after: 60s}                  # overrides the recorded params
//	    unrecorded: [engine_health]                 # steps the recording predates: taken as not run
//	    expect:
//	      diagnoses: [pd_transfer_wedge]            # exactly these held
//	      findings: [alive_not_working]             # at least these held
//	      absent_findings: [serving]                # none of these held
//	      remediation: disable_overlap_and_restart  # what the verdict proposes; none for nothing
//	      outcome: critical
type TestFile struct {
	Path    string
	Runbook string
	Cases   []TestCase
}

// TestCase is one replay and its expectations.
type TestCase struct {
	Name      string
	Pos       yamlnode.Pos
	Recording string // absolute, or relative to the working directory
	// Inline holds the observations written into the test file, when
	// the case gives them instead of a recording directory.
	Inline *Recording
	Params map[string]string
	// Unrecorded names steps the recording predates (evidence kept from a
	// real incident cannot be recorded again): they count as not run, so
	// the findings that read them are inconclusive, and their absence is
	// not a stale recording.
	Unrecorded []string
	Expect     Expectations
}

// Expectations are what a case checks; nil lists check nothing.
type Expectations struct {
	// Diagnoses is the exact set of diagnoses that must hold ([] for none).
	Diagnoses []string
	// Findings must all hold; AbsentFindings and AbsentDiagnoses must not.
	Findings        []string
	AbsentFindings  []string
	AbsentDiagnoses []string
	// Remediation is the remediation the diagnoses propose ("none" for
	// none); empty checks nothing.
	Remediation string
	// Outcome is the run's outcome (ok, critical, inconclusive); empty
	// checks nothing.
	Outcome string
	// Inconclusive must all be inconclusive (their steps did not run).
	Inconclusive []string

	pos map[string]yamlnode.Pos
}

var (
	testFileKeys = []string{"runbook", "tests"}
	testCaseKeys = []string{"name", "recording", "observations", "params", "unrecorded", "expect"}
	expectKeys   = []string{"diagnoses", "findings", "absent_findings", "absent_diagnoses", "remediation", "outcome", "inconclusive"}
)

// LoadTestFile reads a test file. Every problem is reported with
// file:line:col; the file is nil when any is an error.
func LoadTestFile(path string) (*TestFile, yamlnode.Problems, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read test file: %w", err)
	}
	d := &yamlnode.Decoder{File: path}
	tf := &TestFile{Path: path}
	root := d.Parse(data)
	if root != nil {
		var tests *yaml.Node
		d.Fields(root, "test file", testFileKeys, func(key string, _, v *yaml.Node) {
			switch key {
			case "runbook":
				tf.Runbook = d.String(v, "runbook")
			case "tests":
				tests = v
				seen := map[string]bool{}
				d.Items(v, "tests", func(i int, cv *yaml.Node) {
					c := decodeCase(d, filepath.Dir(path), i, cv)
					if seen[c.Name] {
						d.Errorf(cv, "test %q: a second test of that name", c.Name)
					}
					seen[c.Name] = true
					tf.Cases = append(tf.Cases, c)
				})
			}
		})
		if tf.Runbook == "" {
			d.Errorf(root, "test file: runbook is required")
		}
		for _, c := range tf.Cases {
			if c.Inline != nil {
				c.Inline.doc.Runbook = tf.Runbook
				c.Inline.Dir = fmt.Sprintf("%s:%d (observations of test %s)", path, c.Pos.Line, c.Name)
			}
		}
		// A file with no case would pass as "0 tests, 0 failed": it is a
		// problem, whether its tests key is misspelt (the unknown key
		// says what it was meant to be), missing, or an empty list.
		switch {
		case tests == nil:
			d.Errorf(root, "test file: tests is required (the list of test cases), and there is none")
		case len(tf.Cases) == 0 && tests.Kind == yaml.SequenceNode:
			d.Errorf(tests, "tests: at least one test is required")
		}
	}
	d.Problems.Sort()
	if d.Problems.Err() != nil {
		return nil, d.Problems, nil
	}
	return tf, d.Problems, nil
}

func decodeCase(d *yamlnode.Decoder, dir string, i int, n *yaml.Node) TestCase {
	var inline *yaml.Node
	c := TestCase{Pos: yamlnode.PosOf(n), Expect: Expectations{pos: map[string]yamlnode.Pos{}}}
	d.Fields(n, fmt.Sprintf("tests[%d]", i), testCaseKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "name":
			c.Name = d.String(v, "name")
		case "recording":
			c.Recording = d.String(v, "recording")
			if c.Recording != "" && !filepath.IsAbs(c.Recording) {
				c.Recording = filepath.Join(dir, c.Recording)
			}
		case "observations":
			inline = v
		case "params":
			c.Params = d.StringMap(v, "params")
		case "unrecorded":
			c.Unrecorded = d.Strings(v, "unrecorded")
		case "expect":
			e := &c.Expect
			d.Fields(v, "expect", expectKeys, func(key string, k, v *yaml.Node) {
				e.pos[key] = yamlnode.PosOf(k)
				switch key {
				case "diagnoses":
					e.Diagnoses = nonNil(d.Strings(v, key))
				case "findings":
					e.Findings = d.Strings(v, key)
				case "absent_findings":
					e.AbsentFindings = d.Strings(v, key)
				case "absent_diagnoses":
					e.AbsentDiagnoses = d.Strings(v, key)
				case "remediation":
					e.Remediation = d.String(v, key)
				case "outcome":
					e.Outcome = d.String(v, key)
					if !slices.Contains([]string{string(runbooks.OutcomeOK), string(runbooks.OutcomeCritical), string(runbooks.OutcomeInconclusive)}, e.Outcome) {
						d.Errorf(v, "outcome %q: want ok, critical or inconclusive", e.Outcome)
					}
				case "inconclusive":
					e.Inconclusive = d.Strings(v, key)
				}
			})
		}
	})
	if c.Name == "" {
		d.Errorf(n, "tests[%d]: name is required", i)
		c.Name = fmt.Sprintf("test-%d", i+1)
	}
	switch {
	case inline != nil && c.Recording != "":
		d.Errorf(inline, "test %s: give a recording or observations, not both", c.Name)
	case inline != nil:
		c.Inline = decodeInline(d, inline)
	case c.Recording == "":
		d.Errorf(n, "test %s: recording (a directory written by runbot run --record) or observations is required", c.Name)
	}
	if len(c.Expect.pos) == 0 {
		d.Errorf(n, "test %s: expect says nothing to check", c.Name)
	}
	return c
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// TestResult is the outcome of one case.
type TestResult struct {
	File     string        `json:"file"`
	Line     int           `json:"line"`
	Col      int           `json:"col"`
	Name     string        `json:"name"`
	Runbook  string        `json:"runbook"`
	Passed   bool          `json:"passed"`
	Duration time.Duration `json:"-"`
	// DurationMS is Duration for JSON readers.
	DurationMS int64 `json:"duration_ms"`
	// Error says why the case could not run (no recording, unknown
	// runbook); Failures why it ran and failed.
	Error    string        `json:"error,omitempty"`
	Failures []TestFailure `json:"failures,omitempty"`
	// Report is the replay's report, for the evidence.
	Report *runbooks.Report `json:"report,omitempty"`
}

// TestFailure is one expectation that did not hold.
type TestFailure struct {
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	What     string `json:"what"`
	Expected string `json:"expected"`
	Got      string `json:"got"`
}

// RunTest replays one case against rb and checks its expectations.
func RunTest(ctx context.Context, rb *runbooks.Runbook, tf *TestFile, c TestCase) (res TestResult) {
	res = TestResult{File: tf.Path, Line: c.Pos.Line, Col: c.Pos.Col, Name: c.Name, Runbook: rb.Name}
	start := time.Now()
	defer func() {
		res.Duration = time.Since(start)
		res.DurationMS = res.Duration.Milliseconds()
	}()
	rec := c.Inline
	if rec == nil {
		var err error
		if rec, err = LoadRecording(c.Recording); err != nil {
			res.Error = err.Error()
			return res
		}
	}
	if rec.Runbook() != rb.Name {
		res.Error = fmt.Sprintf("recording %s was made with runbook %s, the test file tests %s", c.Recording, rec.Runbook(), rb.Name)
		return res
	}
	if res.Failures = c.Expect.unknown(rb); len(res.Failures) > 0 {
		return res
	}
	var steps []string
	for _, s := range rb.Steps {
		steps = append(steps, s.ID)
	}
	if bad := without(c.Unrecorded, steps); len(bad) > 0 {
		res.Failures = []TestFailure{{Line: c.Pos.Line, Col: c.Pos.Col, What: "unrecorded names steps runbook " + rb.Name + " does not define",
			Expected: "one of " + list(steps), Got: list(bad)}}
		return res
	}
	rep, err := Replay(ctx, rb, rec, ReplayOptions{Params: c.Params})
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Report = rep
	res.Failures = append(replayMismatches(rep, c.Pos, c.Unrecorded), c.Expect.check(rep)...)
	for _, x := range rep.Contradictions {
		// A report that asserts and denies one fact is wrong somewhere,
		// whatever the case expects of it.
		res.Failures = append(res.Failures, TestFailure{Line: c.Pos.Line, Col: c.Pos.Col,
			What: "the report contradicts itself", Expected: "no fact both asserted and denied", Got: x.String()})
	}
	res.Passed = len(res.Failures) == 0
	return res
}

// replayMismatches reports the steps a replay could not answer from the
// recording (a command, probe, scrape or unit it does not have): the case
// then tests a runbook other than the recorded one, usually because a
// step changed since, and that, not the verdict it leads to, is what the
// author must see first.
func replayMismatches(rep *runbooks.Report, at yamlnode.Pos, unrecorded []string) []TestFailure {
	var why []string
	for _, tr := range rep.Steps {
		if !tr.Status.Ran() && strings.HasPrefix(tr.Error, "replay: ") && !slices.Contains(unrecorded, tr.Step) {
			why = append(why, tr.Error)
		}
	}
	if len(why) == 0 {
		return nil
	}
	return []TestFailure{{Line: at.Line, Col: at.Col,
		What:     "the recording does not answer the runbook's steps (re-record after changing a step)",
		Expected: "every step answered from the recording", Got: strings.Join(why, "; ")}}
}

// unknown reports expected ids the runbook does not define: a typo would
// otherwise pass as "absent" forever.
func (e Expectations) unknown(rb *runbooks.Runbook) []TestFailure {
	var findings, diagnoses []string
	for _, f := range rb.Findings {
		findings = append(findings, f.ID)
	}
	for _, d := range rb.Diagnoses {
		diagnoses = append(diagnoses, d.ID)
	}
	var out []TestFailure
	for _, k := range []struct {
		key   string
		ids   []string
		known []string
	}{
		{"diagnoses", e.Diagnoses, diagnoses}, {"absent_diagnoses", e.AbsentDiagnoses, diagnoses},
		{"findings", e.Findings, findings}, {"absent_findings", e.AbsentFindings, findings}, {"inconclusive", e.Inconclusive, findings},
	} {
		if bad := without(k.ids, k.known); len(bad) > 0 {
			p := e.pos[k.key]
			out = append(out, TestFailure{Line: p.Line, Col: p.Col, What: k.key + " names ids runbook " + rb.Name + " does not define",
				Expected: "one of " + list(k.known), Got: list(bad)})
		}
	}
	if e.Remediation != "" && e.Remediation != "none" {
		if !slices.ContainsFunc(rb.Remediations, func(r *runbooks.Remediation) bool { return r.Name == e.Remediation }) {
			p := e.pos["remediation"]
			out = append(out, TestFailure{Line: p.Line, Col: p.Col, What: "remediation names one runbook " + rb.Name + " does not define", Expected: "a remediation of the runbook", Got: e.Remediation})
		}
	}
	return out
}

func (e Expectations) check(rep *runbooks.Report) []TestFailure {
	var out []TestFailure
	fail := func(key, what, expected, got string) {
		p := e.pos[key]
		out = append(out, TestFailure{Line: p.Line, Col: p.Col, What: what, Expected: expected, Got: got})
	}
	var findings, diagnoses, inconclusive []string
	for _, f := range rep.Findings {
		findings = append(findings, f.ID)
	}
	for _, d := range rep.Diagnoses {
		diagnoses = append(diagnoses, d.ID)
	}
	for _, f := range rep.Inconclusive {
		inconclusive = append(inconclusive, f.ID)
	}
	if e.Diagnoses != nil {
		want, got := slices.Sorted(slices.Values(e.Diagnoses)), slices.Sorted(slices.Values(diagnoses))
		if !slices.Equal(want, got) {
			fail("diagnoses", "diagnoses", list(want), list(got))
		}
	}
	if missing := without(e.Findings, findings); len(missing) > 0 {
		fail("findings", "findings that must hold", list(e.Findings), list(findings)+" (missing "+list(missing)+")")
	}
	if held := within(e.AbsentFindings, findings); len(held) > 0 {
		fail("absent_findings", "findings that must not hold", "none of "+list(e.AbsentFindings), list(held))
	}
	if held := within(e.AbsentDiagnoses, diagnoses); len(held) > 0 {
		fail("absent_diagnoses", "diagnoses that must not hold", "none of "+list(e.AbsentDiagnoses), list(held))
	}
	if missing := without(e.Inconclusive, inconclusive); len(missing) > 0 {
		fail("inconclusive", "inconclusive findings", list(e.Inconclusive), list(inconclusive))
	}
	if e.Remediation != "" {
		var got []string
		for _, d := range rep.Diagnoses {
			if d.Remediation != "" {
				got = append(got, d.Remediation)
			}
		}
		g := "none"
		if len(got) > 0 {
			g = strings.Join(got, ", ")
		}
		if g != e.Remediation {
			fail("remediation", "remediation", e.Remediation, g)
		}
	}
	if e.Outcome != "" && e.Outcome != string(rep.Outcome) {
		fail("outcome", "outcome", e.Outcome, string(rep.Outcome))
	}
	return out
}

func list(s []string) string {
	if len(s) == 0 {
		return "[]"
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// without returns the items of want that are not in have.
func without(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// within returns the items of want that are in have.
func within(want, have []string) []string {
	var out []string
	for _, w := range want {
		if slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}
