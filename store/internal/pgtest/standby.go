package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Pair is a PostgreSQL primary with a streaming standby in synchronous
// replication, the two on this machine, for the tests of a failover: kill
// the primary (KillPrimary), promote the standby (Promote) and reach
// whichever is the read-write one through the multi-host URL (DSN), as a
// deployment with a primary and a standby on two machines does.
//
// Each node listens on 127.0.0.1 on a port of its own (a multi-host URL
// names host:port pairs) and on a unix socket in the pair's directory. The
// primary commits only once the standby has flushed the commit
// (synchronous_standby_names names it, synchronous_commit=on), so a commit
// a client saw succeed is on both. The standby runs without
// synchronous_standby_names: promoted, it commits alone, as a new primary
// whose standby is gone must.
//
// Unlike the binary's Cluster, a pair belongs to one test (a failover
// leaves it with one node), and nothing of it outlives the test binary:
// a watchdog of its own stops both servers and removes the directory
// when the binary ends in any way.
type Pair struct {
	Primary, Standby *Node

	dir  string // temporary directory: both data directories, the socket, the logs
	bin  string // the server's bin directory
	user string // OS user the servers run as; "" for the current one
	// watchdog: see Cluster.watchdog.
	watchdog *exec.Cmd
	pipe     io.WriteCloser
}

// Node is one server of a Pair.
type Node struct {
	// Name is the node's role when the pair started ("primary",
	// "standby"); the standby's is also its application_name, which the
	// primary's synchronous_standby_names names.
	Name string
	// Port is its TCP port on 127.0.0.1.
	Port int
	data string
	pair *Pair
}

// PairDatabase is the database a pair serves, created on the primary
// before the standby is copied from it.
const PairDatabase = "runbot"

// NewPair starts a pair for tb and stops it when tb ends. Like NewDatabase,
// it fails tb when PostgreSQL is missing, unless RUNBOT_SKIP_POSTGRES=1
// says to skip it.
func NewPair(tb testing.TB) *Pair {
	tb.Helper()
	p, err := StartPair()
	if err != nil {
		if errors.Is(err, ErrNotInstalled) && os.Getenv(SkipEnv) == "1" {
			tb.Skipf("%v (%s=1)", err, SkipEnv)
		}
		tb.Fatalf("start a PostgreSQL primary and standby: %v", err)
	}
	tb.Cleanup(func() {
		if err := p.Stop(); err != nil {
			tb.Errorf("stop the PostgreSQL pair: %v", err)
		}
	})
	return p
}

// StartPair starts a primary, copies a standby from it with
// pg_basebackup -R, starts the standby and waits until the primary
// streams to it as its synchronous standby.
func StartPair() (*Pair, error) {
	bin, err := serverBin()
	if err != nil {
		return nil, err
	}
	p := &Pair{bin: bin}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root; the package's system user
		// runs it.
		if _, err := user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("the postgres system user is missing (%w): apt-get install postgresql", ErrNotInstalled)
		}
		p.user = "postgres"
	}
	if p.dir, err = os.MkdirTemp("", "runbot-pgpair-"); err != nil {
		return nil, fmt.Errorf("create pair directory: %w", err)
	}
	if err := p.chown(p.dir); err != nil {
		_ = os.RemoveAll(p.dir) // the chown error is the one to report
		return nil, err
	}
	p.Primary = &Node{Name: "primary", data: filepath.Join(p.dir, "primary"), pair: p}
	p.Standby = &Node{Name: "standby", data: filepath.Join(p.dir, "standby"), pair: p}
	if err := p.startWatchdog(); err != nil {
		_ = os.RemoveAll(p.dir) // the watchdog error is the one to report
		return nil, err
	}
	if err := p.start(); err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	return p, nil
}

func (p *Pair) start() error {
	ctx, cancel := context.WithTimeoutCause(context.Background(), stepTimeout, errors.New("starting the PostgreSQL pair took too long"))
	defer cancel()
	var err error
	if p.Primary.Port, err = freePort(); err != nil {
		return err
	}
	if p.Standby.Port, err = freePort(); err != nil {
		return err
	}
	if err := run(p.command(ctx, "initdb", "-D", p.Primary.data, "-U", superuser, "--auth=trust", "-E", "UTF8", "--no-sync")); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	// Only this machine's own connections, replication ones included,
	// whatever initdb's defaults; the standby copies the file.
	hba := "local all all trust\nlocal replication all trust\n" +
		"host all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n"
	if err := p.writeFile(filepath.Join(p.Primary.data, "pg_hba.conf"), hba); err != nil {
		return err
	}
	if err := p.Primary.pgStart(ctx, "-c wal_level=replica -c max_wal_senders=4 -c wal_keep_size=64MB -c synchronous_commit=on"); err != nil {
		return err
	}
	db, err := p.Primary.admin("postgres")
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }() // an admin connection; nothing to keep
	if _, err := db.ExecContext(ctx, `CREATE DATABASE `+PairDatabase); err != nil {
		return fmt.Errorf("create database %s: %w", PairDatabase, err)
	}
	// -R writes standby.signal and primary_conninfo from the connection
	// string, application_name included: that name is what makes the
	// primary count it as its synchronous standby.
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=%s application_name=%s", p.Primary.Port, superuser, p.Standby.Name)
	if err := run(p.command(ctx, "pg_basebackup", "-d", conninfo, "-D", p.Standby.data, "-R", "-X", "stream", "--checkpoint=fast", "--no-sync")); err != nil {
		return fmt.Errorf("pg_basebackup: %w", err)
	}
	if err := p.Standby.pgStart(ctx, ""); err != nil {
		return err
	}
	// Synchronous only now: until the standby streams, every commit would
	// wait for it (CREATE DATABASE above would hang). ALTER SYSTEM writes
	// the primary's postgresql.auto.conf, which the standby copied
	// before: promoted, it names no synchronous standby, where a copy
	// that named one would make it wait for a standby that is gone.
	if _, err := db.ExecContext(ctx, `ALTER SYSTEM SET synchronous_standby_names = '`+p.Standby.Name+`'`); err != nil {
		return fmt.Errorf("make the standby synchronous: %w", err)
	}
	if _, err := db.ExecContext(ctx, `SELECT pg_reload_conf()`); err != nil {
		return fmt.Errorf("make the standby synchronous: %w", err)
	}
	return p.waitSync(ctx, db)
}

// waitSync waits until the primary streams to the standby as its
// synchronous standby: from then on, every commit is on both.
func (p *Pair) waitSync(ctx context.Context, db *sql.DB) error {
	var state, sync string
	for {
		err := db.QueryRowContext(ctx, `SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1`, p.Standby.Name).
			Scan(&state, &sync)
		if err == nil && state == "streaming" && sync == "sync" {
			return nil
		}
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read pg_stat_replication: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the standby does not stream synchronously (state %q, sync_state %q): %w (standby log: %s)",
				state, sync, context.Cause(ctx), p.Standby.serverLog())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// DSN is the multi-host URL of the pair's database: the primary first,
// then the standby, and target_session_attrs=read-write, so that a new
// connection reaches whichever node takes writes, before and after a
// promotion.
func (p *Pair) DSN() string {
	return p.URL(p.Primary, p.Standby)
}

// URL is the multi-host URL of the pair's database through nodes, in that
// order, asking for a read-write session.
func (p *Pair) URL(nodes ...*Node) string {
	hosts := make([]string, len(nodes))
	for i, n := range nodes {
		hosts[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port))
	}
	q := url.Values{"sslmode": {"disable"}, "target_session_attrs": {"read-write"}}
	return "postgres://" + superuser + "@" + strings.Join(hosts, ",") + "/" + PairDatabase + "?" + q.Encode()
}

// DSN is the URL of the pair's database on this node alone.
func (n *Node) DSN() string {
	q := url.Values{"sslmode": {"disable"}}
	return (&url.URL{Scheme: "postgres", User: url.User(superuser), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port)),
		Path: "/" + PairDatabase, RawQuery: q.Encode()}).String()
}

// KillPrimary kills the primary as a crash of its machine would (Kill).
func (p *Pair) KillPrimary() error { return p.Primary.Kill() }

// Kill kills the node as a crash of its machine would: the postmaster is
// frozen first (SIGSTOP) so that it forks nothing more, then it and every
// process it started (backends, WAL sender or receiver, checkpointer) are
// SIGKILLed at once. Nothing is shut down cleanly and nothing more is
// flushed; the kernel closes their sockets, so clients see the
// connection end.
func (n *Node) Kill() error {
	pids, err := n.freeze()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		// A child may have exited meanwhile; what matters is that none
		// is left, which the wait below checks.
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), stepTimeout, errors.New("the killed server's processes did not go away"))
	defer cancel()
	for _, pid := range pids {
		for running(pid) {
			select {
			case <-ctx.Done():
				return fmt.Errorf("kill the %s: process %d: %w", n.Name, pid, context.Cause(ctx))
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	// The pid file would name a pid the kernel may give to another
	// process, which the watchdog's pg_ctl stop would then signal.
	if err := os.Remove(filepath.Join(n.data, "postmaster.pid")); err != nil {
		return fmt.Errorf("kill the %s: %w", n.Name, err)
	}
	return nil
}

// Freeze stops every process of the node (SIGSTOP) without closing
// anything: its machine hangs, or the network to it drops everything.
// Connections to it stay open and go silent, and a new one is accepted
// by the kernel and then never answered. Thaw undoes it.
func (n *Node) Freeze() error {
	_, err := n.freeze()
	return err
}

// Thaw resumes the processes Freeze stopped (SIGCONT).
func (n *Node) Thaw() error {
	pid, err := n.postmasterPID()
	if err != nil {
		return err
	}
	for _, c := range append(children(pid), pid) {
		if err := syscall.Kill(c, syscall.SIGCONT); err != nil {
			return fmt.Errorf("thaw the %s: process %d: %w", n.Name, c, err)
		}
	}
	return nil
}

// freeze stops the node's postmaster first, so that it forks nothing
// more, then its children, and returns them all, the postmaster last.
func (n *Node) freeze() ([]int, error) {
	pid, err := n.postmasterPID()
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("freeze the %s's postmaster %d: %w", n.Name, pid, err)
	}
	kids := children(pid)
	for _, c := range kids {
		_ = syscall.Kill(c, syscall.SIGSTOP) // one that exited meanwhile is no matter
	}
	return append(kids, pid), nil
}

// Promote promotes the standby (pg_ctl promote, which waits until it
// takes writes). It is the new primary then; the old one stays down.
func (p *Pair) Promote() error {
	ctx, cancel := context.WithTimeoutCause(context.Background(), stepTimeout, errors.New("pg_ctl promote took too long"))
	defer cancel()
	if err := run(p.command(ctx, "pg_ctl", "-D", p.Standby.data, "-w", "promote")); err != nil {
		return fmt.Errorf("promote the standby: %w (log: %s)", err, p.Standby.serverLog())
	}
	return nil
}

// Stop stops both servers, whatever state a test left them in, and
// removes the pair's directory.
func (p *Pair) Stop() error {
	if p.watchdog == nil {
		return nil
	}
	_ = p.pipe.Close() // closing is the signal; the watchdog's exit reports
	err := p.watchdog.Wait()
	p.watchdog = nil
	if err != nil {
		return fmt.Errorf("stop the pair in %s: %w", p.dir, err)
	}
	if _, err := os.Stat(p.dir); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pair directory %s was not removed", p.dir)
	}
	return nil
}

// pgStart starts the node's server on its port and the pair's socket
// directory, with opts added to the server's command line.
func (n *Node) pgStart(ctx context.Context, opts string) error {
	o := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories='%s' %s", n.Port, n.pair.dir, opts)
	if err := run(n.pair.command(ctx, "pg_ctl", "-D", n.data, "-l", n.logFile(), "-o", o, "-w", "start")); err != nil {
		return fmt.Errorf("start the %s: %w (log: %s)", n.Name, err, n.serverLog())
	}
	return nil
}

// admin opens database name on the node.
func (n *Node) admin(name string) (*sql.DB, error) {
	q := url.Values{"host": {"127.0.0.1"}, "port": {strconv.Itoa(n.Port)}, "sslmode": {"disable"}}
	cfg, err := pgx.ParseConfig((&url.URL{Scheme: "postgres", User: url.User(superuser), Path: "/" + name, RawQuery: q.Encode()}).String())
	if err != nil {
		return nil, fmt.Errorf("parse the %s's DSN: %w", n.Name, err)
	}
	return stdlib.OpenDB(*cfg), nil
}

func (n *Node) logFile() string { return filepath.Join(n.pair.dir, n.Name+".log") }

func (n *Node) serverLog() string {
	b, _ := os.ReadFile(n.logFile())
	return strings.TrimSpace(string(b))
}

// postmasterPID reads the postmaster's pid from the first line of
// postmaster.pid.
func (n *Node) postmasterPID() (int, error) {
	b, err := os.ReadFile(filepath.Join(n.data, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("the %s is not running: %w", n.Name, err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return 0, fmt.Errorf("read the %s's postmaster.pid: %w", n.Name, err)
	}
	return pid, nil
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // it exited meanwhile
		}
		// The command name, in parentheses, may hold spaces: the fields
		// after its closing parenthesis are state, then ppid.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		if c, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// running reports whether pid runs: it exists and is not a zombie, which
// a killed server whose parent does not reap it stays.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// freePort returns a TCP port on 127.0.0.1 that nothing listens on now.
func freePort() (int, error) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	return port, nil
}

// command runs a server binary as the pair's user (see Cluster.command).
func (p *Pair) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	path := filepath.Join(p.bin, name)
	var cmd *exec.Cmd
	if p.user != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", p.user, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = p.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// chown gives path to the pair's user.
func (p *Pair) chown(path string) error {
	if p.user == "" {
		return nil
	}
	u, err := user.Lookup(p.user)
	if err != nil {
		return fmt.Errorf("look up user %s: %w", p.user, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(path, uid, gid); err != nil {
		return fmt.Errorf("give %s to %s: %w", path, p.user, err)
	}
	return nil
}

// writeFile writes a file the server reads, owned by the pair's user.
func (p *Pair) writeFile(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return p.chown(path)
}

// startWatchdog starts the pair's watchdog (see Cluster.startWatchdog):
// when its stdin closes, it stops each server still running and removes
// the directory.
func (p *Pair) startWatchdog() error {
	pgctl := filepath.Join(p.bin, "pg_ctl")
	stop := `"$1" -D "$d" -m immediate -w stop >/dev/null 2>&1`
	if p.user != "" {
		stop = `runuser -u "$2" -- ` + stop
	}
	// A frozen server is thawed first, its children too, or it would
	// never act on the stop.
	thaw := `pid=$(head -n 1 "$d/postmaster.pid"); pkill -CONT -P "$pid" 2>/dev/null; kill -CONT "$pid" 2>/dev/null; `
	script := `read -r _; for d in "$3/primary" "$3/standby"; do ` +
		`if [ -f "$d/postmaster.pid" ]; then ` + thaw + stop + `; fi; done; rm -rf "$3"`
	// No deadline: the watchdog lives as long as the test binary does.
	cmd := exec.CommandContext(context.Background(), "sh", "-c", script, "sh", pgctl, p.user, p.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	pipe, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("start the pair's watchdog: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the pair's watchdog: %w", err)
	}
	p.watchdog, p.pipe = cmd, pipe
	return nil
}
