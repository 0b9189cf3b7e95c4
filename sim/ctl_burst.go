package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// abortBurst is `ctl fault pd-wedge`: the incident's trigger played with real
// requests. It holds n chat completions in flight between prefill and decode (by
// stalling prefill's forward pass, so their KV never leaves), cancels all n clients at
// the same instant, and lifts the stall. The router turns the cancellations into
// aborts on both engines, so both logs carry the burst with matching rooms and the
// rids pd-wedge-burst-N. Whether decode wedges is left to its causal model.
func (d *Deployment) abortBurst(ctx context.Context, n int, stdout io.Writer) error {
	if n <= 0 {
		n = max(d.WedgeBurst, 1)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	if err := postFault(ctx, client, d.URL("prefill"), Fault{Name: FaultPrefillStall}); err != nil {
		return err
	}
	// Clearing is deferred so that prefill recovers even if the burst fails halfway.
	defer func() { _ = postFault(ctx, client, d.URL("prefill"), Fault{Name: FaultClear}) }()

	burstCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := `{"model":"default","messages":[{"role":"user","content":"burst"}],"max_tokens":16}`
			req, _ := http.NewRequestWithContext(burstCtx, http.MethodPost, d.URL("router")+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request-Id", fmt.Sprintf("%s%d", burstRIDPrefix, i+1))
			// Engines mint their own rids (X-Request-Id is ignored), so the burst is
			// followed by the simulator-only tag, which /_sim/state reports.
			req.Header.Set(simTagHeader, fmt.Sprintf("%s%d", burstRIDPrefix, i+1))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		}()
	}
	// Other traffic (a load generator) may be waiting for KV too, so the
	// burst follows its own request ids, not the size of the queue.
	err := waitState(ctx, client, d.URL("decode"), 15*time.Second, func(st decodeTruth) bool { return st.burstInTransfer() >= n })
	cancel()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("pd-wedge: %d requests never reached decode's transfer queue (is the router up?): %w", n, err)
	}
	var final decodeTruth
	if err := waitState(ctx, client, d.URL("decode"), 15*time.Second, func(st decodeTruth) bool { final = st; return st.burstWaiting() == 0 }); err != nil {
		return fmt.Errorf("pd-wedge: decode did not process the aborts: %w", err)
	}
	final.PreallocRIDs, final.TransferRIDs = nil, nil // other traffic's, not news
	final.PreallocTags, final.TransferTags = nil, nil
	b, _ := json.Marshal(final)
	_, err = fmt.Fprintf(stdout, "decode: {\"fault\":\"pd-wedge\",\"aborted\":%d,\"state\":%s}\n", n, b)
	return err
}

// burstRIDPrefix starts the request id of every request of a burst.
const burstRIDPrefix = "pd-wedge-burst-"

// decodeTruth is the part of decode's GET /_sim/state the burst needs.
type decodeTruth struct {
	Wedged       bool     `json:"wedged"`
	Overlap      bool     `json:"overlap_schedule"`
	Transfer     int      `json:"transfer"`
	Running      int      `json:"running"`
	PreallocRIDs []string `json:"prealloc_rids,omitempty"`
	TransferRIDs []string `json:"transfer_rids,omitempty"`
	PreallocTags []string `json:"prealloc_tags,omitempty"`
	TransferTags []string `json:"transfer_tags,omitempty"`
}

// burstInTransfer counts the burst's requests whose KV transfer started.
func (st decodeTruth) burstInTransfer() int { return countPrefix(st.TransferTags, burstRIDPrefix) }

// burstWaiting counts the burst's requests still waiting for their KV.
func (st decodeTruth) burstWaiting() int {
	return countPrefix(st.PreallocTags, burstRIDPrefix) + countPrefix(st.TransferTags, burstRIDPrefix)
}

func countPrefix(ss []string, prefix string) int {
	n := 0
	for _, s := range ss {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

func waitState(ctx context.Context, client *http.Client, url string, timeout time.Duration, done func(decodeTruth) bool) error {
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		resp, err := get(ctx, client, url+"/_sim/state")
		if err == nil {
			var st decodeTruth
			err = json.NewDecoder(resp.Body).Decode(&st)
			_ = resp.Body.Close()
			if err == nil && done(st) {
				return nil
			}
		}
		lastErr = err
		time.Sleep(5 * time.Millisecond)
	}
	if lastErr == nil {
		return fmt.Errorf("timed out after %s (last error: <nil>)", timeout)
	}
	return fmt.Errorf("timed out after %s (last error: %w)", timeout, lastErr)
}

func postFault(ctx context.Context, client *http.Client, url string, f Fault) error {
	body, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode fault: %w", err)
	}
	resp, err := post(ctx, client, url+"/_sim/fault", "application/json", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("inject %s: %w", f.Name, err)
	}
	defer func() { _ = resp.Body.Close() }() // the status is the answer
	if resp.StatusCode != http.StatusOK {
		out, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("inject %s: HTTP %d: %s", f.Name, resp.StatusCode, bytes.TrimSpace(out))
	}
	return nil
}
