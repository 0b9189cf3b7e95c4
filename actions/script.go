package actions

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/runbot/runbot/internal/shell"
)

// scriptEdit says how config_edit changes a file: which flags the launch
// command must and must not have, which exports and which plain lines.
type scriptEdit struct {
	EnsureFlags   []flagArg
	RemoveFlags   []string
	EnsureExports []assignment
	RemoveExports []assignment
	EnsureLines   []string
	RemoveLines   []string
	// AfterFlag names the flag after which new flags go; empty means at the
	// end of the command.
	AfterFlag string
	// Command picks the command to edit; nil means the one with the most
	// "--" flags.
	Command *regexp.Regexp
}

// flagArg is one wanted flag, e.g. "--disable-overlap-schedule" or
// "--mem-fraction-static 0.8" or "--log-level=info".
type flagArg struct {
	Name  string
	Value string
	// HasValue says a value was given; Equals says it was written
	// "--name=value", which is how a new flag is then written too.
	HasValue bool
	Equals   bool
}

// parseFlagArg reads a flag as it would be written on a command line. Its
// value is unquoted the shell's way, so "--name 'a b'" means the value a b.
func parseFlagArg(s string) (flagArg, error) {
	ws := scanLine(strings.TrimSpace(s)).words
	if len(ws) == 0 || len(ws) > 2 || !strings.HasPrefix(ws[0].val, "-") || ws[0].op || (len(ws) == 2 && ws[1].op) {
		return flagArg{}, fmt.Errorf("flag %q: want -NAME, -NAME VALUE or -NAME=VALUE", s)
	}
	f := flagArg{Name: ws[0].val}
	if name, val, ok := strings.Cut(ws[0].val, "="); ok {
		if len(ws) == 2 {
			return flagArg{}, fmt.Errorf("flag %q: give the value after = or after a space, not both", s)
		}
		f = flagArg{Name: name, Value: val, HasValue: true, Equals: true}
	} else if len(ws) == 2 {
		f.Value, f.HasValue = ws[1].val, true
	}
	if f.Name == "-" || f.Name == "--" {
		return flagArg{}, fmt.Errorf("flag %q: no name", s)
	}
	return f, nil
}

// text renders the flag for the script.
func (f flagArg) text() string {
	switch {
	case !f.HasValue:
		return f.Name
	case f.Equals:
		return f.Name + "=" + shell.Quote(f.Value)
	}
	return f.Name + " " + shell.Quote(f.Value)
}

// assignment is KEY=VALUE of an export; Value may be absent for removals.
type assignment struct {
	Key, Value string
	HasValue   bool
}

var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func parseAssignment(s string, needValue bool) (assignment, error) {
	k, v, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !envKey.MatchString(k) || (needValue && !ok) {
		if needValue {
			return assignment{}, fmt.Errorf("export %q: want KEY=VALUE", s)
		}
		return assignment{}, fmt.Errorf("export %q: want KEY or KEY=VALUE", s)
	}
	return assignment{Key: k, Value: v, HasValue: ok}, nil
}

// errNoCommand means the file has no command to put a flag into.
var errNoCommand = errors.New("no command line with -- flags found")

// script is the text of a file being edited, as lines. The last element is
// empty when the file ends with a newline, so joining with "\n" gives the
// file back byte for byte.
type script struct {
	lines  []string
	parsed []scriptLine
}

func newScript(content string) *script {
	s := &script{lines: strings.Split(content, "\n")}
	s.reparse()
	return s
}

func (s *script) String() string { return strings.Join(s.lines, "\n") }

func (s *script) reparse() {
	s.parsed = make([]scriptLine, len(s.lines))
	for i, l := range s.lines {
		s.parsed[i] = scanLine(l)
	}
}

func (s *script) insertLine(at int, text string) {
	s.lines = slices.Insert(s.lines, at, text)
	s.reparse()
}

func (s *script) deleteLines(from, to int) {
	s.lines = slices.Delete(s.lines, from, to+1)
	s.reparse()
}

func (s *script) setLine(i int, text string) {
	s.lines[i] = text
	s.parsed[i] = scanLine(text)
}

// span is a logical line: physical lines first..last joined by
// continuation backslashes.
type span struct{ first, last int }

func (c span) multiline() bool { return c.last > c.first }

func (s *script) statements() []span {
	var out []span
	for i := 0; i < len(s.lines); i++ {
		c := span{first: i, last: i}
		for c.last+1 < len(s.lines) && s.parsed[c.last].cont {
			c.last++
		}
		out = append(out, c)
		i = c.last
	}
	return out
}

func (s *script) text(c span) string { return strings.Join(s.lines[c.first:c.last+1], "\n") }

// ref names one word: its line and index in that line.
type ref struct{ line, word int }

func (s *script) word(r ref) word { return s.parsed[r.line].words[r.word] }

func (s *script) raw(r ref) string {
	w := s.word(r)
	return s.lines[r.line][w.start:w.end]
}

// args lists the words of a statement up to its first control operator,
// leaving out redirections: what the command itself receives.
func (s *script) args(c span) []ref {
	var out []ref
	for l := c.first; l <= c.last; l++ {
		for i, w := range s.parsed[l].words {
			if w.control {
				return out
			}
			if !w.op {
				out = append(out, ref{l, i})
			}
		}
	}
	return out
}

func (s *script) countFlags(c span) int {
	n := 0
	for _, r := range s.args(c) {
		if v := s.word(r).val; strings.HasPrefix(v, "--") && len(v) > 2 {
			n++
		}
	}
	return n
}

// command finds the statement whose flags are edited: the first one
// matching pattern, or else the one with the most "--" flags.
func (s *script) command(pattern *regexp.Regexp) (span, error) {
	best, bestN := span{}, 0
	for _, c := range s.statements() {
		if pattern != nil {
			if len(s.parsed[c.first].words) > 0 && pattern.MatchString(s.text(c)) {
				return c, nil
			}
			continue
		}
		if n := s.countFlags(c); n > bestN {
			best, bestN = c, n
		}
	}
	if pattern != nil {
		return span{}, fmt.Errorf("no command line matches command_pattern %q", pattern)
	}
	if bestN == 0 {
		return span{}, errNoCommand
	}
	return best, nil
}

// occurrence is one appearance of a flag in the command.
type occurrence struct {
	flag ref
	// value is the separate value word, or line -1 when the flag has none
	// or carries it after '='.
	value  ref
	equals bool
}

func (o occurrence) end() ref {
	if o.value.line >= 0 {
		return o.value
	}
	return o.flag
}

// findFlag lists where the command has the flag. A flag's separate value
// is the next word on the same line unless that word is itself a flag, so
// "--enable-metrics" followed by "--log-level" has none.
func (s *script) findFlag(c span, name string) []occurrence {
	args := s.args(c)
	var out []occurrence
	for i, r := range args {
		v := s.word(r).val
		o := occurrence{flag: r, value: ref{line: -1}}
		switch {
		case v == name:
			if i+1 < len(args) && args[i+1].line == r.line && isValueWord(s.word(args[i+1]).val, s.raw(args[i+1])) {
				o.value = args[i+1]
			}
		case strings.HasPrefix(v, name+"="):
			o.equals = true
		default:
			continue
		}
		out = append(out, o)
	}
	return out
}

func isValueWord(val, raw string) bool {
	switch raw {
	case "$@", `"$@"`, "${@}", `"${@}"`, "$*", `"$*"`:
		return false
	}
	if strings.HasPrefix(val, "-") {
		_, err := strconv.ParseFloat(val, 64)
		return err == nil
	}
	return true
}

// flagValue returns the value an occurrence carries.
func (s *script) flagValue(o occurrence) (string, bool) {
	if o.equals {
		_, v, _ := strings.Cut(s.word(o.flag).val, "=")
		return v, true
	}
	if o.value.line >= 0 {
		return s.word(o.value).val, true
	}
	return "", false
}

// apply carries out every edit in a fixed order (removals, then additions)
// and returns a short description of each change made.
func (s *script) apply(e scriptEdit) ([]string, error) {
	var changes []string
	for _, f := range e.EnsureFlags {
		if slices.Contains(e.RemoveFlags, f.Name) {
			return nil, fmt.Errorf("flag %s is both to be ensured and removed", f.Name)
		}
	}
	for _, name := range e.RemoveFlags {
		ok, err := s.removeFlag(name, e.Command)
		if err != nil {
			return nil, err
		}
		if ok {
			changes = append(changes, "remove "+name)
		}
	}
	for _, f := range e.EnsureFlags {
		change, err := s.ensureFlag(f, e.AfterFlag, e.Command)
		if err != nil {
			return nil, err
		}
		if change != "" {
			changes = append(changes, change)
		}
	}
	for _, a := range e.RemoveExports {
		if s.removeExport(a) {
			changes = append(changes, "remove export "+a.Key)
		}
	}
	for _, a := range e.EnsureExports {
		if change := s.ensureExport(a, e.Command); change != "" {
			changes = append(changes, change)
		}
	}
	for _, l := range e.RemoveLines {
		if s.removeLine(l) {
			changes = append(changes, fmt.Sprintf("remove line %q", strings.TrimSpace(l)))
		}
	}
	for _, l := range e.EnsureLines {
		if s.ensureLine(l) {
			changes = append(changes, fmt.Sprintf("add line %q", strings.TrimSpace(l)))
		}
	}
	return changes, nil
}

// removeFlag removes every occurrence of the flag (and its value) from the
// command. A flag on a continuation line of its own takes its line with it.
func (s *script) removeFlag(name string, pattern *regexp.Regexp) (bool, error) {
	removed := false
	for {
		c, err := s.command(pattern)
		if errors.Is(err, errNoCommand) {
			return removed, nil
		}
		if err != nil {
			return false, err
		}
		occ := s.findFlag(c, name)
		if len(occ) == 0 {
			return removed, nil
		}
		s.removeOccurrence(c, occ[len(occ)-1])
		removed = true
	}
}

func (s *script) removeOccurrence(c span, o occurrence) {
	l := o.flag.line
	words := s.parsed[l].words
	first, last := o.flag.word, o.end().word
	if len(words) == last-first+1 && c.multiline() {
		if !s.parsed[l].cont && l > c.first {
			s.setLine(l-1, stripContinuation(s.lines[l-1]))
		}
		s.deleteLines(l, l)
		return
	}
	text := s.lines[l]
	start, end := words[first].start, words[last].end
	if strings.TrimLeft(text[:start], " \t") == "" {
		// The flag starts the line: keep the indentation, eat the blanks after.
		for end < len(text) && (text[end] == ' ' || text[end] == '\t') {
			end++
		}
	} else {
		for start > 0 && (text[start-1] == ' ' || text[start-1] == '\t') {
			start--
		}
	}
	s.setLine(l, text[:start]+text[end:])
}

// ensureFlag makes the command carry the flag with the wanted value.
func (s *script) ensureFlag(f flagArg, after string, pattern *regexp.Regexp) (string, error) {
	c, err := s.command(pattern)
	if err != nil {
		return "", fmt.Errorf("add %s: %w", f.Name, err)
	}
	if occ := s.findFlag(c, f.Name); len(occ) > 0 {
		if !f.HasValue {
			return "", nil
		}
		changed := false
		// Last to first, so a change cannot move the offsets of the rest.
		col := s.alignedColumn(c)
		for i := len(occ) - 1; i >= 0; i-- {
			if s.setFlagValue(occ[i], f, col) {
				changed = true
			}
		}
		if !changed {
			return "", nil
		}
		return fmt.Sprintf("set %s to %s", f.Name, shell.Quote(f.Value)), nil
	}
	change := "add " + f.text()
	if after != "" {
		if occ := s.findFlag(c, after); len(occ) > 0 {
			s.insertAfter(c, occ[len(occ)-1].end(), f.text())
			return change, nil
		}
		change += fmt.Sprintf(" (%s not found; added at the end)", after)
	}
	s.insertAtEnd(c, f.text())
	return change, nil
}

// setFlagValue gives an occurrence the wanted value. When the command's
// continuation backslashes are aligned in column col (0 if not), the
// changed line's backslash is moved back into that column.
func (s *script) setFlagValue(o occurrence, f flagArg, col int) bool {
	if v, ok := s.flagValue(o); ok && v == f.Value {
		return false
	}
	l := o.flag.line
	defer func() {
		if text := s.lines[l]; col > 0 && s.parsed[l].cont {
			body := stripContinuation(text)
			s.setLine(l, body+strings.Repeat(" ", max(1, col-len(body)))+`\`)
		}
	}()
	text := s.lines[l]
	switch {
	case o.equals:
		w := s.word(o.flag)
		raw := text[w.start:w.end]
		repl := quoteLike(raw, f.Name+"="+f.Value)
		if !strings.HasPrefix(raw, `"`) && !strings.HasPrefix(raw, "'") {
			_, oldVal, _ := strings.Cut(raw, "=")
			repl = f.Name + "=" + quoteLike(oldVal, f.Value)
		}
		s.setLine(l, text[:w.start]+repl+text[w.end:])
	case o.value.line >= 0:
		w := s.word(o.value)
		s.setLine(l, text[:w.start]+quoteLike(text[w.start:w.end], f.Value)+text[w.end:])
	default:
		w := s.word(o.flag)
		sep := " "
		if f.Equals {
			sep = "="
		}
		s.setLine(l, text[:w.end]+sep+shell.Quote(f.Value)+text[w.end:])
	}
	return true
}

// insertAfter puts a flag right after the word r: on a new continuation
// line when r ends its line in a multi-line command, else on r's line.
func (s *script) insertAfter(c span, r ref, flag string) {
	l := r.line
	if !c.multiline() || r.word != len(s.parsed[l].words)-1 {
		s.insertInline(r, flag)
		return
	}
	indent := s.indent(c, l)
	if s.parsed[l].cont {
		s.insertLine(l+1, s.continued(c, l, indent+flag))
		return
	}
	// r is on the command's last line: that line now continues.
	s.setLine(l, s.continued(c, l-1, s.lines[l]))
	s.insertLine(l+1, indent+flag)
}

// insertAtEnd appends a flag to the command's arguments: as a new
// continuation line before the command's last line when that line starts
// with a flag of its own (so the last line keeps its form and any trailing
// "$@" or redirection stays last), else at the end of the arguments.
func (s *script) insertAtEnd(c span, flag string) {
	if c.multiline() {
		last := s.parsed[c.last]
		if len(last.words) == 0 || last.words[0].op || !isValueWord(last.words[0].val, s.lines[c.last][last.words[0].start:last.words[0].end]) {
			s.insertLine(c.last, s.continued(c, c.last-1, s.indent(c, c.last)+flag))
			return
		}
	}
	args := s.args(c)
	s.insertInline(args[len(args)-1], flag)
}

func (s *script) insertInline(r ref, flag string) {
	text := s.lines[r.line]
	end := s.word(r).end
	s.setLine(r.line, text[:end]+" "+flag+text[end:])
}

// indent returns the indentation for a new continuation line of c next to
// line l: l's own when it is a continuation line, else the first
// continuation line's.
func (s *script) indent(c span, l int) string {
	if l <= c.first {
		l = c.first + 1
	}
	if l > c.last {
		return "  "
	}
	text := s.lines[l]
	return text[:len(text)-len(strings.TrimLeft(text, " \t"))]
}

// continued ends text with a continuation backslash in the command's style:
// in the column where the other backslashes are aligned, if they are, or
// else after the same blanks that precede the backslash on line ref.
func (s *script) continued(c span, ref int, text string) string {
	if col := s.alignedColumn(c); col > len(text) {
		return text + strings.Repeat(" ", col-len(text)) + `\`
	}
	sep := " "
	if ref >= c.first && ref <= c.last && s.parsed[ref].cont {
		// Padding that lined up with nothing is not copied; no blank or
		// a tab is.
		body := strings.TrimSuffix(s.lines[ref], `\`)
		if b := body[len(strings.TrimRight(body, " \t")):]; b == "" || b == "\t" {
			sep = b
		}
	}
	return text + sep + `\`
}

// alignedColumn returns the column of the backslashes of the command's
// continuation lines (the first line aside) when at least two of them line
// up and some are padded to do so; otherwise 0.
func (s *script) alignedColumn(c span) int {
	col, n, padded := -1, 0, false
	for l := c.first + 1; l < c.last; l++ {
		if !s.parsed[l].cont {
			continue
		}
		text := s.lines[l]
		if col >= 0 && len(text)-1 != col {
			return 0
		}
		col = len(text) - 1
		n++
		if strings.HasSuffix(text, `  \`) {
			padded = true
		}
	}
	if n < 2 || !padded {
		return 0
	}
	return col
}

func stripContinuation(line string) string {
	return strings.TrimRight(strings.TrimSuffix(line, `\`), " \t")
}

// exportWord finds where a statement assigns key in an export, e.g. the
// second word of "export KEY=VALUE".
func (s *script) exportWord(c span, key string) (ref, bool) {
	words := s.parsed[c.first].words
	if len(words) < 2 || words[0].val != "export" {
		return ref{}, false
	}
	for i, w := range words[1:] {
		if w.op {
			break
		}
		if strings.HasPrefix(w.val, key+"=") {
			return ref{c.first, i + 1}, true
		}
	}
	return ref{}, false
}

func (s *script) ensureExport(a assignment, pattern *regexp.Regexp) string {
	lastExport := -1
	found, changed := false, false
	for _, c := range slices.Backward(s.statements()) {
		if w := s.parsed[c.first].words; len(w) > 0 && w[0].val == "export" && lastExport < 0 {
			lastExport = c.last
		}
		r, ok := s.exportWord(c, a.Key)
		if !ok {
			continue
		}
		found = true
		w := s.word(r)
		if strings.TrimPrefix(w.val, a.Key+"=") == a.Value {
			continue
		}
		text := s.lines[r.line]
		raw := text[w.start:w.end]
		repl := a.Key + "=" + quoteLike(strings.TrimPrefix(raw, a.Key+"="), a.Value)
		if !strings.HasPrefix(raw, a.Key+"=") { // the whole word is quoted
			repl = quoteLike(raw, a.Key+"="+a.Value)
		}
		s.setLine(r.line, text[:w.start]+repl+text[w.end:])
		changed = true
	}
	line := "export " + a.Key + "=" + shell.Quote(a.Value)
	switch {
	case changed:
		return "set export " + a.Key + "=" + shell.Quote(a.Value)
	case found:
		return ""
	case lastExport >= 0:
		text := s.lines[lastExport]
		s.insertLine(lastExport+1, text[:len(text)-len(strings.TrimLeft(text, " \t"))]+line)
	default:
		if c, err := s.command(pattern); err == nil {
			s.insertLine(c.first, line)
		} else {
			s.appendLine(line)
		}
	}
	return "add " + line
}

func (s *script) removeExport(a assignment) bool {
	removed := false
	for _, c := range slices.Backward(s.statements()) {
		r, ok := s.exportWord(c, a.Key)
		if !ok || (a.HasValue && strings.TrimPrefix(s.word(r).val, a.Key+"=") != a.Value) {
			continue
		}
		removed = true
		if n := len(s.parsed[c.first].words); n == 2 {
			s.deleteLines(c.first, c.last)
			continue
		}
		text := s.lines[r.line]
		w := s.word(r)
		start := w.start
		for start > 0 && (text[start-1] == ' ' || text[start-1] == '\t') {
			start--
		}
		s.setLine(r.line, text[:start]+text[w.end:])
	}
	return removed
}

func (s *script) ensureLine(want string) bool {
	for _, l := range s.lines {
		if strings.TrimSpace(l) == strings.TrimSpace(want) {
			return false
		}
	}
	s.appendLine(want)
	return true
}

func (s *script) removeLine(unwanted string) bool {
	removed := false
	for i := len(s.lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(s.lines[i]) == strings.TrimSpace(unwanted) && (i < len(s.lines)-1 || s.lines[i] != "") {
			s.deleteLines(i, i)
			removed = true
		}
	}
	return removed
}

// appendLine adds a line at the end of the file, before the final newline
// when there is one.
func (s *script) appendLine(text string) {
	n := len(s.lines)
	if n > 0 && s.lines[n-1] == "" {
		s.insertLine(n-1, text)
		return
	}
	s.insertLine(n, text)
}
