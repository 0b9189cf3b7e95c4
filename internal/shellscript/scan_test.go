package shellscript

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScanLine(t *testing.T) {
	cases := []struct {
		line string
		vals []string
		ops  []bool
		cont bool
	}{
		{`  --a 1 \`, []string{"--a", "1"}, []bool{false, false}, true},
		{`--name "x y" --q='a b'`, []string{"--name", "x y", "--q=a b"}, []bool{false, false, false}, false},
		{`exec p 2>&1 | tee "$LOG"`, []string{"exec", "p", "2>&1", "|", "tee", "$LOG"}, []bool{false, false, true, true, false, false}, false},
		{`p --x > out.log # comment \`, []string{"p", "--x", ">", "out.log"}, []bool{false, false, true, true}, false},
		{`p "$(date +%s)" \ x`, []string{"p", "$(date +%s)", " x"}, []bool{false, false, false}, false},
		{`p --v=0.85 &`, []string{"p", "--v=0.85", "&"}, []bool{false, false, true}, false},
		{"p --x \\\r", []string{"p", "--x"}, []bool{false, false}, true},
		{`p --x;--y&&--z|w`, []string{"p", "--x", ";", "--y", "&&", "--z", "|", "w"}, []bool{false, false, true, false, true, false, true, false}, false},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			l := ScanLine(tc.line)
			var vals []string
			var ops []bool
			for _, w := range l.Words {
				vals = append(vals, w.Val)
				ops = append(ops, w.Op)
				require.Equal(t, tc.line[w.Start:w.End], w.Raw)
			}
			require.Equal(t, tc.vals, vals)
			require.Equal(t, tc.ops, ops)
			require.Equal(t, tc.cont, l.Cont)
		})
	}
}

// TestShellWords: quote removal and escapes, as the flag check has always
// read them (the check's own blank-splitting reader was merged into
// ScanLine).
func TestShellWords(t *testing.T) {
	cases := map[string][]string{
		`a b  c`:                            {"a", "b", "c"},
		`--x='a b' --y="c d"`:               {"--x=a b", "--y=c d"},
		`--x "it's" 'say "hi"'`:             {"--x", "it's", `say "hi"`},
		`a\ b "\$HOME" "\q"`:                {"a b", "$HOME", `\q`},
		`--model-path "$MODEL" ""`:          {"--model-path", "$MODEL", ""},
		"python3\t-m\tsglang.launch_server": {"python3", "-m", "sglang.launch_server"},
		`--x="${A:-1}" "$(cmd "a b")"`:      {"--x=${A:-1}", `$(cmd "a b")`},
	}
	for in, want := range cases {
		var got []string
		for _, w := range ScanLine(in).Words {
			got = append(got, w.Val)
		}
		require.Equal(t, want, got, in)
	}
}

func TestScanLineComments(t *testing.T) {
	cases := map[string]struct {
		code    string
		comment bool
	}{
		"a # c":                    {"a ", true},
		"# c":                      {"", true},
		"a;# c":                    {"a;", true},
		"a c#d":                    {"a c#d", false},
		`a '#' "#" \#`:             {`a '#' "#" \#`, false},
		"url=http://h/#frag":       {"url=http://h/#frag", false},
		"a # comment ending in \\": {"a ", true},
		"exec p \\":                {"exec p ", false},
	}
	for in, want := range cases {
		l := ScanLine(in)
		require.Equal(t, want.code, in[:l.Code], in)
		require.Equal(t, want.comment, l.Comment, in)
	}
}
