package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// injectFault posts a fault to the role it belongs to (clear goes to every role
// that runs). For crash faults it waits until the unit has left the active state,
// so that a following `show` reports the failure.
func (d *Deployment) injectFault(ctx context.Context, f Fault, stdout io.Writer) error {
	body, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode fault: %w", err)
	}
	if _, err := ParseFault(body); err != nil {
		return err
	}
	target, _ := FaultRole(f.Name)
	roles := []string{target}
	if target == "" {
		roles = Roles
	}
	var errs []error
	for _, role := range roles {
		resp, err := post(ctx, http.DefaultClient, d.URL(role)+"/_sim/fault", "application/json", bytes.NewReader(body))
		if err != nil {
			if f.Name != FaultClear {
				errs = append(errs, fmt.Errorf("inject %s into %s: %w", f.Name, role, err))
			}
			continue
		}
		out, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if _, err := fmt.Fprintf(stdout, "%s: %s", role, out); err != nil {
			errs = append(errs, err)
		}
		if resp.StatusCode != http.StatusOK {
			errs = append(errs, fmt.Errorf("inject %s into %s: HTTP %d: %s", f.Name, role, resp.StatusCode, bytes.TrimSpace(out)))
			continue
		}
		if f.Name == FaultDecodeCrash || f.Name == FaultRouterDown || f.Name == FaultCrash {
			d.waitInactive(role, 5*time.Second)
		}
	}
	return errors.Join(errs...)
}

func (d *Deployment) waitInactive(role string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		st, err := readUnitState(d.StateFile(role))
		if st = st.effective(); err == nil && st.ActiveState != "active" && st.ActiveState != "deactivating" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
