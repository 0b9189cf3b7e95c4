package replay

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/internal/yamlnode"
)

// inlineDoc is a recording written into a test file: recording.yaml's
// fields plus the steps' observations, with every output and exposition
// as text in place of a file name.
//
//	observations:
//	  started: 2026-06-18T21:04:23Z
//	  steps:
//	    - step: memory
//	      target: host
//	      commands:
//	        - line: awk '…' /proc/meminfo
//	          stdout: |
//	            avail_pct=5
type inlineDoc struct {
	Params    map[string]string `yaml:"params"`
	Started   time.Time         `yaml:"started"`
	Finished  time.Time         `yaml:"finished"`
	VerdictAt time.Time         `yaml:"verdict_at"`
	Targets   []recordedTarget  `yaml:"targets"`
	Steps     []observedDoc     `yaml:"steps"`
}

// decodeInline reads inline observations (LoadTestFile names their
// runbook), reporting unknown
// keys and bad values at their positions.
func decodeInline(d *yamlnode.Decoder, n *yaml.Node) *Recording {
	before := len(d.Problems)
	checkKeys(d, n, "observations", reflect.TypeFor[inlineDoc]())
	var doc inlineDoc
	if err := n.Decode(&doc); err != nil {
		d.Errorf(n, "observations: %v", err)
	}
	if len(d.Problems) > before {
		return nil
	}
	if doc.Started.IsZero() {
		d.Errorf(n, "observations: started is required (the time the run began; every other time defaults to it)")
		return nil
	}
	if doc.Finished.IsZero() {
		doc.Finished = doc.Started
	}
	rec := &Recording{runs: map[string]*observedDoc{}, doc: recordingDoc{
		Format: RecordingFormat, Params: doc.Params, Started: doc.Started,
		Finished: doc.Finished, VerdictAt: doc.VerdictAt, Targets: doc.Targets,
	}}
	if rec.doc.Params == nil {
		rec.doc.Params = map[string]string{}
	}
	var auto []string
	for i := range doc.Steps {
		od := &doc.Steps[i]
		if od.Step == "" || od.Target == "" {
			d.Errorf(n, "observations: steps[%d]: step and target are required", i)
			continue
		}
		if od.Status == "" {
			od.Status = step.OK
		}
		if od.Started.IsZero() {
			od.Started = doc.Started
		}
		for j := range od.Commands {
			c := &od.Commands[j]
			c.stdout, c.stderr, c.Stdout, c.Stderr = []byte(c.Stdout), []byte(c.Stderr), "", ""
		}
		for j := range od.Scrapes {
			s := &od.Scrapes[j]
			s.body, s.Body = []byte(s.Body), ""
		}
		key := runKey(od.Step, od.Target)
		if rec.runs[key] != nil {
			d.Errorf(n, "observations: step %s on %s is given twice", od.Step, od.Target)
		}
		rec.runs[key] = od
		rec.order = append(rec.order, key)
		// A target the observations use but do not describe is one with
		// nothing but its role and host: enough for commands and units.
		if !slices.ContainsFunc(rec.doc.Targets, func(t recordedTarget) bool { return t.Role == od.Target }) {
			rec.doc.Targets = append(rec.doc.Targets, recordedTarget{Role: od.Target, Host: od.Host})
			auto = append(auto, od.Target)
		}
	}
	// Such a target has a service manager when the observations show a
	// unit on it.
	for i := range rec.doc.Targets {
		t := &rec.doc.Targets[i]
		if slices.Contains(auto, t.Role) && slices.ContainsFunc(doc.Steps, func(od observedDoc) bool { return od.Target == t.Role && len(od.Units) > 0 }) {
			t.ServiceManager = "inline"
		}
	}
	return rec
}

// checkKeys reports, at their positions, the keys of mapping n that t (a
// struct, through its yaml tags) does not have, descending into nested
// structs and lists of them.
func checkKeys(d *yamlnode.Decoder, n *yaml.Node, what string, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && t != reflect.TypeFor[time.Time]():
		if n.Kind != yaml.MappingNode {
			return // the value's own decoding reports the wrong kind
		}
		fields := map[string]reflect.Type{}
		var names []string
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			fields[name] = f.Type
			names = append(names, name)
		}
		d.Fields(n, what, names, func(key string, _, v *yaml.Node) {
			checkKeys(d, v, what+"."+key, fields[key])
		})
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, item := range n.Content {
			checkKeys(d, item, fmt.Sprintf("%s[%d]", what, i), t.Elem())
		}
	}
}
