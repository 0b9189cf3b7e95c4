package shellscript

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/runbot/runbot/internal/shell"
)

// Script is a file's text as physical lines, each scanned into words. The
// last line is empty when the text ends with a newline, so String gives
// the text back byte for byte. Editors change it through SetLine,
// InsertLine and DeleteLines, which keep the words in step.
type Script struct {
	Lines  []string
	Parsed []Line
}

// Parse splits text into lines and scans each.
func Parse(text string) *Script {
	s := &Script{Lines: strings.Split(text, "\n")}
	s.reparse()
	return s
}

// String returns the script's text.
func (s *Script) String() string { return strings.Join(s.Lines, "\n") }

func (s *Script) reparse() {
	s.Parsed = make([]Line, len(s.Lines))
	for i, l := range s.Lines {
		s.Parsed[i] = ScanLine(l)
	}
}

// SetLine replaces line i.
func (s *Script) SetLine(i int, text string) {
	s.Lines[i] = text
	s.Parsed[i] = ScanLine(text)
}

// InsertLine inserts text as line at.
func (s *Script) InsertLine(at int, text string) {
	s.Lines = slices.Insert(s.Lines, at, text)
	s.Parsed = slices.Insert(s.Parsed, at, ScanLine(text))
}

// DeleteLines deletes lines from..to, both included.
func (s *Script) DeleteLines(from, to int) {
	s.Lines = slices.Delete(s.Lines, from, to+1)
	s.Parsed = slices.Delete(s.Parsed, from, to+1)
}

// Span is a statement (a logical line): physical lines First..Last, joined
// by continuation backslashes.
type Span struct{ First, Last int }

// Multiline says the statement continues over more than one line.
func (c Span) Multiline() bool { return c.Last > c.First }

// Statements lists the script's statements in order, one per logical line.
func (s *Script) Statements() []Span {
	var out []Span
	for i := 0; i < len(s.Lines); i++ {
		c := Span{First: i, Last: i}
		for c.Last+1 < len(s.Lines) && s.Parsed[c.Last].Cont {
			c.Last++
		}
		out = append(out, c)
		i = c.Last
	}
	return out
}

// Text is the statement as written, its lines joined by newlines.
func (s *Script) Text(c Span) string { return strings.Join(s.Lines[c.First:c.Last+1], "\n") }

// Ref names one word: its line and its index in that line's words.
type Ref struct{ Line, Word int }

// Word returns the word r names.
func (s *Script) Word(r Ref) Word { return s.Parsed[r.Line].Words[r.Word] }

// Command is one simple command of a statement: its words between control
// operators (|, ||, &&, ;, &, parentheses).
type Command struct {
	// Statement is the statement the command is part of.
	Statement Span
	// First and Last are the lines its words are on. A statement's last
	// command ends on the statement's last line, even when that line holds
	// none of its words.
	First, Last int
	// Words holds its words, redirections included, in order.
	Words []Ref
	// Args holds what the command itself receives: Words without
	// redirections. Args[0] is the command's name (or "exec", or an
	// assignment).
	Args []Ref
}

// Multiline says the command's words are on more than one line.
func (c Command) Multiline() bool { return c.Last > c.First }

// Commands splits a statement into its simple commands, leaving out empty
// ones (a statement of only a comment has none).
func (s *Script) Commands(st Span) []Command {
	var out []Command
	cur := Command{Statement: st}
	flush := func(last bool) {
		if len(cur.Words) > 0 {
			cur.First, cur.Last = cur.Words[0].Line, cur.Words[len(cur.Words)-1].Line
			if last {
				cur.Last = st.Last
			}
			out = append(out, cur)
		}
		cur = Command{Statement: st}
	}
	for l := st.First; l <= st.Last; l++ {
		for i, w := range s.Parsed[l].Words {
			r := Ref{l, i}
			switch {
			case w.Control:
				flush(false)
			case w.Op:
				cur.Words = append(cur.Words, r)
			default:
				cur.Words = append(cur.Words, r)
				cur.Args = append(cur.Args, r)
			}
		}
	}
	flush(true)
	return out
}

// AllCommands lists the simple commands of every statement, in order.
func (s *Script) AllCommands() []Command {
	var out []Command
	for _, st := range s.Statements() {
		out = append(out, s.Commands(st)...)
	}
	return out
}

// CommandText is the command as written, from its first word to its last.
func (s *Script) CommandText(c Command) string {
	if len(c.Words) == 0 {
		return ""
	}
	first, last := s.Word(c.Words[0]), s.Word(c.Words[len(c.Words)-1])
	fl, ll := c.Words[0].Line, c.Words[len(c.Words)-1].Line
	if fl == ll {
		return s.Lines[fl][first.Start:last.End]
	}
	parts := []string{s.Lines[fl][first.Start:]}
	parts = append(parts, s.Lines[fl+1:ll]...)
	return strings.Join(append(parts, s.Lines[ll][:last.End]), "\n")
}

// ArgWords returns the words of the command's arguments.
func (s *Script) ArgWords(c Command) []Word {
	out := make([]Word, len(c.Args))
	for i, r := range c.Args {
		out[i] = s.Word(r)
	}
	return out
}

// CountFlags counts the command's "--" flags.
func (s *Script) CountFlags(c Command) int {
	n := 0
	for _, w := range s.ArgWords(c) {
		if strings.HasPrefix(w.Val, "--") && len(w.Val) > 2 {
			n++
		}
	}
	return n
}

// ErrNoCommand means the script has no command passing "--" flags.
var ErrNoCommand = errors.New("no command line with -- flags found")

// Launch finds the command a launch script starts its server with: the
// first command whose text matches pattern, or, when pattern is nil, the
// one passing the most "--" flags (the first of those tied). config_edit
// edits this command's flags and the flag check reads them.
func (s *Script) Launch(pattern *regexp.Regexp) (Command, error) {
	var best Command
	bestN := 0
	for _, c := range s.AllCommands() {
		if pattern != nil {
			if pattern.MatchString(s.CommandText(c)) {
				return c, nil
			}
			continue
		}
		if n := s.CountFlags(c); n > bestN {
			best, bestN = c, n
		}
	}
	if pattern != nil {
		return Command{}, fmt.Errorf("no command line matches command_pattern %q", pattern)
	}
	if bestN == 0 {
		return Command{}, ErrNoCommand
	}
	return best, nil
}

// Occurrence is one appearance of a flag among a command's arguments.
type Occurrence struct {
	Flag Ref
	// Value is the separate value word, or Line -1 when the flag has none
	// or carries it after '='.
	Value  Ref
	Equals bool
}

// End is the last word of the occurrence: its value, or the flag itself.
func (o Occurrence) End() Ref {
	if o.Value.Line >= 0 {
		return o.Value
	}
	return o.Flag
}

// FindFlag lists where the command passes the flag name, as FindFlagIn
// reads arguments.
func (s *Script) FindFlag(c Command, name string) []Occurrence {
	var out []Occurrence
	for _, u := range FindFlagIn(s.ArgWords(c), name) {
		o := Occurrence{Flag: c.Args[u.At], Value: Ref{Line: -1}, Equals: u.Equals}
		if u.Value >= 0 {
			o.Value = c.Args[u.Value]
		}
		out = append(out, o)
	}
	return out
}

// FlagValue returns the value an occurrence carries.
func (s *Script) FlagValue(o Occurrence) (string, bool) {
	if o.Equals {
		_, v, _ := strings.Cut(s.Word(o.Flag).Val, "=")
		return v, true
	}
	if o.Value.Line >= 0 {
		return s.Word(o.Value).Val, true
	}
	return "", false
}

// Use is one appearance of a flag in a list of arguments, by index.
type Use struct {
	At int
	// Value is the index of the separate value, or -1.
	Value  int
	Equals bool
}

// FindFlagIn lists where args pass the flag name: as "name", "name=value"
// or "name value". A separate value is the next argument unless that looks
// like an option (starts with '-' and is not a number) or passes the
// script's own arguments ("$@", "$*"): "--enable-metrics --log-level info"
// gives --enable-metrics no value.
func FindFlagIn(args []Word, name string) []Use {
	var out []Use
	for i, w := range args {
		u := Use{At: i, Value: -1}
		switch {
		case w.Val == name:
			if i+1 < len(args) && IsValueWord(args[i+1]) {
				u.Value = i + 1
			}
		case strings.HasPrefix(w.Val, name+"="):
			u.Equals = true
		default:
			continue
		}
		out = append(out, u)
	}
	return out
}

// IsValueWord says whether w can be a flag's separate value.
func IsValueWord(w Word) bool {
	switch w.Raw {
	case "$@", `"$@"`, "${@}", `"${@}"`, "$*", `"$*"`:
		return false
	}
	if strings.HasPrefix(w.Val, "-") {
		_, err := strconv.ParseFloat(w.Val, 64)
		return err == nil // a negative number is a value, not an option
	}
	return true
}

// LookupFlag reads the flag name from args the way a program's argument
// parser does: the last appearance wins. value is empty for a flag given
// without one.
func LookupFlag(args []Word, name string) (value string, found bool) {
	uses := FindFlagIn(args, name)
	if len(uses) == 0 {
		return "", false
	}
	u := uses[len(uses)-1]
	switch {
	case u.Equals:
		_, v, _ := strings.Cut(args[u.At].Val, "=")
		return v, true
	case u.Value >= 0:
		return args[u.Value].Val, true
	}
	return "", true
}

// Argv turns a process's arguments (/proc/PID/cmdline) into words, so that
// LookupFlag reads them the way it reads a script's.
func Argv(args []string) []Word {
	out := make([]Word, len(args))
	for i, a := range args {
		// A process's argument is literal: "$@" there is a value, not the
		// script's arguments, so Raw is written as a script would pass it.
		out[i] = Word{Val: a, Raw: shell.Quote(a)}
	}
	return out
}

// ScriptFlag is what a launch script says about one flag.
type ScriptFlag struct {
	Found bool
	// Value is the flag's value, empty for a flag given alone.
	Value string
	// Line is the line (from 1) of the flag's last appearance.
	Line int
}

// LaunchFlag reads the flag name in the launch command (see Launch):
// where its last appearance is and the value it carries. A script without
// such a command does not pass the flag.
func (s *Script) LaunchFlag(pattern *regexp.Regexp, name string) (ScriptFlag, error) {
	c, err := s.Launch(pattern)
	if errors.Is(err, ErrNoCommand) {
		return ScriptFlag{}, nil
	}
	if err != nil {
		return ScriptFlag{}, err
	}
	occ := s.FindFlag(c, name)
	if len(occ) == 0 {
		return ScriptFlag{}, nil
	}
	o := occ[len(occ)-1]
	v, _ := s.FlagValue(o)
	return ScriptFlag{Found: true, Value: v, Line: o.Flag.Line + 1}, nil
}

// ExportWord finds where a statement assigns key in an export, e.g. the
// second word of "export KEY=VALUE".
func (s *Script) ExportWord(c Span, key string) (Ref, bool) {
	if !s.IsExport(c) {
		return Ref{}, false
	}
	for i, w := range s.Parsed[c.First].Words[1:] {
		if w.Op {
			break
		}
		if strings.HasPrefix(w.Val, key+"=") {
			return Ref{c.First, i + 1}, true
		}
	}
	return Ref{}, false
}

// IsExport says whether the statement is an export.
func (s *Script) IsExport(c Span) bool {
	w := s.Parsed[c.First].Words
	return len(w) > 0 && w[0].Val == "export"
}
