// Package browsertest starts headless Chromium (Debian's package) for the
// tests that drive the report pages as a person would.
package browsertest

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Start starts Chromium for one test and returns the context to drive it
// with, bounded by two minutes; the browser stops when the test ends.
func Start(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	require.NoError(t, err, "the browser tests need Debian's chromium (make test-deps installs it)")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeoutCause(ctx, 2*time.Minute, errors.New("the browser test took too long"))
	t.Cleanup(cancel3)
	require.NoError(t, chromedp.Do(ctx), "start chromium")
	return ctx
}
