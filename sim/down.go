package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
)

// runDown implements `sglang-sim down --dir DIR`: it stops every role it started.
func runDown(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	dir := fs.String("dir", "", "deployment directory")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("usage: sglang-sim down --dir DIR")
	}
	d, err := LoadDeployment(*dir)
	if err != nil {
		return err
	}
	// Everything stops at once: down has no ordering to respect, and it should be quick.
	var wg sync.WaitGroup
	errs := make([]error, len(Roles))
	for i, role := range Roles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.stopRole(role)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := d.apply(ctx, "stop", Roles, 0, stdout); err != nil {
		return err
	}
	for _, role := range Roles {
		if st, _ := readUnitState(d.StateFile(role)); alive(st.MainPID) || alive(st.SupervisorPID) {
			return fmt.Errorf("%s is still running after down (pid %d)", role, st.MainPID)
		}
	}
	return nil
}
