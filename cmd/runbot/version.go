package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release this binary was built as; `make release` sets it
// with -ldflags "-X main.version=…". A plain `go build` says "dev".
var version = "dev"

// commit is the commit the release was built from, set like version. When
// empty, the Go toolchain's VCS stamp says it (absent with -buildvcs=false).
var commit = ""

// buildInfo is what `runbot version` prints: the release, the commit it was
// built from (from the Go toolchain's VCS stamp, with "+dirty" when the
// tree had uncommitted changes) and the Go version, so a bug report names
// exactly what ran.
func buildInfo() string {
	rev, dirty := commit, ""
	if bi, ok := debug.ReadBuildInfo(); ok && rev == "" {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && s.Value != "":
				rev = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("runbot %s (commit %s%s, %s, %s/%s)", version, rev, dirty, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print runbot's version, the commit it was built from and its Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), buildInfo())
			return err
		},
	}
}
