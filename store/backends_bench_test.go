package store_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/runbot/runbot/store"
)

// BenchmarkBackends runs the store's hottest paths on both backends in one
// run, so that their ratio is measured on one machine at one time: a run's
// life (CreateRun then FinishRun, two durable transactions) and a work
// item's (ClaimWork then CompleteWork), the latter also from 4 goroutines
// per CPU at once, where PostgreSQL's claimers run side by side and SQLite's queue
// on its one write lock. PostgreSQL is the test cluster on a unix socket,
// at its defaults (fsync on, synchronous_commit on).
func BenchmarkBackends(b *testing.B) {
	for _, be := range []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"sqlite", func(b *testing.B) store.Store {
			b.Helper()
			return openAt(b, dbPath(b))
		}},
		{"postgres", func(b *testing.B) store.Store {
			b.Helper()
			return openPostgresAt(b, postgresURL(b))
		}},
	} {
		b.Run(be.name+"/CreateFinishRun", func(b *testing.B) {
			s, ctx := be.open(b), testCtx(b)
			report := json.RawMessage(`{"steps":[{"id":"health","status":"ok"}],"outcome":"ok"}`)
			for b.Loop() {
				r, err := s.CreateRun(ctx, store.Run{Runbook: "sglang-pd-wedge", Trigger: store.TriggerAlert,
					Params: map[string]string{"deployment": "dsv4"}})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.FinishRun(ctx, r.ID, store.RunFinished, store.OutcomeOK, report); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(be.name+"/ClaimCompleteWork", func(b *testing.B) {
			// b.N, not b.Loop: the queue must hold b.N items before the
			// timed loop starts.
			s := be.open(b)
			enqueue(b, s, b.N)
			for range b.N {
				claimComplete(b, s)
			}
		})
		b.Run(be.name+"/ClaimCompleteWorkParallel", func(b *testing.B) {
			s := be.open(b)
			enqueue(b, s, b.N)
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					claimComplete(b, s)
				}
			})
		})
	}
}

// enqueue queues n items before the timed part of a benchmark.
func enqueue(b *testing.B, s store.Store, n int) {
	b.Helper()
	for range n {
		if _, _, err := s.Enqueue(testCtx(b), store.Work{Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
}

func claimComplete(b *testing.B, s store.Store) {
	b.Helper()
	w, err := s.ClaimWork(b.Context())
	if errors.Is(err, store.ErrNoWork) {
		b.Error("the queue ran dry: enqueue as many items as iterations")
		return
	}
	if err != nil {
		b.Error(err)
		return
	}
	if _, err := s.CompleteWork(b.Context(), w.ID); err != nil {
		b.Error(err)
	}
}
