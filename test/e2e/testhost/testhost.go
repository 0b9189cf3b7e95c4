//go:build e2e

// Package testhost gives end-to-end tests real machines: it boots the project's
// test hosts (test/testhost/up.sh), each a systemd-booted Debian container with
// journald, sshd and the incident's simulated SGLang PD deployment running as
// the systemd units sglang-dsv4-{prefill,decode,router}. Tests reach the hosts
// the way runbot and an engineer do: over SSH with a pinned host key.
//
// Tests that use it run one at a time (Up waits for the previous test's
// cleanup), and every Up hands out pristine hosts: booted for the test, or
// restarted if they were already running. Use Main in TestMain so that hosts
// booted by the test binary are stopped when it exits.
package testhost

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Units and launch scripts of the simulated deployment on every host.
const (
	UnitPrefill   = "sglang-dsv4-prefill"
	UnitDecode    = "sglang-dsv4-decode"
	UnitRouter    = "sglang-dsv4-router"
	PrefillScript = "/root/serve_dsv4_prefill.sh"
	DecodeScript  = "/root/serve_dsv4_decode.sh"
)

// Ports the deployment listens on, on each host's loopback only.
const (
	RouterPort    = 30001
	PrefillPort   = 30100
	BootstrapPort = 8998
	DecodePort    = 30200
)

// Units lists the deployment's units in start order.
var Units = []string{UnitPrefill, UnitDecode, UnitRouter}

// Cluster is a set of running test hosts and the files that describe them.
type Cluster struct {
	Hosts []*Host
	// Inventory is a runbot inventory with every running host and one
	// deployment per host, named "dsv4-" + host name.
	Inventory string
	// KnownHosts pins each host's own host key.
	KnownHosts string
	// SSHConfig lets OpenSSH reach hosts by name: ssh -F SSHConfig th1.
	SSHConfig string
	// Key is the private key that root and runbot log in with.
	Key string
	// RunDir holds the hosts' state, console logs and the files above.
	RunDir string

	mu       sync.Mutex
	step     string
	stepHost string
	stepAt   time.Time
	logs     []attachedLog
}

// Host is one test host.
type Host struct {
	Name       string // "th1"
	Address    string // "10.200.0.11"
	Port       int
	User       string
	Deployment string // "dsv4-th1"
	c          *Cluster
}

// Host returns the host with the given name, or nil.
func (c *Cluster) Host(name string) *Host {
	for _, h := range c.Hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// upTimeout covers the first run on a fresh machine: apt-get installs, the
// image build (1-4 min on 2 cores) and a cold build of sglang-sim.
const upTimeout = 15 * time.Minute

var (
	// hostsInUse serialises tests: all tests share th1..thN, and Up restarts them.
	hostsInUse = make(chan struct{}, 1)
	holderMu   sync.Mutex
	holder     string // the test that holds the hosts

	ownMu      sync.Mutex
	ownChecked bool
	ownHosts   bool // this process booted the hosts, so it stops them
	mainActive bool
)

// Up returns n pristine hosts th1..thN. It boots the ones that are not running and
// restarts the others (a fresh journal, the original launch scripts, the current
// sglang-sim), which takes ~2 s for one or two hosts on a quiet 2-core machine;
// the first run on a machine also builds the host image (1-4 min). It fails the test, naming what is missing, when the
// hosts cannot be booted; it needs root.
//
// Up registers cleanups that, if the test failed, log a report: the last Step,
// each host's unit states and the last journal lines of every unit, and the tail
// of every AttachLog file.
func Up(tb testing.TB, n int) *Cluster {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Fatal("testhost: the test hosts need root (network namespaces, systemd-nspawn); run the e2e tests as root")
	}
	holderMu.Lock()
	h := holder
	holderMu.Unlock()
	if h != "" && (h == tb.Name() || strings.HasPrefix(tb.Name(), h+"/")) {
		tb.Fatalf("testhost: Up called again while %s holds the hosts: call Up once per top-level test and pass the Cluster on", h)
	}
	select {
	case hostsInUse <- struct{}{}:
	case <-time.After(upTimeout):
		tb.Fatal("testhost: another test kept the test hosts for 15 minutes")
	}
	unlock := lockUse(tb)
	setHolder(tb.Name())
	tb.Cleanup(func() {
		setHolder("")
		unlock()
		<-hostsInUse
	})
	claimOwnership()

	dir := scriptsDir()
	ctx, cancel := context.WithTimeout(context.Background(), upTimeout)
	defer cancel()
	start := time.Now()
	out, err := runScript(ctx, filepath.Join(dir, "up.sh"), "--fresh", strconv.Itoa(n))
	if err != nil {
		tb.Fatalf("testhost: up.sh --fresh %d: %v\n%s", n, err, out)
	}
	tb.Logf("testhost: %d host(s) ready in %s", n, time.Since(start).Round(10*time.Millisecond))
	c, err := load(runDir(), n)
	if err != nil {
		tb.Fatalf("testhost: %v\nup.sh said:\n%s", err, out)
	}
	ownMu.Lock()
	ownedWithoutMain := ownHosts && !mainActive
	ownMu.Unlock()
	if ownedWithoutMain {
		// Without Main nobody stops the hosts at exit, so each test does.
		tb.Cleanup(func() { teardown(tb) })
	}
	c.startMux(tb)
	tb.Cleanup(func() { c.stopMux() })
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Log(c.failureReport())
		}
	})
	return c
}

// Main runs the tests and then stops the hosts if this process booted them.
// Hosts that ran before the tests started keep running, and so do all hosts
// when RUNBOT_TESTHOST_KEEP=1 (to look around after a failure). Use it as
//
//	func TestMain(m *testing.M) { os.Exit(testhost.Main(m)) }
func Main(m *testing.M) int {
	ownMu.Lock()
	mainActive = true
	ownMu.Unlock()
	code := m.Run()
	ownMu.Lock()
	own := ownHosts
	ownMu.Unlock()
	if own {
		teardown(nil)
	}
	return code
}

func setHolder(name string) {
	holderMu.Lock()
	holder = name
	holderMu.Unlock()
}

// claimOwnership records, once per process, whether the hosts were already up
// before this process first used them.
func claimOwnership() {
	ownMu.Lock()
	defer ownMu.Unlock()
	if ownChecked {
		return
	}
	ownChecked = true
	_, err := os.Stat(filepath.Join(runDir(), "hosts.tsv"))
	ownHosts = errors.Is(err, os.ErrNotExist)
}

func teardown(tb testing.TB) { //nolint:thelper // TestMain calls it with no test (tb nil), where tb.Helper would panic
	logf := func(format string, args ...any) {
		if tb != nil {
			tb.Logf(format, args...)
		} else {
			fmt.Fprintf(os.Stderr, format+"\n", args...)
		}
	}
	if os.Getenv("RUNBOT_TESTHOST_KEEP") == "1" {
		logf("testhost: RUNBOT_TESTHOST_KEEP=1, hosts keep running: ssh -F %s th1; stop them with test/testhost/down.sh",
			filepath.Join(runDir(), "ssh_config"))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := runScript(ctx, filepath.Join(scriptsDir(), "down.sh")); err != nil {
		logf("testhost: down.sh: %v\n%s", err, out)
	}
}

// runScript runs a testhost script with bash and returns its combined output.
// A cancelled context sends SIGTERM, so the script's exit trap still cleans up.
func runScript(ctx context.Context, script string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return out.String(), err
}

// scriptsDir is test/testhost, found relative to this source file so that tests
// work from any package directory.
func scriptsDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testhost")
}

// UseLock is the file whose flock(2) a process holds while one of its
// tests uses the hosts, and up.sh and down.sh wait for before they restart
// or stop them (unless their caller holds it, UseLockHeldEnv): hostsInUse
// serialises the tests of one process, this the processes (two go test
// runs, or a down.sh by hand, would otherwise restart hosts under a
// running test). It is outside runDir, which down.sh removes.
const UseLock = "/run/runbot-e2e.use.lock"

// lockUse takes UseLock, waiting up to upTimeout for another process, and
// returns its release.
func lockUse(tb testing.TB) func() {
	tb.Helper()
	f, err := os.OpenFile(UseLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		tb.Fatalf("testhost: open %s: %v", UseLock, err)
	}
	deadline := time.Now().Add(upTimeout)
	for waited := false; ; {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			_ = f.Close()
			tb.Fatalf("testhost: another process kept the test hosts (%s) for %s: %v", UseLock, upTimeout, err)
		}
		if !waited {
			tb.Logf("testhost: another process uses the test hosts; waiting for %s", UseLock)
			waited = true
		}
		time.Sleep(time.Second) // polling a lock another process holds; nothing to wake us
	}
	// The scripts this process runs while it holds the lock (up.sh from
	// Up, down.sh from a test that powers a host off) must not wait for it.
	_ = os.Setenv(UseLockHeldEnv, "1") //nolint:usetesting // held across tests until the returned func; Setenv fails only on a malformed name
	return func() {
		_ = os.Unsetenv(UseLockHeldEnv)
		_ = f.Close() // closing the file releases the flock
	}
}

// UseLockHeldEnv, set to 1 in the environment of the scripts a lock holder
// runs, tells up.sh and down.sh that their caller holds UseLock.
const UseLockHeldEnv = "RUNBOT_TESTHOST_USE_LOCK_HELD"

func runDir() string {
	if d := os.Getenv("RUNBOT_TESTHOST_RUN"); d != "" {
		return d
	}
	return "/run/runbot-e2e"
}

// load reads what up.sh wrote and returns hosts th1..thN.
func load(dir string, n int) (*Cluster, error) {
	env, err := readEnv(filepath.Join(dir, "env"))
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		Inventory:  env["RUNBOT_TESTHOST_INVENTORY"],
		KnownHosts: env["RUNBOT_TESTHOST_KNOWN_HOSTS"],
		SSHConfig:  env["RUNBOT_TESTHOST_SSH_CONFIG"],
		Key:        env["RUNBOT_TESTHOST_KEY"],
		RunDir:     dir,
	}
	f, err := os.Open(filepath.Join(dir, "hosts.tsv"))
	if err != nil {
		return nil, fmt.Errorf("read the host list: %w", err)
	}
	defer func() { _ = f.Close() }()
	byName := map[string]*Host{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// NAME ADDRESS PORT USER DEPLOYMENT
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 5 {
			return nil, fmt.Errorf("hosts.tsv: malformed line %q", sc.Text())
		}
		port, err := strconv.Atoi(fields[2])
		if err != nil {
			return nil, fmt.Errorf("hosts.tsv: bad port in %q", sc.Text())
		}
		byName[fields[0]] = &Host{Name: fields[0], Address: fields[1], Port: port, User: fields[3], Deployment: fields[4], c: c}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the host list: %w", err)
	}
	for i := 1; i <= n; i++ {
		h, ok := byName["th"+strconv.Itoa(i)]
		if !ok {
			return nil, fmt.Errorf("host th%d is not in %s", i, f.Name())
		}
		c.Hosts = append(c.Hosts, h)
	}
	return c, nil
}

// readEnv parses up.sh's env file (KEY=value, value possibly double-quoted).
func readEnv(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok {
			env[k] = strings.Trim(v, `"`)
		}
	}
	return env, nil
}

// CPUStat is the cgroup v2 cpu.stat file of everything the host runs
// (its systemd, services and logins), for measuring the host's CPU.
func (h *Host) CPUStat() (string, error) {
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		f := filepath.Join(root, "runbot-e2e", h.Name, "cpu.stat")
		if _, err := os.Stat(f); err == nil {
			return f, nil
		}
	}
	return "", fmt.Errorf("testhost: no cgroup v2 cpu.stat for %s under /sys/fs/cgroup", h.Name)
}
