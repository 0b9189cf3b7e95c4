package web_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/incident"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/web"
)

// The page of a run with a long output shows its first and last thousand
// lines of each list and says how many it left out; the counts, the
// redaction and the postmortem draft are those of the whole run.
func TestLongRunPageShowsHeadAndTail(t *testing.T) {
	t.Parallel()
	const lines = 5000
	st, id := storeReport(t, bigReport(lines))
	site := siteOver(t, st)
	get := func(path string) string {
		req := httptest.NewRequest(http.MethodGet, "/runs/"+id+path, nil)
		req.Header.Set("X-Forwarded-User", "oncall")
		w := httptest.NewRecorder()
		site.ServeHTTP(w, req)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		return w.Body.String()
	}
	page := get("")
	for _, want := range []string{
		"5000 evidence line(s)",
		`<span class="omitted">[… 3000 lines left out here …]</span>`,
		`<tr class="omitted"><td colspan="4">[… 3000 events left out here …]</td></tr>`,
		// The raw output is one text, cut by lines.
		`[… 3000 lines (`,
		"#token: 4096,", // the first line
		"#token: 9095,", // the last
	} {
		require.Contains(t, page, want)
	}
	require.NotContains(t, page, "#token: 6000,", "a line from the middle")
	require.NotContains(t, page, "hunter")
	require.Less(t, len(page), 3<<20)

	// The draft is the one the whole run makes.
	r, err := redact.New(nil)
	require.NoError(t, err)
	inc, err := incident.LoadRedacted(t.Context(), st, id, r)
	require.NoError(t, err)
	var want bytes.Buffer
	require.NoError(t, inc.Markdown(&want, ""))
	require.Equal(t, want.String(), get("/postmortem.md"))
	require.Contains(t, want.String(), "4988 more line(s)")
}

// blockingStore holds every GetRun until release is closed, saying on
// entered that one began.
type blockingStore struct {
	web.Store
	entered chan struct{}
	release chan struct{}
}

func (b *blockingStore) GetRun(ctx context.Context, id string) (store.Run, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.Store.GetRun(ctx, id)
}

// A page that cannot start because MaxPages others are being made is
// answered 503 with a Retry-After, and the page being made is not
// disturbed.
func TestBusySiteAsksToRetry(t *testing.T) {
	t.Parallel()
	st, id := storeReport(t, bigReport(10))
	bs := &blockingStore{Store: st, entered: make(chan struct{}, 2), release: make(chan struct{})}
	site, err := web.New(web.Config{Logger: quiet(), MaxPages: 1, Proxy: siteProxy}, bs)
	require.NoError(t, err)
	fetch := func(ctx context.Context, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/runs/"+id+path, nil)
		req.Header.Set("X-Forwarded-User", "oncall")
		w := httptest.NewRecorder()
		site.ServeHTTP(w, req)
		return w
	}
	var first *httptest.ResponseRecorder
	var wg sync.WaitGroup
	wg.Go(func() { first = fetch(t.Context(), "") })
	<-bs.entered

	for _, path := range []string{"", "/postmortem.md", "/timeline.png"} {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		w := fetch(ctx, path)
		cancel()
		require.Equal(t, http.StatusServiceUnavailable, w.Code, path)
		require.Equal(t, "5", w.Header().Get("Retry-After"), path)
		require.Contains(t, w.Body.String(), "Reload the page in a few seconds", path)
	}

	close(bs.release)
	wg.Wait()
	require.Equal(t, http.StatusOK, first.Code, first.Body.String())
	require.Contains(t, first.Body.String(), "Decode batch")
}
