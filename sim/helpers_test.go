package sim_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// fastArgs scale the simulator's time so that scenarios play out in seconds. They
// also keep the contract these tests were written for: aborts processed the moment
// a client leaves (real engines take seconds: --abort-latency), X-Request-Id as the
// engines' rid (real engines mint their own: --request-ids engine), and abort lines
// that name their reason (mooncake; on NIXL, the default, they read "NIXL
// KVReceiver Exception"). profile_e2e_test.go tests the real defaults.
var fastArgs = []string{"--token-rate", "200", "--decode-log-interval", "4", "--idle-refresh", "100ms", "--max-tokens", "8",
	"--abort-latency", "0s", "--request-ids", "client", "--transfer-backend", "mooncake"}

// deployment is a running `sglang-sim up` deployment owned by one test.
type deployment struct {
	dir       string
	endpoints map[string]string
}

// runSim runs the simulator binary and returns its stdout; it fails the test on a
// non-zero exit unless allowFail.
func runSim(tb testing.TB, args ...string) (string, error) {
	tb.Helper()
	cmd := exec.Command(simBinary, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		return out.String() + errOut.String(), fmt.Errorf("sglang-sim %s: %w\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String(), nil
}

// up starts a deployment in a fresh directory and tears it down when the test ends,
// checking that no process it started survives.
func up(tb testing.TB, args ...string) *deployment {
	tb.Helper()
	dir := tb.TempDir()
	_, err := runSim(tb, append(append([]string{"up", "--dir", dir}, fastArgs...), args...)...)
	require.NoError(tb, err)
	d := &deployment{dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, "endpoints.json"))
	require.NoError(tb, err)
	require.NoError(tb, json.Unmarshal(b, &d.endpoints))
	tb.Cleanup(func() {
		pids := d.allPIDs(tb)
		_, err := runSim(tb, "down", "--dir", dir)
		require.NoError(tb, err)
		for _, pid := range pids {
			require.Falsef(tb, processRunning(pid), "process %d still runs after down", pid)
		}
		for _, role := range []string{"prefill", "decode", "router"} {
			b, _ := os.ReadFile(filepath.Join(dir, role+".sim.log"))
			require.NotContainsf(tb, string(b), "WARNING: DATA RACE", "%s reported a data race:\n%s", role, b)
		}
	})
	return d
}

func (d *deployment) ctl(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := runSim(tb, append([]string{"ctl", "--dir", d.dir}, args...)...)
	require.NoError(tb, err)
	return out
}

// show parses `ctl show ROLE` into a map.
func (d *deployment) show(tb testing.TB, role string) map[string]string {
	tb.Helper()
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(d.ctl(tb, "show", role)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		m[k] = v
	}
	return m
}

func (d *deployment) mainPID(tb testing.TB, role string) int {
	tb.Helper()
	pid, err := strconv.Atoi(d.show(tb, role)["MainPID"])
	require.NoError(tb, err)
	return pid
}

// allPIDs lists the supervisor and main PIDs of every role.
func (d *deployment) allPIDs(tb testing.TB) []int {
	tb.Helper()
	var pids []int
	for _, role := range []string{"prefill", "decode", "router"} {
		b, err := os.ReadFile(filepath.Join(d.dir, role+".state.json"))
		if err != nil {
			continue
		}
		var st struct {
			Sup  int `json:"supervisor_pid"`
			Main int `json:"main_pid"`
		}
		require.NoError(tb, json.Unmarshal(b, &st))
		pids = append(pids, st.Sup, st.Main)
	}
	return pids
}

func (d *deployment) logPath(role string) string { return filepath.Join(d.dir, role+".log") }

// processRunning reports whether pid is a live, non-zombie process.
func processRunning(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// logLines returns the lines of a log file from line `from` on.
func logLines(tb testing.TB, path string, from int) []string {
	tb.Helper()
	f, err := os.Open(path)
	require.NoError(tb, err)
	defer func() { _ = f.Close() }() // read only
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for i := 0; sc.Scan(); i++ {
		if i >= from {
			lines = append(lines, sc.Text())
		}
	}
	require.NoError(tb, sc.Err())
	return lines
}

func countLines(tb testing.TB, path string) int {
	tb.Helper()
	return len(logLines(tb, path, 0))
}

func grep(lines []string, re *regexp.Regexp) []string {
	var out []string
	for _, l := range lines {
		if re.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// chatResult is what a client saw of one chat completion.
type chatResult struct {
	status   int
	bytes    int
	timedOut bool
	ttfb     time.Duration
	total    time.Duration
	body     string
	err      error
}

// chat sends one chat completion with a client timeout, recording bytes and timing
// like the runbook's http_probe does.
func chat(baseURL, rid string, timeout time.Duration, stream bool) chatResult {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	body := fmt.Sprintf(`{"model":"deepseek-v4","messages":[{"role":"user","content":"probe"}],"max_tokens":4,"stream":%t}`, stream)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if rid != "" {
		req.Header.Set("X-Request-Id", rid)
	}
	return sendChat(ctx, req)
}

func httpStatus(tb testing.TB, url string) int {
	tb.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	require.NoError(tb, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// scrape parses an engine's /metrics with Prometheus' own text parser.
func scrape(tb testing.TB, url string) map[string]*dto.MetricFamily {
	tb.Helper()
	resp, err := http.Get(url + "/metrics")
	require.NoError(tb, err)
	defer func() { _ = resp.Body.Close() }() // test cleanup
	require.Equal(tb, http.StatusOK, resp.StatusCode)
	return parseMetrics(tb, resp.Body)
}

func parseMetrics(tb testing.TB, r io.Reader) map[string]*dto.MetricFamily {
	tb.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	require.NoError(tb, err)
	return mfs
}

// sample returns the value of the series of family name whose labels include want.
func sample(tb testing.TB, mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	tb.Helper()
	mf, ok := mfs[name]
	require.Truef(tb, ok, "metric %s missing", name)
	for _, m := range mf.GetMetric() {
		if hasLabels(m, want) {
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetUntyped() != nil:
				return m.GetUntyped().GetValue()
			}
		}
	}
	tb.Fatalf("no %s series with labels %v", name, want)
	return 0
}

// total sums every series of a family.
func total(tb testing.TB, mfs map[string]*dto.MetricFamily, name string) float64 {
	tb.Helper()
	mf, ok := mfs[name]
	require.Truef(tb, ok, "metric %s missing", name)
	s := 0.0
	for _, m := range mf.GetMetric() {
		s += m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	return s
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, lp := range m.GetLabel() {
		got[lp.GetName()] = lp.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func regexpMust(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// getJSON decodes the JSON answer of a GET, e.g. the simulator's /_sim/state.
func getJSON(tb testing.TB, url string, v any) {
	tb.Helper()
	resp, err := http.Get(url)
	require.NoError(tb, err)
	defer func() { _ = resp.Body.Close() }() // test cleanup
	require.NoError(tb, json.NewDecoder(resp.Body).Decode(v))
}

// sendChat sends a built chat request and reads the whole answer, recording
// bytes and timing like the runbook's http_probe does.
func sendChat(ctx context.Context, req *http.Request) chatResult {
	start := time.Now()
	var r chatResult
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.err, r.timedOut, r.total = err, errors.Is(err, context.DeadlineExceeded), time.Since(start)
		return r
	}
	defer func() { _ = resp.Body.Close() }() // test cleanup
	r.status = resp.StatusCode
	var buf bytes.Buffer
	chunk := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(chunk)
		if n > 0 && buf.Len() == 0 {
			r.ttfb = time.Since(start)
		}
		buf.Write(chunk[:n])
		if err != nil {
			if !errors.Is(err, io.EOF) {
				r.err, r.timedOut = err, ctx.Err() != nil
			}
			break
		}
	}
	r.bytes, r.body, r.total = buf.Len(), buf.String(), time.Since(start)
	return r
}
