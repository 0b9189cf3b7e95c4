package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/runbot/runbot/internal/redact"
)

// shrinkReport cuts a stored report's JSON down to what the run page
// shows, before it is redacted and decoded: the evidence of each finding
// and the evidence and events of each step run keep their first and last
// listKeep entries when they have more than listMax; so do the arrays
// among a step's values, with a string in place of what was left out, as
// they are shown as JSON; and every text is cut as trimText cuts it. It
// works on the encoded text, copying what it keeps, so that the entries
// left out are never decoded, redacted or held: for a run whose step
// logged 100,000 lines those were most of the memory its page took. The
// report is the store's, written by encoding/json; shrinkReport returns an
// error for text that is not JSON.
func shrinkReport(raw []byte, r *redact.Redactor) ([]byte, cuts, error) {
	s := &shrinker{raw: raw, r: r,
		cuts: cuts{findings: map[int]cut{}, evidence: map[int]cut{}, events: map[int]cut{}}}
	i, err := s.value(s.ws(0))
	if err == nil && s.ws(i) != len(raw) {
		err = fmt.Errorf("text after the report at offset %d", i)
	}
	if err != nil {
		return nil, cuts{}, fmt.Errorf("shrink report: %w", err)
	}
	if !s.changed {
		return raw, s.cuts, nil
	}
	return s.out, s.cuts, nil
}

// shrinker is the state of one shrinkReport.
type shrinker struct {
	raw []byte
	// out is the shrunk report once changed is set; until then, what is
	// kept is raw as it is, and nothing is copied: most reports are
	// kept whole.
	out     []byte
	changed bool
	r       *redact.Redactor
	cuts    cuts
	// path is where the value being copied is: object keys and array
	// indexes from the report's top.
	path []pathStep
}

type pathStep struct {
	key   string
	index int
}

// emit copies kept text to out, once the report has changed.
func (s *shrinker) emit(b ...byte) {
	if s.changed {
		s.out = append(s.out, b...)
	}
}

// change starts out when the first change to the report is made at
// offset i of raw: until there, raw is kept as it is (white space and
// all, which is still the same JSON).
func (s *shrinker) change(i int) {
	if !s.changed {
		s.changed = true
		s.out = append(make([]byte, 0, min(len(s.raw), 4<<20)), s.raw[:i]...)
	}
}

// ws skips white space from i.
func (s *shrinker) ws(i int) int {
	for i < len(s.raw) && (s.raw[i] == ' ' || s.raw[i] == '\t' || s.raw[i] == '\n' || s.raw[i] == '\r') {
		i++
	}
	return i
}

// value copies the value at i to out, cut, and returns where it ends.
func (s *shrinker) value(i int) (int, error) {
	if i >= len(s.raw) {
		return i, fmt.Errorf("unexpected end at offset %d", i)
	}
	switch s.raw[i] {
	case '{':
		return s.object(i)
	case '[':
		return s.array(i)
	case '"':
		end, err := s.stringEnd(i)
		if err != nil {
			return end, err
		}
		return end, s.text(i, end)
	}
	end := s.skip(i)
	if end == i {
		return i, fmt.Errorf("unexpected %q at offset %d", s.raw[i], i)
	}
	s.emit(s.raw[i:end]...)
	return end, nil
}

func (s *shrinker) object(i int) (int, error) {
	s.emit('{')
	i = s.ws(i + 1)
	if i < len(s.raw) && s.raw[i] == '}' {
		s.emit('}')
		return i + 1, nil
	}
	for {
		end, err := s.stringEnd(i)
		if err != nil {
			return end, err
		}
		// Keys are the report's field names and the values' names: short,
		// and not worth unquoting unless escaped.
		key := string(s.raw[i+1 : end-1])
		s.emit(s.raw[i:end]...)
		i = s.ws(end)
		if i >= len(s.raw) || s.raw[i] != ':' {
			return i, fmt.Errorf("want a colon at offset %d", i)
		}
		s.emit(':')
		s.path = append(s.path, pathStep{key: key, index: -1})
		i, err = s.value(s.ws(i + 1))
		s.path = s.path[:len(s.path)-1]
		if err != nil {
			return i, err
		}
		i = s.ws(i)
		if i < len(s.raw) && s.raw[i] == ',' {
			s.emit(',')
			i = s.ws(i + 1)
			continue
		}
		if i < len(s.raw) && s.raw[i] == '}' {
			s.emit('}')
			return i + 1, nil
		}
		return i, fmt.Errorf("want a comma or } at offset %d", i)
	}
}

func (s *shrinker) array(i int) (int, error) {
	// Where each element starts, to count them before copying any.
	var starts []int
	j := s.ws(i + 1)
	if j < len(s.raw) && s.raw[j] == ']' {
		s.emit('[', ']')
		return j + 1, nil
	}
	for {
		starts = append(starts, j)
		end := s.skip(j)
		if end == j {
			return j, fmt.Errorf("unexpected %q at offset %d", s.raw[min(j, len(s.raw)-1)], j)
		}
		j = s.ws(end)
		if j < len(s.raw) && s.raw[j] == ',' {
			j = s.ws(j + 1)
			continue
		}
		if j < len(s.raw) && s.raw[j] == ']' {
			break
		}
		return j, fmt.Errorf("want a comma or ] at offset %d", j)
	}
	keep := func(int) bool { return true }
	kind, at := s.list()
	n := len(starts)
	if kind != listWhole && n > listMax {
		s.change(i)
		keep = func(k int) bool { return k < listKeep || k >= n-listKeep }
		c := cut{At: listKeep, Omitted: n - 2*listKeep}
		switch kind {
		case listFindingEvidence:
			s.cuts.findings[at] = c
		case listStepEvidence:
			s.cuts.evidence[at] = c
		case listStepEvents:
			s.cuts.events[at] = c
		}
	}
	s.emit('[')
	first := true
	for k, start := range starts {
		if !keep(k) {
			if k == listKeep && kind == listValues {
				// Shown as JSON: the cut is marked in the array.
				s.emit(strconv.AppendQuote([]byte{','}, fmt.Sprintf("[… %d items left out here …]", n-2*listKeep))...)
			}
			continue
		}
		if !first {
			s.emit(',')
		}
		first = false
		s.path = append(s.path, pathStep{index: k})
		_, err := s.value(start)
		s.path = s.path[:len(s.path)-1]
		if err != nil {
			return start, err
		}
	}
	s.emit(']')
	return j + 1, nil
}

// listKind is which of a report's lists an array is, for how it is cut.
type listKind int

const (
	// listWhole is any other array: it is copied whole.
	listWhole listKind = iota
	listFindingEvidence
	listStepEvidence
	listStepEvents
	listValues
	// listUnshown is an inconclusive finding's evidence, which the page
	// does not show.
	listUnshown
)

// list says which list the array at s.path is, and the index of its
// finding or step run.
func (s *shrinker) list() (listKind, int) {
	p := s.path
	if len(p) < 3 || p[0].index >= 0 || p[1].index < 0 {
		return listWhole, 0
	}
	switch top, at := p[0].key, p[1].index; {
	case top == "steps" && p[2].key == "values":
		return listValues, at
	case len(p) != 3:
		return listWhole, 0
	case top == "findings" && p[2].key == "evidence":
		return listFindingEvidence, at
	case top == "steps" && p[2].key == "evidence":
		return listStepEvidence, at
	case top == "steps" && p[2].key == "events":
		return listStepEvents, at
	case top == "inconclusive" && p[2].key == "evidence":
		return listUnshown, at
	}
	return listWhole, 0
}

// text copies a JSON string, cut by trimText when it is long. Only a
// string of more than textMaxBytes, or with enough escaped newlines for
// more than textMaxLines lines, is decoded.
func (s *shrinker) text(i, end int) error {
	quoted := s.raw[i:end]
	// An escaped newline is two bytes; the count is of a backslash and
	// an n, which may be more than the newlines, never fewer.
	if len(quoted) <= textMaxBytes && bytes.Count(quoted, []byte(`\n`)) < textMaxLines {
		s.emit(quoted...)
		return nil
	}
	var t string
	if err := json.Unmarshal(quoted, &t); err != nil {
		return err
	}
	cutText := trimText(t, s.r)
	if cutText == t {
		s.emit(quoted...)
		return nil
	}
	enc, err := json.Marshal(cutText)
	if err != nil {
		return err
	}
	s.change(i)
	s.emit(enc...)
	return nil
}

// stringEnd returns the end of the JSON string that starts at i, just
// after its closing quote.
func (s *shrinker) stringEnd(i int) (int, error) {
	if i >= len(s.raw) || s.raw[i] != '"' {
		return i, fmt.Errorf("want a string at offset %d", i)
	}
	for j := i + 1; j < len(s.raw); j++ {
		switch s.raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return len(s.raw), fmt.Errorf("unterminated string at offset %d", i)
}

// skip returns the end of the value at i without copying it; i when
// there is no value there.
func (s *shrinker) skip(i int) int {
	if i >= len(s.raw) {
		return i
	}
	switch s.raw[i] {
	case '"':
		end, err := s.stringEnd(i)
		if err != nil {
			return i
		}
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(s.raw); j++ {
			switch s.raw[j] {
			case '"':
				end, err := s.stringEnd(j)
				if err != nil {
					return i
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return i
	}
	j := i
	for j < len(s.raw) {
		switch s.raw[j] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}
