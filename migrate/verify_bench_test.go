package migrate

import (
	"context"
	"flag"
	"testing"
	"time"
)

var verifyBenchDocs = flag.Int("verify-bench-docs", 50_000, "documents in BenchmarkVerifyIDs's source index")

// BenchmarkVerifyIDs verifies, by ids, a backfilled target of
// -verify-bench-docs documents (18 source shards, 24 target shards): the
// scan of every shard's range of the source and of every target shard,
// merged by doc_id. The source is written and copied once, before
// timing. On the emulator the figures are the job's overhead, not a
// cluster's speed (it serialises requests and sorts a shard per page).
//
//	go test -run '^$' -bench '^BenchmarkVerifyIDs$' -benchtime 3x ./migrate/
func BenchmarkVerifyIDs(b *testing.B) {
	e, docs := benchSource(b, *verifyBenchDocs)
	ctx := context.Background()
	if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst}); err != nil {
		b.Fatal(err)
	}
	if _, err := e.m.DualWrites(ctx, AckConfig{}); err != nil {
		b.Fatal(err)
	}
	if _, err := e.m.Backfill(ctx, BackfillConfig{Progress: func(BackfillProgress) {}}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var elapsed time.Duration
	for range b.N {
		t0 := time.Now()
		ver, err := e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 1})
		elapsed += time.Since(t0)
		if err != nil || !ver.OK {
			b.Fatalf("Verify = %v", err)
		}
	}
	b.ReportMetric(float64(len(docs)*b.N)/elapsed.Seconds(), "docs/s")
}
