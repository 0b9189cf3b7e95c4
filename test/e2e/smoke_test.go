//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/test/e2e/testhost"
)

// chatScript sends one chat completion through the host's router with curl and
// prints the body, then a line "exit=N" with curl's status (28: timed out).
func chatScript(rid string, maxTokens int, timeout time.Duration) string {
	return fmt.Sprintf(`body=$(curl -s -m %d -H 'Content-Type: application/json' -H 'X-Request-Id: %s' `+
		`-d '{"model":"deepseek-v4","messages":[{"role":"user","content":"Say hello"}],"max_tokens":%d}' `+
		`http://127.0.0.1:%d/v1/chat/completions); rc=$?; printf '%%s\nexit=%%d\n' "$body" "$rc"`,
		int(timeout.Seconds()), rid, maxTokens, testhost.RouterPort)
}

// splitChat splits chatScript's output into the body and curl's "exit=N".
func splitChat(out string) (body, status string) {
	i := strings.LastIndex(out, "\nexit=")
	if i < 0 {
		return out, ""
	}
	return strings.TrimSpace(out[:i]), strings.TrimSpace(out[i+1:])
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// chat sends a chat completion through the router and requires an answer with
// maxTokens tokens.
func chat(t *testing.T, h *testhost.Host, rid string, maxTokens int) chatResponse {
	t.Helper()
	out := h.Run(t, chatScript(rid, maxTokens, 20*time.Second))
	body, status := splitChat(out)
	require.Equal(t, "exit=0", status, "curl through the router: %s", out)
	var resp chatResponse
	require.NoError(t, json.Unmarshal([]byte(body), &resp), "chat response %q", body)
	require.Len(t, resp.Choices, 1)
	require.NotEmpty(t, resp.Choices[0].Message.Content, "the answer has text")
	require.Equal(t, maxTokens, resp.Usage.CompletionTokens)
	return resp
}

func healthStatus(t *testing.T, h *testhost.Host, port int) string {
	t.Helper()
	// A refused connection (a unit still starting) is status 000, not a
	// failed test: callers poll this until the service answers.
	return h.Run(t, fmt.Sprintf("curl -s -o /dev/null -w '%%{http_code}' -m 5 http://127.0.0.1:%d/health || true", port))
}

// decodeBatchRe is a "Decode batch" line as journalctl -o short-iso shows it:
// the script's name as identifier and SGLang's [time DPn TPn] prefix.
var decodeBatchRe = regexp.MustCompile(`(?m)^\S+ th\d+ serve_dsv4_decode\.sh\[\d+\]: \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d DP\d TP\d\] Decode batch, #running-req: \d+, #token: \d+, token usage: [\d.]+`)

// TestSmoke checks what every end-to-end story builds on: two hosts, each with the
// incident's three units serving on loopback, reachable over SSH with pinned host
// keys, and described by an inventory runbot loads.
func TestSmoke(t *testing.T) {
	c := testhost.Up(t, 2)

	c.Step(t, nil, "load the inventory up.sh wrote")
	inv, err := inventory.Load(c.Inventory)
	require.NoError(t, err)
	for _, h := range c.Hosts {
		ih := inv.Hosts[h.Name]
		require.NotNil(t, ih, "host %s in the inventory", h.Name)
		require.Equal(t, h.Address, ih.Address)
		require.Equal(t, []string{c.KnownHosts}, ih.KnownHosts)
		dep, err := inv.Deployment(h.Deployment)
		require.NoError(t, err)
		require.Equal(t, testhost.UnitDecode, dep.Roles["decode"].Unit)
		require.Equal(t, testhost.DecodeScript, dep.Roles["decode"].LaunchScript)
		require.Equal(t, fmt.Sprintf("http://127.0.0.1:%d", testhost.RouterPort), dep.Roles["router"].URL)
		require.Equal(t, h.Name, dep.Roles["prefill"].Host)
	}

	c.Step(t, nil, "each host has its own pinned host key")
	known, err := os.ReadFile(c.KnownHosts)
	require.NoError(t, err)
	keys := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(known)), "\n") {
		f := strings.Fields(line)
		require.Len(t, f, 3, "known_hosts line %q", line)
		keys[f[0]] = f[2]
	}
	th1, th2 := c.Hosts[0], c.Hosts[1]
	require.NotEqual(t, keys[th1.Address], keys[th2.Address])
	// th2's key pinned for th1's address must be refused.
	wrong := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(wrong, []byte(th1.Address+" ssh-ed25519 "+keys[th2.Address]+"\n"), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ssh", "-F", c.SSHConfig, "-o", "UserKnownHostsFile="+wrong,
		"-o", "ControlPath=none", th1.Name, "true").CombinedOutput()
	require.Error(t, err, "ssh must refuse a host key that is not th1's")
	require.Contains(t, string(out), "Host key verification failed")

	for _, h := range c.Hosts {
		c.Step(t, h, "the three units are active")
		require.Equal(t, "active\nactive\nactive\n",
			h.Run(t, "systemctl is-active "+strings.Join(testhost.Units, " ")))

		c.Step(t, h, "the router's /health answers 200 inside the host")
		require.Equal(t, "200", healthStatus(t, h, testhost.RouterPort))

		c.Step(t, h, "the deployment listens on the host's loopback only")
		for _, port := range []int{testhost.RouterPort, testhost.PrefillPort, testhost.DecodePort, testhost.BootstrapPort} {
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(h.Address, fmt.Sprint(port)), 2*time.Second)
			if err == nil {
				_ = conn.Close()
			}
			require.Error(t, err, "port %d must not be reachable on %s", port, h.Address)
		}

		c.Step(t, h, "a chat completion through the router returns tokens")
		// 48 tokens: more than --decode-log-interval 40, so decode logs a batch line.
		chat(t, h, "e2e-smoke-"+h.Name, 48)

		c.Step(t, h, "the decode unit's journal has SGLang's Decode batch lines")
		testhost.Eventually(t, 10*time.Second, "a Decode batch line in decode's journal", func() (bool, string) {
			journal := h.Journal(t, testhost.UnitDecode, 200)
			return decodeBatchRe.MatchString(journal), journal
		})
	}
}

// TestSmokePDWedge checks that the simulator's pd-wedge fault works inside a host
// like the incident: /health stays 200, chats hang with zero bytes, decode logs
// the aborts, and restarting both engines with systemctl brings the service back.
func TestSmokePDWedge(t *testing.T) {
	c := testhost.Up(t, 1)
	h := c.Hosts[0]

	c.Step(t, h, "a chat works before the wedge")
	chat(t, h, "e2e-before-wedge", 8)

	c.Step(t, h, "inject pd-wedge into decode through /_sim/fault")
	out := h.Fault(t, "decode", `{"fault":"pd-wedge"}`)
	require.Contains(t, out, `"wedged":true`, "the overlap schedule is on, so the abort burst wedges decode")

	c.Step(t, h, "alive: the router's /health still answers 200")
	require.Equal(t, "200", healthStatus(t, h, testhost.RouterPort))

	// SGLang mints its own request ids and, on NIXL, logs a failure with
	// no reason as "NIXL KVReceiver Exception"; it notices a disconnected
	// client seconds later. The probe's abort is the line that follows it.
	abortRe := regexp.MustCompile(`serve_dsv4_decode\.sh\[\d+\]: \[[^]]+ DP\d TP\d\] Decode transfer failed for request rank=\d+ decode_req\.req\.rid='[0-9a-f]+' decode_req\.req\.bootstrap_room=\d+ with exception NIXL KVReceiver Exception`)
	aborts := func() (int, string) {
		journal := h.Journal(t, testhost.UnitDecode, 200)
		return len(abortRe.FindAllString(journal, -1)), journal
	}
	before, _ := aborts()

	c.Step(t, h, "not working: a chat times out with zero bytes")
	body, status := splitChat(h.Run(t, chatScript("e2e-probe-1", 8, 2*time.Second)))
	require.Equal(t, "exit=28", status, "curl times out")
	require.Empty(t, body, "a wedged deployment returns zero bytes")

	c.Step(t, h, "decode's journal shows the probe's abort, seconds later")
	testhost.Eventually(t, 20*time.Second, "one more NIXL abort line in decode's journal after the probe gave up", func() (bool, string) {
		n, journal := aborts()
		return n > before, journal
	})

	c.Step(t, h, "restart decode and prefill with systemctl")
	h.Run(t, "systemctl restart "+testhost.UnitDecode+" "+testhost.UnitPrefill)
	testhost.Eventually(t, 20*time.Second, "decode and prefill to answer /health with 200", func() (bool, string) {
		d, p := healthStatus(t, h, testhost.DecodePort), healthStatus(t, h, testhost.PrefillPort)
		return d == "200" && p == "200", "decode " + d + ", prefill " + p
	})

	c.Step(t, h, "a chat works again after the restart")
	chat(t, h, "e2e-after-restart", 8)
}

// TestSmokeCrashLoop checks the units' start limit: a broken launch script makes
// decode crash in a loop until systemd stops restarting it. (systemd 252 keeps
// Result=exit-code from the crashes; it logs "Start request repeated too
// quickly" and refuses further starts within StartLimitIntervalSec.)
func TestSmokeCrashLoop(t *testing.T) {
	c := testhost.Up(t, 1)
	h := c.Hosts[0]

	c.Step(t, h, "the units are enabled, as on the incident's machine")
	require.Equal(t, "enabled\nenabled\nenabled\n", h.Run(t, "systemctl is-enabled "+strings.Join(testhost.Units, " ")))

	c.Step(t, h, "break decode's launch script and restart it")
	h.Run(t, "sed -i 's/--port 30200/--port not-a-port/' "+testhost.DecodeScript+
		" && systemctl restart "+testhost.UnitDecode)

	c.Step(t, h, "systemd stops restarting decode after 5 starts")
	testhost.Eventually(t, 30*time.Second, "decode's start limit", func() (bool, string) {
		journal := h.Journal(t, testhost.UnitDecode, 30)
		return strings.Contains(journal, "sglang-dsv4-decode.service: Start request repeated too quickly."), journal
	})
	st := h.UnitState(t, testhost.UnitDecode)
	require.Equal(t, "failed", st["ActiveState"], "%v", st)
	require.Equal(t, "4", st["NRestarts"], "5 starts: the restart plus 4 automatic ones")
	require.Contains(t, h.Journal(t, testhost.UnitDecode, 50), `flag --port: not an integer: "not-a-port"`)

	c.Step(t, h, "a manual start within the interval is refused")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r, err := h.Exec(ctx, "systemctl start "+testhost.UnitDecode)
	require.NoError(t, err)
	require.NotZero(t, r.ExitCode, "systemctl start must fail while the start limit holds")
	require.Equal(t, "failed", h.UnitState(t, testhost.UnitDecode)["ActiveState"])
}
