package actions

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
)

var update = flag.Bool("update", false, "rewrite the golden diffs under testdata/config_edit")

// TestScriptEditGolden edits each fixture, compares the diff with its golden
// file, runs the edited script under bash to see the launch command really
// receives (or no longer receives) the flags, and edits again to see that a
// second run changes nothing.
func TestScriptEditGolden(t *testing.T) {
	cases := []struct {
		name  string
		input string
		args  argspec.Values
	}{
		{"decode_disable_overlap", "sglang/serve_dsv4_decode.sh", argspec.Values{"ensure_flag": []string{"--disable-overlap-schedule"}}},
		{"prefill_after_flag", "sglang/serve_dsv4_prefill.sh", argspec.Values{"ensure_flag": []string{"--disable-overlap-schedule"}, "after_flag": "--disaggregation-bootstrap-port"}},
		{"after_last_flag", "sglang/serve_dsv4_decode.sh", argspec.Values{"ensure_flag": []string{"--disable-overlap-schedule"}, "after_flag": "--log-level"}},
		{"after_missing_flag", "sglang/serve_dsv4_prefill.sh", argspec.Values{"ensure_flag": []string{"--disable-overlap-schedule"}, "after_flag": "--no-such-flag"}},
		{"set_values", "sglang/serve_dsv4_decode.sh", argspec.Values{"ensure_flag": []string{"--mem-fraction-static 0.80", "--decode-log-interval=20", "--served-model-name 'deepseek v4'"}}},
		{"remove_own_lines", "sglang/serve_dsv4_decode.sh", argspec.Values{"remove_flag": []string{"--enable-dp-attention", "--dp-size"}}},
		{"remove_last_line", "sglang/serve_dsv4_decode.sh", argspec.Values{"remove_flag": []string{"--log-level"}}},
		{"exports", "sglang/serve_dsv4_decode.sh", argspec.Values{
			"ensure_export": []string{"SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600", "SGLANG_NEW=a b"},
			"remove_export": []string{"TOKENIZERS_PARALLELISM"},
		}},
		{"oneline", "config_edit/oneline.sh", argspec.Values{"ensure_flag": []string{"--disable-overlap-schedule", "--port 30200"}, "remove_flag": []string{"--enable-metrics"}}},
		{"aligned", "config_edit/aligned.sh", argspec.Values{
			"ensure_flag":   []string{"--disable-overlap-schedule", "--served-model-name deepseek-v4", "--disaggregation-mode prefill"},
			"ensure_export": []string{"SGLANG_DISAGGREGATION_NIXL_BACKEND=UCX $x"},
		}},
		{"tabs", "config_edit/tabs.sh", argspec.Values{"ensure_flag": []string{"--disable-overlap-schedule"}, "ensure_export": []string{"UCX_TLS=rc"}}},
		{"command_pattern", "config_edit/two_commands.sh", argspec.Values{"ensure_flag": []string{"--enable-metrics"}, "command_pattern": `sglang\.launch_server`}},
		{"no_final_newline", "config_edit/nonewline.sh", argspec.Values{"ensure_flag": []string{"--enable-metrics"}}},
		{"dropin", "config_edit/override.conf", argspec.Values{"ensure_line": []string{"Environment=SGLANG_X=1"}, "remove_line": []string{"Restart=always"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			input := fixturePath(tc.input)
			old, err := os.ReadFile(input)
			require.NoError(t, err)
			edit, err := parseEdit(tc.args)
			require.NoError(t, err)

			s := newScript(string(old))
			changes, err := s.apply(edit)
			require.NoError(t, err)
			require.NotEmpty(t, changes)
			edited := []byte(s.String())
			diff := unifiedDiff(tc.input, old, edited)

			golden := filepath.Join("testdata", "config_edit", tc.name+".diff")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(diff), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -update to create the golden file")
			require.Equal(t, string(want), diff)

			again := newScript(string(edited))
			changes, err = again.apply(edit)
			require.NoError(t, err)
			require.Empty(t, changes, "a second edit must change nothing")
			require.Equal(t, string(edited), again.String())

			if strings.HasSuffix(input, ".sh") {
				checkLaunchArgs(t, edited, edit)
			}
		})
	}
}

// checkLaunchArgs runs the edited script under bash, with exec replaced by
// a function that prints its arguments, and checks the launch command gets
// every ensured flag with its value and none of the removed ones.
func checkLaunchArgs(t *testing.T, script []byte, edit scriptEdit) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "serve.sh")
	require.NoError(t, os.WriteFile(file, script, 0o755))
	harness := `exec() { printf '%s\0' "$@"; }; python3() { :; }; . "$1"`
	out, err := exec.Command("bash", "-c", harness, "bash", file).Output()
	require.NoError(t, err, "the edited script must still run; is bash installed (Debian package bash)?")
	argv := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for _, f := range edit.EnsureFlags {
		i := slices.IndexFunc(argv, func(a string) bool { return a == f.Name || strings.HasPrefix(a, f.Name+"=") })
		require.GreaterOrEqual(t, i, 0, "%s missing from %q", f.Name, argv)
		if f.HasValue {
			got := strings.TrimPrefix(argv[i], f.Name+"=")
			if argv[i] == f.Name {
				require.Less(t, i+1, len(argv))
				got = argv[i+1]
			}
			require.Equal(t, f.Value, got, "value of %s", f.Name)
		}
	}
	for _, name := range edit.RemoveFlags {
		require.NotContains(t, argv, name)
	}
	// Exports are checked the same way: run the script's exports and print
	// the environment the command would see.
	envOut, err := exec.Command("bash", "-c", `exec() { env -0; }; python3() { :; }; . "$1"`, "bash", file).Output()
	require.NoError(t, err)
	env := bytes.Split(envOut, []byte{0})
	for _, a := range edit.EnsureExports {
		require.Contains(t, env, []byte(a.Key+"="+a.Value))
	}
	for _, a := range edit.RemoveExports {
		for _, kv := range env {
			require.False(t, bytes.HasPrefix(kv, []byte(a.Key+"=")), "%s still exported", a.Key)
		}
	}
}

func TestCommandPicksMostFlags(t *testing.T) {
	old, err := os.ReadFile("testdata/config_edit/two_commands.sh")
	require.NoError(t, err)
	s := newScript(string(old))
	c, err := s.Launch(nil)
	require.NoError(t, err)
	require.Contains(t, s.CommandText(c), "sglang_router.launch_router", "the router line has the most flags")
}

func TestScriptEditErrors(t *testing.T) {
	cases := []struct {
		name    string
		content string
		args    argspec.Values
		want    string
	}{
		{"no command", "FOO=1\n", argspec.Values{"ensure_flag": []string{"--x"}}, "no command line with -- flags"},
		{"pattern matches nothing", "exec a --b\n", argspec.Values{"ensure_flag": []string{"--x"}, "command_pattern": "zzz"}, "no command line matches"},
		{"ensure and remove", "exec a --b\n", argspec.Values{"ensure_flag": []string{"--b"}, "remove_flag": []string{"--b"}}, "both to be ensured and removed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			edit, err := parseEdit(tc.args)
			require.NoError(t, err)
			_, err = newScript(tc.content).apply(edit)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestParseEditRejects(t *testing.T) {
	cases := map[string]argspec.Values{
		"nothing to do":      {},
		"flag without dash":  {"ensure_flag": []string{"disable-overlap"}},
		"flag with 2 values": {"ensure_flag": []string{"--a b c"}},
		"export no value":    {"ensure_export": []string{"KEY"}},
		"export bad key":     {"remove_export": []string{"1KEY"}},
		"empty line":         {"ensure_line": []string{"  "}},
		"after_flag value":   {"ensure_flag": []string{"--a"}, "after_flag": "--port 1"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parseEdit(args)
			require.Error(t, err)
		})
	}
}
