package shellscript

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFindFlag: how a flag and its value are read from a command line.
func TestFindFlag(t *testing.T) {
	cases := []struct {
		line  string
		flag  string
		value string
		found bool
	}{
		{"x --disable-overlap-schedule --enable-metrics", "--disable-overlap-schedule", "", true},
		{"x --disable-overlap-schedule", "--disable-overlap-schedule", "", true},
		{"x --decode-log-interval 40", "--decode-log-interval", "40", true},
		{"x --decode-log-interval=40", "--decode-log-interval", "40", true},
		{"x --disable-overlap-schedule-v2", "--disable-overlap-schedule", "", false},
		{"x --disable-overlap-schedule && y", "--disable-overlap-schedule", "", true},
		{"x --no-disable-overlap-schedule", "--disable-overlap-schedule", "", false},
		{"x --port 1 --port 2", "--port", "2", true},
		{"x --offset -1", "--offset", "-1", true},
		{`x --enable-metrics "$@"`, "--enable-metrics", "", true},
		{"x --log-level > log", "--log-level", "", true},
	}
	for _, c := range cases {
		f, err := Parse(c.line).LaunchFlag(nil, c.flag)
		require.NoError(t, err)
		require.Equal(t, c.found, f.Found, c.line)
		require.Equal(t, c.value, f.Value, c.line)
	}
}

// TestLookupFlagArgv reads a process's command line: its arguments are
// literal, so "&&" or "$@" there are values like any other.
func TestLookupFlagArgv(t *testing.T) {
	cases := []struct {
		argv  []string
		flag  string
		value string
		found bool
	}{
		{[]string{"python3", "--disable-overlap-schedule", "--enable-metrics"}, "--disable-overlap-schedule", "", true},
		{[]string{"python3", "--decode-log-interval", "40"}, "--decode-log-interval", "40", true},
		{[]string{"python3", "--decode-log-interval=80"}, "--decode-log-interval", "80", true},
		{[]string{"python3", "--x", "$@"}, "--x", "$@", true},
		{[]string{"python3", "--x", "-0.5"}, "--x", "-0.5", true},
		{[]string{"python3", "--x-y"}, "--x", "", false},
	}
	for _, c := range cases {
		v, ok := LookupFlag(Argv(c.argv), c.flag)
		require.Equal(t, c.found, ok, c.argv)
		require.Equal(t, c.value, v, c.argv)
	}
}

// readerCases are scripts on which the flag check and config_edit used to
// read a flag differently (the check split logical lines on blanks, the
// action on shell operators too, and they picked different commands). Now
// one reader reads them; what it reads is given here.
var readerCases = []struct {
	name   string
	script string
	flag   string
	found  bool
	value  string
	line   int
}{
	// The check read "--flag;" as one word: absent.
	{"semicolon", "exec p --a --flag;\n", "--flag", true, "", 1},
	// The check found it after && although it is another command's name.
	{"after and-and", "exec p --a --b && --flag\n", "--flag", false, "", 0},
	{"piped on", "exec p --a --flag|tee log\n", "--flag", true, "", 1},
	{"redirected", "exec p --a --flag>log 2>&1\n", "--flag", true, "", 1},
	{"double quoted", "exec p --a \"--flag\"\n", "--flag", true, "", 1},
	{"single quoted with value", "exec p --a '--flag=x y'\n", "--flag", true, "x y", 1},
	{"continued", "exec p \\\n  --a \\\n  --flag \\\n  --b\n", "--flag", true, "", 3},
	{"commented out", "exec p --a --b # --flag\n", "--flag", false, "", 0},
	{"commented-out command", "# exec p --a --b --flag\nexec p --a --b\n", "--flag", false, "", 0},
	{"comment ends the command", "exec p \\\n  --a \\\n  # --b \\\n  --flag\n", "--flag", false, "", 0},
	// The action required a value on the flag's line.
	{"value on the next line", "exec p --a --flag \\\n  7\n", "--flag", true, "7", 1},
	// The check took "-1" for an option and "$@" for a value.
	{"negative value", "exec p --a --flag -1\n", "--flag", true, "-1", 1},
	{"script arguments", "exec p --a --flag \"$@\"\n", "--flag", true, "", 1},
	// The action looked at the statement's first command only (cd).
	{"after cd", "cd / && exec p --a --flag\n", "--flag", true, "", 1},
	// The check looked at every command; both now read the launch command.
	{"other command", "q --flag\nexec p --a --b\n", "--flag", false, "", 0},
}

func TestReaderCases(t *testing.T) {
	for _, c := range readerCases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse(c.script).LaunchFlag(nil, c.flag)
			require.NoError(t, err)
			require.Equal(t, ScriptFlag{Found: c.found, Value: c.value, Line: c.line}, f)
		})
	}
}

func TestCommands(t *testing.T) {
	s := Parse("cd /x && exec p --a \\\n  --b 2>&1 | tee log; wait\n# done\n")
	sts := s.Statements()
	require.Len(t, sts, 3) // the command, the comment, the empty last line
	cmds := s.Commands(sts[0])
	require.Len(t, cmds, 4)
	var texts []string
	for _, c := range cmds {
		texts = append(texts, s.CommandText(c))
	}
	require.Equal(t, []string{"cd /x", "exec p --a \\\n  --b 2>&1", "tee log", "wait"}, texts)
	require.Equal(t, []string{"exec", "p", "--a", "--b"}, vals(s.ArgWords(cmds[1])))
	require.Equal(t, [2]int{0, 1}, [2]int{cmds[1].First, cmds[1].Last})
	require.Empty(t, s.Commands(sts[1]))

	c, err := s.Launch(nil)
	require.NoError(t, err)
	require.Equal(t, cmds[1], c)
	c, err = s.Launch(regexp.MustCompile(`^tee`))
	require.NoError(t, err)
	require.Equal(t, cmds[2], c)
	_, err = s.Launch(regexp.MustCompile(`zzz`))
	require.ErrorContains(t, err, "no command line matches")
	_, err = Parse("FOO=1\necho hi\n").Launch(nil)
	require.ErrorIs(t, err, ErrNoCommand)
}

func TestExportWord(t *testing.T) {
	s := Parse("export A=1 B='x y' # c\nexport\nB=2\n")
	sts := s.Statements()
	r, ok := s.ExportWord(sts[0], "B")
	require.True(t, ok)
	require.Equal(t, "B=x y", s.Word(r).Val)
	_, ok = s.ExportWord(sts[1], "B")
	require.False(t, ok)
	_, ok = s.ExportWord(sts[2], "B")
	require.False(t, ok, "an assignment without export is not an export")
}

func TestEditsKeepWordsInStep(t *testing.T) {
	text := "a \\\n  --b\nc\n"
	s := Parse(text)
	require.Equal(t, text, s.String())
	s.InsertLine(1, "  --x \\")
	s.SetLine(3, "d --e")
	s.DeleteLines(0, 0)
	require.Equal(t, "  --x \\\n  --b\nd --e\n", s.String())
	require.Equal(t, Parse(s.String()).Parsed, s.Parsed)
}

func vals(ws []Word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Val
	}
	return out
}
