package migrate

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"
)

// benchDocs is the size of BenchmarkBackfill's source index: restaurants
// around US cities with their dishes. 200,000 by default: with 1,000,000
// (-bench-docs 1000000) one copy takes over a minute on the emulator,
// whose sorted page search costs a sort of the whole shard per page, and
// the benchmark about four minutes and 6 GB.
var benchDocs = flag.Int("bench-docs", 200_000, "documents in BenchmarkBackfill's source index")

// BenchmarkBackfill copies a source index of -bench-docs documents (18
// shards) into a 24-shard target on the emulator, with 1, 2 and 4 slices
// at a time. The source is written once, before timing; every iteration
// copies it whole into a fresh target. The emulator serialises every
// request under one lock, so the figures measure the job's overhead and
// its overlap of reads and writes, not a cluster's throughput.
func BenchmarkBackfill(b *testing.B) {
	e, docs := benchSource(b, *benchDocs)
	for _, slices := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("slices=%d", slices), func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			var copied int64
			var elapsed time.Duration
			for range b.N {
				b.StopTimer()
				if _, err := e.m.Load(ctx); err == nil {
					if err := e.m.Cancel(ctx, AckConfig{}); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst}); err != nil {
					b.Fatal(err)
				}
				if _, err := e.m.DualWrites(ctx, AckConfig{}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				rep, err := e.m.Backfill(ctx, BackfillConfig{Slices: slices, Progress: func(BackfillProgress) {}})
				elapsed += time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				copied += rep.Copied
			}
			if copied != int64(len(docs))*int64(b.N) {
				b.Fatalf("copied %d documents in %d runs, want %d each", copied, b.N, len(docs))
			}
			b.ReportMetric(float64(copied)/elapsed.Seconds(), "docs/s")
		})
	}
}

// benchSource is an environment whose source index holds n documents:
// restaurants around US cities with their dishes, written once, before
// any timing, and refreshed.
func benchSource(b *testing.B, n int) (*env, []*testDoc) {
	// About 22.6 documents per restaurant (a median of 20 dishes).
	restaurants := max(1, n*10/226)
	e := newEnv(b, 0)
	e.docs = genDocs(b, restaurants, 20, 11)
	docs := e.docs.all()
	if len(docs) > n {
		docs = docs[:n]
	}
	ctx := context.Background()
	start := time.Now()
	if err := e.docs.write(ctx, e.client, e.v1, e.src, docs); err != nil {
		b.Fatal(err)
	}
	if err := e.admin.Refresh(ctx, e.v1); err != nil {
		b.Fatal(err)
	}
	b.Logf("source %s: %d documents written in %v", e.v1, len(docs), time.Since(start).Round(time.Millisecond))
	return e, docs
}
