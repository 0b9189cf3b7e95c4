// Command ssh-bench is runbot's side of bench/ssh/run.sh: it runs the same
// commands on N hosts named in an OpenSSH client config, one connection per
// host, every host in parallel, and prints how long that took and how much
// memory each open connection holds.
//
//	go run ./bench/ssh -F ssh_config -hosts h1,h2 'uname -r' 'cat /proc/loadavg'
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/remote/sshrun"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ssh-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	config := flag.String("F", "", "OpenSSH client config that names the hosts")
	hostList := flag.String("hosts", "", "comma-separated host aliases")
	parallel := flag.Int("parallel", 0, "hosts at a time (0: all)")
	timeout := flag.Duration("timeout", 2*time.Minute, "deadline for the whole run")
	flag.Parse()
	commands := flag.Args()
	if *config == "" || *hostList == "" || len(commands) == 0 {
		return errors.New("usage: ssh-bench -F config -hosts h1,h2 command [command ...]")
	}
	var hosts []sshrun.Config
	for _, name := range strings.Split(*hostList, ",") {
		c, err := sshrun.Config{Name: name}.FillFromUserConfig(*config)
		if err != nil {
			return err
		}
		hosts = append(hosts, c)
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()

	pool := sshrun.NewPool()
	// Closing the connections after the measurement: nothing left to report.
	defer func() { _ = pool.Close() }()
	start := time.Now()
	results := pool.FanOut(ctx, hosts, *parallel, func(ctx context.Context, r remote.Runner) error {
		for _, c := range commands {
			out, err := r.Run(ctx, remote.Command{Line: c})
			if err != nil {
				return err
			}
			if out.ExitCode != 0 {
				return fmt.Errorf("%q exited %d: %s", c, out.ExitCode, out.Stderr)
			}
		}
		return nil
	})
	wall := time.Since(start)

	// Connections are still open in the pool: this is what they hold.
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
			fmt.Fprintf(os.Stderr, "%s: %v\n", r.Host, r.Err)
		}
	}
	perConn := float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / float64(len(hosts))
	fmt.Printf("hosts=%d commands=%d wall_ms=%.1f failed=%d heap_per_conn_kib=%.1f goroutines_per_conn=%.1f\n",
		len(hosts), len(commands), float64(wall.Microseconds())/1000, failed, perConn/1024,
		float64(runtime.NumGoroutine()-goroutines)/float64(len(hosts)))
	if failed > 0 {
		return fmt.Errorf("%d of %d hosts failed", failed, len(hosts))
	}
	return nil
}
