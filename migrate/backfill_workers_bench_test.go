package migrate

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// workerBenchSlices is the slices each worker of BenchmarkBackfillWorkers
// copies at once.
var workerBenchSlices = flag.Int("workers-bench-slices", 4, "slices each worker of BenchmarkBackfillWorkers copies at once")

// BenchmarkBackfillWorkers copies one source index (18 shards under the
// US map, -reindex-bench-docs documents, as BenchmarkBackfillVsReindex)
// into a fresh 24-shard target with 1 and with 2 workers sharing the
// backfill by their leases: each worker its own Migrator (its own state
// store, client pool and bulk writers), each copying
// -workers-bench-slices slices at a time, all started together; the copy
// ends when every worker has returned. With -count the two alternate, so
// that they meet the same load on a shared node. Every target is checked
// against the source shard by shard (every document there, on its shard
// of the new map) before it is deleted.
//
//	go test -tags realcluster -run '^$' -bench BackfillWorkers -benchtime 1x -count 3 ./migrate/
func BenchmarkBackfillWorkers(b *testing.B) {
	e, docs := benchSource(b, *reindexBenchDocs)
	want := int64(len(docs))
	r := &reindexer{e: e, admin: e.admin, want: want}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			ms := make([]*Migrator, workers)
			for i := range ms {
				ms[i] = e.migrator(nil)
			}
			var takeovers float64
			r.run(b, func(ctx context.Context, _ int) (string, error) {
				if _, err := e.m.Load(ctx); err == nil {
					if err := e.m.Cancel(ctx, AckConfig{}); err != nil {
						return "", err
					}
				}
				mig, err := e.m.Create(ctx, CreateConfig{Map: e.dst})
				if err != nil {
					return "", err
				}
				_, err = e.m.DualWrites(ctx, AckConfig{})
				return mig.Target.Index, err
			}, func(ctx context.Context, _ string) error {
				errs := make([]error, workers)
				var wg sync.WaitGroup
				for i, m := range ms {
					wg.Go(func() {
						_, errs[i] = m.Backfill(ctx, BackfillConfig{Slices: *workerBenchSlices, Worker: fmt.Sprintf("bench-%d", i), Progress: func(BackfillProgress) {}})
					})
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						return fmt.Errorf("worker %d: %w", i, err)
					}
				}
				mig, err := e.m.Load(ctx)
				if err != nil {
					return err
				}
				if t := backfillTotals(mig.Backfill); t.Checkpointed != want || t.SlicesDone != t.Slices {
					return fmt.Errorf("backfill: %+v, want %d documents checkpointed in every slice", t, want)
				}
				return nil
			}, true)
			for _, m := range ms {
				takeovers += testutil.ToFloat64(m.met.takeovers)
			}
			b.ReportMetric(takeovers/float64(b.N), "takeovers/op")
		})
	}
}
