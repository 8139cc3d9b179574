package migrate

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
)

// benchDocs is the size of BenchmarkBackfill's source index: restaurants
// around US cities with their dishes. 200,000 by default: with 1,000,000
// (-bench-docs 1000000) one copy takes over a minute on the emulator,
// whose sorted page search costs a sort of the whole shard per page, and
// the benchmark about four minutes and 6 GB.
var benchDocs = flag.Int("bench-docs", 200_000, "documents in BenchmarkBackfill's source index")

// BenchmarkBackfill copies a source index of -bench-docs documents (18
// shards) into a 24-shard target on the emulator, with 1, 2 and 4 slices
// at a time, each with 0 and 5 ms added to every bulk request (the
// emulator's shard_latency on every shard of the target, which the copy
// writes; a real cluster takes at least that), side by side. The source
// is written once, before timing; every iteration copies it whole into a
// fresh target. The 5 ms runs also report their rate as a fraction of
// the mean of the 0 ms runs at the same slice count ("x_of_0ms"). The
// emulator serialises every request under one lock, so the figures
// measure the job's overhead and its overlap of reads and writes, not a
// cluster's throughput. On the real node (-tags realcluster) the latency
// cannot be added and the 5 ms runs skip.
//
//	go test -run '^$' -bench '^BenchmarkBackfill$' -benchtime 1x -count 3 ./migrate/
func BenchmarkBackfill(b *testing.B) {
	e, docs := benchSource(b, *benchDocs)
	for _, slices := range []int{1, 2, 4} {
		// The 0 ms rates at this slice count, for x_of_0ms.
		var base []float64
		for _, latency := range []time.Duration{0, 5 * time.Millisecond} {
			b.Run(fmt.Sprintf("latency=%v/slices=%d", latency, slices), func(b *testing.B) {
				if latency > 0 {
					realenv.EmulatorOnly(b, "the latency is the emulator's shard_latency fault")
					defer e.srv.ClearFaults()
				}
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
					mig, err := e.m.Create(ctx, CreateConfig{Map: e.dst})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := e.m.DualWrites(ctx, AckConfig{}); err != nil {
						b.Fatal(err)
					}
					if latency > 0 {
						slowIndex(b, e.srv, mig.Target.Index, e.dst.NumShards(), latency)
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
				rate := float64(copied) / elapsed.Seconds()
				b.ReportMetric(rate, "docs/s")
				if latency == 0 {
					base = append(base, rate)
				} else if len(base) > 0 {
					var sum float64
					for _, r := range base {
						sum += r
					}
					b.ReportMetric(rate/(sum/float64(len(base))), "x_of_0ms")
				}
			})
		}
	}
}

// slowIndex adds d to every bulk request that writes to one of the
// index's shards (and every search or count that reads one), replacing
// the emulator's faults.
func slowIndex(b *testing.B, srv *osfake.TestServer, index string, shards int, d time.Duration) {
	b.Helper()
	slow := make([]osfake.ShardLatency, shards)
	for i := range slow {
		slow[i] = osfake.ShardLatency{Index: index, Shard: i, Delay: osfake.Duration(d)}
	}
	if err := srv.SetFaults(osfake.Faults{ShardLatency: slow}); err != nil {
		b.Fatal(err)
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
