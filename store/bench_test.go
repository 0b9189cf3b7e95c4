package store_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/runbot/runbot/store"
)

// Each operation is one durable (synchronous=FULL) transaction, so these
// measure commit latency on the machine's disk as much as the store.

func BenchmarkCreateRun(b *testing.B) {
	s := openAt(b, dbPath(b))
	ctx := testCtx(b)
	report := json.RawMessage(`{"steps":[{"id":"health","status":"ok"},{"id":"chat","status":"ok","timed_out":true}]}`)
	for b.Loop() {
		if _, err := s.CreateRun(ctx, store.Run{Runbook: "sglang-pd-wedge", Trigger: store.TriggerAlert,
			Params: map[string]string{"deployment": "dsv4"}, Report: report}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRecordAlert(b *testing.B) {
	s := openAt(b, dbPath(b))
	ctx := testCtx(b)
	payload := alertPayload("firing")
	at := time.Date(2026, 11, 29, 8, 30, 0, 0, time.UTC)
	i := 0
	for b.Loop() {
		// 16 fingerprints: mostly repeats, as in an alert storm.
		if _, err := s.RecordAlert(ctx, fmt.Sprintf("fp-%02d", i%16), payload, at.Add(time.Duration(i)*time.Second)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkRecordAlertParallel is a webhook receiving from many
// connections at once: the writers queue on SQLite's one write lock.
func BenchmarkRecordAlertParallel(b *testing.B) {
	s := openAt(b, dbPath(b))
	ctx := testCtx(b)
	payload := alertPayload("firing")
	at := time.Date(2026, 11, 29, 8, 30, 0, 0, time.UTC)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := s.RecordAlert(ctx, fmt.Sprintf("fp-%02d", i%16), payload, at); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}
