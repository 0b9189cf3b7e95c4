// Command record runs the built-in sglang-pd-wedge runbook against a
// simulated deployment and writes its report as JSON. It makes the
// timeline's report fixtures:
//
//	sglang-sim up --dir D --idle-refresh 1s --decode-log-interval 4
//	sglang-sim load --rate 2 --duration 11m --timeout 35s URL   # history
//	sglang-sim ctl --dir D fault pd-wedge
//	go run ./timeline/testdata/record -inventory D/inventory.yaml -out timeline/testdata/wedge.json
//
// It lives under testdata so that it is not part of the module's packages.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
)

func main() {
	invPath := flag.String("inventory", "", "the simulated deployment's inventory.yaml")
	out := flag.String("out", "", "where to write the report")
	params := flag.String("params", "deployment=sim", "comma-separated name=value runbook params")
	flag.Parse()
	if err := record(*invPath, *out, *params); err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		os.Exit(1)
	}
}

func record(invPath, out, params string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	inv, err := inventory.Load(invPath)
	if err != nil {
		return err
	}
	cat, problems, err := catalog.Load()
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("built-in runbooks: %v", problems)
	}
	rb, err := cat.Get("sglang-pd-wedge")
	if err != nil {
		return err
	}
	ps := map[string]string{}
	for _, kv := range strings.Split(params, ",") {
		k, v, _ := strings.Cut(kv, "=")
		ps[k] = v
	}
	pool := sshrun.NewPool()
	defer pool.Close()
	e := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: &bind.PoolRunners{Inventory: inv, Pool: pool}}}
	p, err := e.Prepare(ctx, rb, ps)
	if err != nil {
		return err
	}
	rep := e.Run(ctx, p, engine.RunOptions{RunID: engine.NewRunID(time.Now()), Trigger: runbooks.TriggerCLI})
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(raw, '\n'), 0o644)
}
