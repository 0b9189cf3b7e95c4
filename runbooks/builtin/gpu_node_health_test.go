package builtin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks"
)

// gpuCase is one testdata/gpu-node-health/*.yaml file: what nvidia-smi
// and the kernel log said on a node, and what the runbook must conclude.
type gpuCase struct {
	Doc       string `yaml:"doc"`
	Source    string `yaml:"source"`
	QueryExit int    `yaml:"query_exit"`
	Query     string `yaml:"query"`
	XML       string `yaml:"xml"`
	Kernel    string `yaml:"kernel"`
	Expect    struct {
		Diagnoses      []string `yaml:"diagnoses"`
		Findings       []string `yaml:"findings"`
		AbsentFindings []string `yaml:"absent_findings"`
	} `yaml:"expect"`
}

// TestGPUNodeHealthCases runs gpu-node-health, at its defaults, over a
// real sshd against each case in testdata/gpu-node-health. No GPU is on
// these machines, so the node's nvidia-smi and journalctl are the
// stand-ins in testdata/gpu-node-health/bin, first on the session's PATH
// (sshd's SetEnv), printing the case's outputs; everything else — the
// shell, awk, the SSH session, the runbook's parsing and expressions — is
// what runs on a real node.
func TestGPUNodeHealthCases(t *testing.T) {
	files, err := filepath.Glob("testdata/gpu-node-health/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	seen := map[string]bool{}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			c, rep := runGPUCase(t, file, name)
			for _, f := range rep.Findings {
				t.Logf("  %s: %s", f.ID, f.Summary)
			}
			for _, d := range rep.Diagnoses {
				t.Logf("  diagnosis %s: %s", d.ID, d.Summary)
			}
			require.Empty(t, rep.Inconclusive)
			require.ElementsMatch(t, c.Expect.Diagnoses, diagnosisIDs(rep))
			got := findingIDs(rep)
			for _, f := range c.Expect.Findings {
				require.Contains(t, got, f)
			}
			for _, f := range c.Expect.AbsentFindings {
				require.NotContains(t, got, f)
			}
			for _, d := range c.Expect.Diagnoses {
				seen[d] = true
			}
		})
	}
	// Every diagnosis the runbook can give has a case.
	for _, d := range []string{"healthy", "driver_down", "gpu_missing", "xid_errors", "ecc_uncorrectable", "retired_pages_pending", "application_faults"} {
		require.True(t, seen[d], "no case gives %s", d)
	}
}

// TestGPUNodeHealthNamesTheXid: the diagnosis of a node whose GPU fell
// off the bus names Xid 79 and the GPU's PCI address, and the one of an
// application fault names the application Xids and not the hardware.
func TestGPUNodeHealthNamesTheXid(t *testing.T) {
	for _, tc := range []struct{ file, diagnosis, want, notWant string }{
		{"gpu-fell-off-the-bus", "xid_errors", "Xid 79 (a GPU fell off the bus)", ""},
		{"fell-off-the-bus-no-xid", "xid_errors", "no Xid line, but the driver's \"fallen off the bus\" message (a GPU fell off the bus)", "Xid 79"},
		{"double-bit-ecc", "xid_errors", "(48: double-bit ECC error)", "fell off"},
		{"application-xids", "application_faults", "Xid 31, 13, 43", ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, rep := runGPUCase(t, filepath.Join("testdata/gpu-node-health", tc.file+".yaml"), "")
			var summary string
			for _, d := range rep.Diagnoses {
				if d.ID == tc.diagnosis {
					summary = d.Summary
				}
			}
			require.Contains(t, summary, tc.want)
			if tc.notWant != "" {
				require.NotContains(t, summary, tc.notWant)
			}
		})
	}
}

// runGPUCase serves a case's outputs through the stand-ins on a fresh
// sshd and runs gpu-node-health against it at the runbook's defaults;
// with -update and a case name the run becomes a recorded case.
func runGPUCase(t *testing.T, file, caseName string) (gpuCase, *runbooks.Report) {
	t.Helper()
	bin, err := filepath.Abs("testdata/gpu-node-health/bin")
	require.NoError(t, err)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var c gpuCase
	require.NoError(t, yaml.Unmarshal(data, &c))
	require.NotEmpty(t, c.Source, "a case says where its outputs come from")
	require.NotEmpty(t, c.Expect.Diagnoses)
	dir := t.TempDir()
	for f, content := range map[string]string{
		"nvidia-smi-query.csv": c.Query,
		"nvidia-smi-q.xml":     c.XML,
		"kernel.log":           c.Kernel,
		"exit":                 strconv.Itoa(c.QueryExit) + "\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(content), 0o600))
	}
	// sshd takes only the first SetEnv line, so SHLVL (see sshdtest) is
	// repeated here.
	srv := sshdtest.Start(t, sshdtest.Options{Config: []string{
		fmt.Sprintf("SetEnv SHLVL=1 PATH=%s:/usr/local/bin:/usr/bin:/bin RUNBOT_GPU_FIXTURE=%s", bin, dir),
	}})
	return c, runBuiltin(t, gpuInventory(t, srv), "gpu-node-health", caseName, map[string]string{"host": "gpu"})
}

func gpuInventory(t *testing.T, srv *sshdtest.Server) *inventory.Inventory {
	t.Helper()
	y := fmt.Sprintf("hosts:\n  gpu: {address: %s, port: %d, user: %s, identity_files: [%s], host_keys: [%q]}\n",
		srv.Host, srv.Port, srv.User, srv.ClientKeyFile, srv.HostPublicKey)
	path := filepath.Join(t.TempDir(), "inventory.yaml")
	require.NoError(t, os.WriteFile(path, []byte(y), 0o600))
	inv, err := inventory.Load(path)
	require.NoError(t, err)
	return inv
}
