// Command sglang-sim is a fault-injectable simulation of an SGLang prefill/decode
// deployment: router, prefill and decode engines as separate processes that look like
// SGLang from the outside. See package github.com/runbot/runbot/sim.
package main

import (
	"os"

	"github.com/runbot/runbot/sim"
)

func main() {
	os.Exit(sim.Main(os.Args[1:], os.Stdout, os.Stderr))
}
