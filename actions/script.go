package actions

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/internal/shellscript"
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
	ws := shellscript.ScanLine(strings.TrimSpace(s)).Words
	if len(ws) == 0 || len(ws) > 2 || !strings.HasPrefix(ws[0].Val, "-") || ws[0].Op || (len(ws) == 2 && ws[1].Op) {
		return flagArg{}, fmt.Errorf("flag %q: want -NAME, -NAME VALUE or -NAME=VALUE", s)
	}
	f := flagArg{Name: ws[0].Val}
	if name, val, ok := strings.Cut(ws[0].Val, "="); ok {
		if len(ws) == 2 {
			return flagArg{}, fmt.Errorf("flag %q: give the value after = or after a space, not both", s)
		}
		f = flagArg{Name: name, Value: val, HasValue: true, Equals: true}
	} else if len(ws) == 2 {
		f.Value, f.HasValue = ws[1].Val, true
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

// script is the text of a file being edited, read by the same reader the
// flag check uses.
type script struct {
	*shellscript.Script
}

func newScript(content string) *script { return &script{shellscript.Parse(content)} }

// ref names one word of the script.
type ref = shellscript.Ref

// occurrence is one appearance of a flag in the command.
type occurrence = shellscript.Occurrence

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
		c, err := s.Launch(pattern)
		if errors.Is(err, shellscript.ErrNoCommand) {
			return removed, nil
		}
		if err != nil {
			return false, err
		}
		occ := s.FindFlag(c, name)
		if len(occ) == 0 {
			return removed, nil
		}
		s.removeOccurrence(c.Statement, occ[len(occ)-1])
		removed = true
	}
}

func (s *script) removeOccurrence(st shellscript.Span, o occurrence) {
	if o.Value.Line >= 0 && o.Value.Line != o.Flag.Line {
		// The value is on a later line: remove it first, which cannot move
		// the flag.
		if s.removeWords(st, o.Value.Line, o.Value.Word, o.Value.Word) {
			st.Last--
		}
		s.removeWords(st, o.Flag.Line, o.Flag.Word, o.Flag.Word)
		return
	}
	s.removeWords(st, o.Flag.Line, o.Flag.Word, o.End().Word)
}

// removeWords removes words first..last of line l of statement st, and the
// line with them when they are all it holds. It reports whether the line
// was deleted.
func (s *script) removeWords(st shellscript.Span, l, first, last int) bool {
	words := s.Parsed[l].Words
	if len(words) == last-first+1 && st.Multiline() {
		if !s.Parsed[l].Cont && l > st.First {
			s.SetLine(l-1, stripContinuation(s.Lines[l-1]))
		}
		s.DeleteLines(l, l)
		return true
	}
	text := s.Lines[l]
	start, end := words[first].Start, words[last].End
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
	s.SetLine(l, text[:start]+text[end:])
	return false
}

// ensureFlag makes the command carry the flag with the wanted value.
func (s *script) ensureFlag(f flagArg, after string, pattern *regexp.Regexp) (string, error) {
	c, err := s.Launch(pattern)
	if err != nil {
		return "", fmt.Errorf("add %s: %w", f.Name, err)
	}
	if occ := s.FindFlag(c, f.Name); len(occ) > 0 {
		if !f.HasValue {
			return "", nil
		}
		changed := false
		// Last to first, so a change cannot move the offsets of the rest.
		col := s.alignedColumn(c.Statement)
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
		if occ := s.FindFlag(c, after); len(occ) > 0 {
			s.insertAfter(c.Statement, occ[len(occ)-1].End(), f.text())
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
	if v, ok := s.FlagValue(o); ok && v == f.Value {
		return false
	}
	l := o.Flag.Line
	if !o.Equals && o.Value.Line >= 0 {
		l = o.Value.Line
	}
	defer func() {
		if text := s.Lines[l]; col > 0 && s.Parsed[l].Cont {
			body := stripContinuation(text)
			s.SetLine(l, body+strings.Repeat(" ", max(1, col-len(body)))+`\`)
		}
	}()
	text := s.Lines[l]
	switch {
	case o.Equals:
		w := s.Word(o.Flag)
		repl := quoteLike(w.Raw, f.Name+"="+f.Value)
		if !strings.HasPrefix(w.Raw, `"`) && !strings.HasPrefix(w.Raw, "'") {
			_, oldVal, _ := strings.Cut(w.Raw, "=")
			repl = f.Name + "=" + quoteLike(oldVal, f.Value)
		}
		s.SetLine(l, text[:w.Start]+repl+text[w.End:])
	case o.Value.Line >= 0:
		w := s.Word(o.Value)
		s.SetLine(l, text[:w.Start]+quoteLike(w.Raw, f.Value)+text[w.End:])
	default:
		w := s.Word(o.Flag)
		sep := " "
		if f.Equals {
			sep = "="
		}
		s.SetLine(l, text[:w.End]+sep+shell.Quote(f.Value)+text[w.End:])
	}
	return true
}

// insertAfter puts a flag right after the word r: on a new continuation
// line when r ends its line in a multi-line statement, else on r's line.
func (s *script) insertAfter(st shellscript.Span, r ref, flag string) {
	l := r.Line
	if !st.Multiline() || r.Word != len(s.Parsed[l].Words)-1 {
		s.insertInline(r, flag)
		return
	}
	indent := s.indent(st, l)
	if s.Parsed[l].Cont {
		s.InsertLine(l+1, s.continued(st, l, indent+flag))
		return
	}
	// r is on the statement's last line: that line now continues.
	s.SetLine(l, s.continued(st, l-1, s.Lines[l]))
	s.InsertLine(l+1, indent+flag)
}

// insertAtEnd appends a flag to the command's arguments: as a new
// continuation line before the command's last line when that line starts
// with a flag of its own (so the last line keeps its form and any trailing
// "$@" or redirection stays last), else at the end of the arguments.
func (s *script) insertAtEnd(c shellscript.Command, flag string) {
	if c.Multiline() {
		last := s.Parsed[c.Last]
		if len(last.Words) == 0 || last.Words[0].Op || !shellscript.IsValueWord(last.Words[0]) {
			s.InsertLine(c.Last, s.continued(c.Statement, c.Last-1, s.indent(c.Statement, c.Last)+flag))
			return
		}
	}
	s.insertInline(c.Args[len(c.Args)-1], flag)
}

func (s *script) insertInline(r ref, flag string) {
	text := s.Lines[r.Line]
	end := s.Word(r).End
	s.SetLine(r.Line, text[:end]+" "+flag+text[end:])
}

// indent returns the indentation for a new continuation line of c next to
// line l: l's own when it is a continuation line, else the first
// continuation line's.
func (s *script) indent(c shellscript.Span, l int) string {
	if l <= c.First {
		l = c.First + 1
	}
	if l > c.Last {
		return "  "
	}
	text := s.Lines[l]
	return text[:len(text)-len(strings.TrimLeft(text, " \t"))]
}

// continued ends text with a continuation backslash in the statement's
// style: in the column where the other backslashes are aligned, if they
// are, or else after the same blanks that precede the backslash on line
// ref.
func (s *script) continued(c shellscript.Span, ref int, text string) string {
	if col := s.alignedColumn(c); col > len(text) {
		return text + strings.Repeat(" ", col-len(text)) + `\`
	}
	sep := " "
	if ref >= c.First && ref <= c.Last && s.Parsed[ref].Cont {
		// Padding that lined up with nothing is not copied; no blank or
		// a tab is.
		body := strings.TrimSuffix(s.Lines[ref], `\`)
		if b := body[len(strings.TrimRight(body, " \t")):]; b == "" || b == "\t" {
			sep = b
		}
	}
	return text + sep + `\`
}

// alignedColumn returns the column of the backslashes of the statement's
// continuation lines (the first line aside) when at least two of them line
// up and some are padded to do so; otherwise 0.
func (s *script) alignedColumn(c shellscript.Span) int {
	col, n, padded := -1, 0, false
	for l := c.First + 1; l < c.Last; l++ {
		if !s.Parsed[l].Cont {
			continue
		}
		text := s.Lines[l]
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

func (s *script) ensureExport(a assignment, pattern *regexp.Regexp) string {
	lastExport := -1
	found, changed := false, false
	for _, c := range slices.Backward(s.Statements()) {
		if s.IsExport(c) && lastExport < 0 {
			lastExport = c.Last
		}
		r, ok := s.ExportWord(c, a.Key)
		if !ok {
			continue
		}
		found = true
		w := s.Word(r)
		if strings.TrimPrefix(w.Val, a.Key+"=") == a.Value {
			continue
		}
		text := s.Lines[r.Line]
		repl := a.Key + "=" + quoteLike(strings.TrimPrefix(w.Raw, a.Key+"="), a.Value)
		if !strings.HasPrefix(w.Raw, a.Key+"=") { // the whole word is quoted
			repl = quoteLike(w.Raw, a.Key+"="+a.Value)
		}
		s.SetLine(r.Line, text[:w.Start]+repl+text[w.End:])
		changed = true
	}
	line := "export " + a.Key + "=" + shell.Quote(a.Value)
	switch {
	case changed:
		return "set export " + a.Key + "=" + shell.Quote(a.Value)
	case found:
		return ""
	case lastExport >= 0:
		text := s.Lines[lastExport]
		s.InsertLine(lastExport+1, text[:len(text)-len(strings.TrimLeft(text, " \t"))]+line)
	default:
		if c, err := s.Launch(pattern); err == nil {
			s.InsertLine(c.Statement.First, line)
		} else {
			s.appendLine(line)
		}
	}
	return "add " + line
}

func (s *script) removeExport(a assignment) bool {
	removed := false
	for _, c := range slices.Backward(s.Statements()) {
		r, ok := s.ExportWord(c, a.Key)
		if !ok || (a.HasValue && strings.TrimPrefix(s.Word(r).Val, a.Key+"=") != a.Value) {
			continue
		}
		removed = true
		if n := len(s.Parsed[c.First].Words); n == 2 {
			s.DeleteLines(c.First, c.Last)
			continue
		}
		text := s.Lines[r.Line]
		w := s.Word(r)
		start := w.Start
		for start > 0 && (text[start-1] == ' ' || text[start-1] == '\t') {
			start--
		}
		s.SetLine(r.Line, text[:start]+text[w.End:])
	}
	return removed
}

func (s *script) ensureLine(want string) bool {
	for _, l := range s.Lines {
		if strings.TrimSpace(l) == strings.TrimSpace(want) {
			return false
		}
	}
	s.appendLine(want)
	return true
}

func (s *script) removeLine(unwanted string) bool {
	removed := false
	for i := len(s.Lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(s.Lines[i]) == strings.TrimSpace(unwanted) && (i < len(s.Lines)-1 || s.Lines[i] != "") {
			s.DeleteLines(i, i)
			removed = true
		}
	}
	return removed
}

// appendLine adds a line at the end of the file, before the final newline
// when there is one.
func (s *script) appendLine(text string) {
	n := len(s.Lines)
	if n > 0 && s.Lines[n-1] == "" {
		s.InsertLine(n-1, text)
		return
	}
	s.InsertLine(n, text)
}

// quoteLike quotes val for the shell the way old (a word's text as written)
// was quoted, so that replacing a value keeps the script's style: a value
// that was in double quotes stays in double quotes.
func quoteLike(old, val string) string {
	switch {
	case strings.HasPrefix(old, `"`):
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`")
		return `"` + r.Replace(val) + `"`
	case strings.HasPrefix(old, `'`):
		return "'" + strings.ReplaceAll(val, "'", `'\''`) + "'"
	}
	return shell.Quote(val)
}
