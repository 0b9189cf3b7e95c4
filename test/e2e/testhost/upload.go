//go:build e2e

package testhost

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Upload copies the local directory dir into remoteDir on the host (made
// if missing), as tar over the host's SSH connection: what an operator's
// scp -r does.
func (h *Host) Upload(tb testing.TB, dir, remoteDir string) {
	tb.Helper()
	ctx, cancel := context.WithTimeoutCause(context.Background(), 2*time.Minute, fmt.Errorf("upload of %s to %s took too long", dir, h.Name))
	defer cancel()
	pack := exec.CommandContext(ctx, "tar", "-C", dir, "-cf", "-", ".")
	args := append(h.c.sshArgs(), "-o", "ControlMaster=no", "--", h.Name, "mkdir -p "+remoteDir+" && tar --no-same-owner -C "+remoteDir+" -xf -")
	unpack := exec.CommandContext(ctx, "ssh", args...)
	pipe, err := pack.StdoutPipe()
	if err != nil {
		tb.Fatalf("upload to %s: %v", h.Name, err)
	}
	unpack.Stdin = pipe
	var stderr strings.Builder
	unpack.Stderr = &stderr
	if err := pack.Start(); err != nil {
		tb.Fatalf("upload to %s: tar: %v", h.Name, err)
	}
	if err := unpack.Run(); err != nil {
		tb.Fatalf("upload to %s%s: %v: %s", h.Name, h.c.stepSuffix(), err, stderr.String())
	}
	if err := pack.Wait(); err != nil {
		tb.Fatalf("upload to %s: tar: %v", h.Name, err)
	}
}
