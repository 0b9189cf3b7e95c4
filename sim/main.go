package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

const usage = `usage: sglang-sim COMMAND [flags]

Roles (each a separate process, launched like the real thing):
  engine --disaggregation-mode prefill|decode [sglang.launch_server flags] [--sim-* flags]
  router --pd-disaggregation --prefill URL [BOOTSTRAP_PORT] --decode URL --host H --port P

Deployments:
  up   --dir DIR [--scenario NAME] [--name sim]   start router, prefill and decode in the background
       [--profile 2025-mid|2025-late|2026-mid|2026-late] [--transfer-backend nixl|mooncake]
       [--metrics on|off] [--request-ids engine|client] [--abort-latency MIN-MAX]
       [--log-tz ZONE] [--overlap on|flag|config|forced]   (up -h lists every flag)
  ctl  --dir DIR start|stop|restart ROLE|all       manage roles like systemctl
  ctl  --dir DIR show ROLE                         systemctl show-style unit state
  ctl  --dir DIR status                            human-readable table
  ctl  --dir DIR fault NAME [--count N ...]        inject pd-wedge, decode-crash, router-down, slow,
                                                   stale-sample, prefill-stall, decode-hang,
                                                   slow-decode [--itl D], or clear
  down --dir DIR                                   stop everything up started

Traffic:
  load --rate R --duration D --timeout T [--stream] URL
`

// Main runs the sglang-sim command line and returns the process exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		_, _ = fmt.Fprint(stderr, usage) // nowhere left to report a failed write to stderr
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var err error
	if (args[0] == "engine" || args[0] == "router") && os.Getenv("GOGC") == "" {
		// The serving roles allocate per request and hold little memory; collecting
		// less often buys throughput on small machines at a few MB of heap.
		debug.SetGCPercent(400)
	}
	switch args[0] {
	case "engine":
		err = RunEngine(ctx, args[1:], stdout, stderr)
	case "router":
		err = RunRouter(ctx, args[1:], stdout, stderr)
	case "load":
		err = runLoadCommand(ctx, args[1:], stdout)
	// up, down and ctl run to the end once started, whatever signal arrives,
	// so that a deployment is never left half-changed (e.g. prefill stalled by
	// an interrupted pd-wedge); their clients' timeouts bound them.
	case "up":
		err = runUp(context.WithoutCancel(ctx), args[1:], stdout)
	case "down":
		err = runDown(context.WithoutCancel(ctx), args[1:], stdout)
	case "ctl":
		err = runCtl(context.WithoutCancel(ctx), args[1:], stdout)
	case "_supervise":
		// The supervisor handles signals itself; the context's handler must not
		// swallow them.
		stop()
		err = runSupervise(args[1:])
	case "help", "-h", "--help":
		if _, err := fmt.Fprint(stdout, usage); err != nil {
			return 1
		}
		return 0
	default:
		_, _ = fmt.Fprintf(stderr, "sglang-sim: unknown command %q\n\n%s", args[0], usage) // nowhere left to report to
		return 2
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		// The flag package has printed the command's usage: asking for it
		// is not a failure.
		return 0
	case err != nil:
		_, _ = fmt.Fprintf(stderr, "sglang-sim %s: %v\n", args[0], err) // nowhere left to report to
		return 1
	}
	return 0
}
