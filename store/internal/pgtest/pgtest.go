// Package pgtest runs a throwaway PostgreSQL cluster for the tests of one
// test binary: the real server from the Debian postgresql package, started
// with initdb and pg_ctl in a temporary directory, reachable only through a
// unix socket there, run by the postgres system user when the tests run as
// root (PostgreSQL refuses to run as root). Each test gets a new database.
//
// A test binary wires it in its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// and a test asks for a database with NewDatabase, which returns its
// postgres:// URL. The cluster starts on
// the first NewDatabase, so a run that selects no PostgreSQL test pays
// nothing. When the postgresql package is missing, NewDatabase fails the
// test naming `apt-get install postgresql`, unless RUNBOT_SKIP_POSTGRES=1
// says to skip it.
package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// SkipEnv names the environment variable that, set to 1, skips the
// PostgreSQL tests instead of failing them when PostgreSQL is missing.
const SkipEnv = "RUNBOT_SKIP_POSTGRES"

// stepTimeout bounds each step of starting and stopping the cluster.
const stepTimeout = 2 * time.Minute

var (
	once    sync.Once
	cluster *Cluster
	errRun  error
	dbSeq   atomic.Int64
)

// Main runs the tests of m and stops the cluster if one was started. It
// returns m.Run's exit code, or 1 if the cluster could not be stopped.
func Main(m *testing.M) int {
	code := m.Run()
	if err := StopCluster(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// StopCluster stops the binary's cluster if one was started, for a
// TestMain that already has its own wrapper around m.Run (the e2e tests'
// test hosts) and so cannot use Main.
func StopCluster() error {
	if cluster == nil {
		return nil
	}
	if err := cluster.Stop(); err != nil {
		return fmt.Errorf("stop the PostgreSQL cluster: %w", err)
	}
	return nil
}

// NewDatabase creates an empty database on the binary's cluster, starting
// the cluster first if needed, and returns its DSN. The database is dropped
// when tb ends, after the cleanups tb registers later (the stores on it).
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	once.Do(func() { cluster, errRun = Start() })
	if errRun != nil {
		if errors.Is(errRun, ErrNotInstalled) && os.Getenv(SkipEnv) == "1" {
			tb.Skipf("%v (%s=1)", errRun, SkipEnv)
		}
		tb.Fatalf("start PostgreSQL: %v", errRun)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	ctx, cancel := context.WithTimeoutCause(context.Background(), stepTimeout, errors.New("create a test database took too long"))
	defer cancel()
	if _, err := cluster.admin.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
		tb.Fatalf("create test database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeoutCause(context.Background(), stepTimeout, errors.New("drop a test database took too long"))
		defer cancel()
		if _, err := cluster.admin.ExecContext(ctx, `DROP DATABASE `+name+` WITH (FORCE)`); err != nil {
			tb.Errorf("drop test database %s: %v", name, err)
		}
	})
	return cluster.DSN(name)
}

// ErrNotInstalled says that PostgreSQL's server binaries are not installed.
var ErrNotInstalled = errors.New("PostgreSQL is not installed: apt-get install postgresql")

// Cluster is a running throwaway PostgreSQL cluster.
type Cluster struct {
	dir   string // temporary directory: data/ and the socket
	bin   string // the server's bin directory
	user  string // OS user the server runs as; "" for the current one
	admin *sql.DB
	// watchdog stops the cluster and removes dir when its stdin closes:
	// on Stop, and when the test binary dies in any way (a panic, a
	// timeout, SIGKILL), since the kernel closes the pipe then too.
	watchdog *exec.Cmd
	pipe     io.WriteCloser
}

// superuser is the cluster's database superuser; the socket trusts it.
const superuser = "runbot"

// Start initializes and starts a new cluster in a temporary directory.
func Start() (*Cluster, error) {
	bin, err := serverBin()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root; the package's system user
		// runs it.
		if _, err := user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("the postgres system user is missing (%w): apt-get install postgresql", ErrNotInstalled)
		}
		c.user = "postgres"
	}
	if c.dir, err = os.MkdirTemp("", "runbot-pg-"); err != nil {
		return nil, fmt.Errorf("create cluster directory: %w", err)
	}
	if err := c.chownDir(); err != nil {
		_ = os.RemoveAll(c.dir) // the chown error is the one to report
		return nil, err
	}
	if err := c.startWatchdog(); err != nil {
		_ = os.RemoveAll(c.dir) // the watchdog error is the one to report
		return nil, err
	}
	if err := c.initAndStart(); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

// initdbGlob is where the Debian postgresql package puts initdb, one
// directory per major version.
var initdbGlob = "/usr/lib/postgresql/*/bin/initdb"

// serverBin finds the newest installed server's bin directory.
func serverBin() (string, error) {
	found, _ := filepath.Glob(initdbGlob)
	if len(found) == 0 {
		return "", ErrNotInstalled
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) < version(found[j]) })
	return filepath.Dir(found[len(found)-1]), nil
}

func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

func (c *Cluster) chownDir() error {
	if c.user == "" {
		return nil
	}
	u, err := user.Lookup(c.user)
	if err != nil {
		return fmt.Errorf("look up user %s: %w", c.user, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(c.dir, uid, gid); err != nil {
		return fmt.Errorf("give %s to %s: %w", c.dir, c.user, err)
	}
	return nil
}

// command runs a server binary as the cluster's user.
func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.user != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.user, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.dir
	// Its own process group: a ^C to the test run reaches the test binary,
	// whose death the watchdog handles, not the server in the middle of
	// starting.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

func (c *Cluster) startWatchdog() error {
	pgctl := filepath.Join(c.bin, "pg_ctl")
	stop := `"$1" -D "$2" -m immediate -w stop >/dev/null 2>&1`
	if c.user != "" {
		stop = `runuser -u "$3" -- ` + stop
	}
	// read returns at EOF, when the test binary closed or lost the pipe.
	script := `read -r _; if [ -f "$2/postmaster.pid" ]; then ` + stop + `; fi; rm -rf "$4"`
	// No deadline: the watchdog lives as long as the test binary does.
	cmd := exec.CommandContext(context.Background(), "sh", "-c", script, "sh", pgctl, filepath.Join(c.dir, "data"), c.user, c.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The watchdog holds the binary's stderr until it is done, so whoever
	// reads that to its end (go test, a test running this binary) knows
	// the cluster is gone by then.
	cmd.Stderr = os.Stderr
	pipe, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("start the cluster's watchdog: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the cluster's watchdog: %w", err)
	}
	c.watchdog, c.pipe = cmd, pipe
	return nil
}

func (c *Cluster) initAndStart() error {
	ctx, cancel := context.WithTimeoutCause(context.Background(), stepTimeout, errors.New("initdb took too long"))
	defer cancel()
	data := filepath.Join(c.dir, "data")
	if err := run(c.command(ctx, "initdb", "-D", data, "-U", superuser, "--auth=trust", "-E", "UTF8", "--no-sync")); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	ctx, cancel = context.WithTimeoutCause(context.Background(), stepTimeout, errors.New("pg_ctl start took too long"))
	defer cancel()
	// No TCP at all: the socket in the cluster's own directory is the only
	// way in, so nothing else on the machine can reach it or clash with it.
	opts := fmt.Sprintf("-c listen_addresses='' -c unix_socket_directories='%s'", c.dir)
	if err := run(c.command(ctx, "pg_ctl", "-D", data, "-l", filepath.Join(c.dir, "server.log"), "-o", opts, "-w", "start")); err != nil {
		return fmt.Errorf("pg_ctl start: %w (log: %s)", err, c.serverLog())
	}
	cfg, err := pgx.ParseConfig(c.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("parse the test cluster's DSN: %w", err)
	}
	c.admin = stdlib.OpenDB(*cfg)
	ctx, cancel = context.WithTimeoutCause(context.Background(), stepTimeout, errors.New("connect to the test cluster took too long"))
	defer cancel()
	if err := c.admin.PingContext(ctx); err != nil {
		return fmt.Errorf("connect to the test cluster: %w", err)
	}
	return nil
}

// DSN is the URL of database name on the cluster, through its socket.
func (c *Cluster) DSN(name string) string {
	q := url.Values{"host": {c.dir}, "sslmode": {"disable"}}
	return (&url.URL{Scheme: "postgres", User: url.User(superuser), Path: "/" + name, RawQuery: q.Encode()}).String()
}

func (c *Cluster) serverLog() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
	return string(bytes.TrimSpace(b))
}

// Stop stops the server and removes its directory.
func (c *Cluster) Stop() error {
	if c.admin != nil {
		_ = c.admin.Close() // the cluster goes away anyway
	}
	if c.watchdog == nil {
		return nil
	}
	_ = c.pipe.Close() // closing is the signal; the watchdog's exit reports
	err := c.watchdog.Wait()
	c.watchdog = nil
	if err != nil {
		return fmt.Errorf("stop the cluster in %s: %w", c.dir, err)
	}
	if _, err := os.Stat(c.dir); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cluster directory %s was not removed", c.dir)
	}
	return nil
}

func run(cmd *exec.Cmd) error {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}
