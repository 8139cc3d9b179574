package migrate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/schema"
)

// dualWriting takes the migration to the point where the backfill
// starts: the target created and dual writes acknowledged.
func (e *env) dualWriting(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.DualWrites(ctx, AckConfig{}); err != nil {
		t.Fatal(err)
	}
}

// worker is a Migrator of the env's alias standing for a backfill worker
// process of its own: its own state store, metrics and searcher.
func (e *env) worker(clk *fakeClock) *Migrator {
	e.t.Helper()
	if clk != nil {
		return e.migratorOn(clk)
	}
	return e.migrator(nil)
}

// waitFor re-reads the migration until ok holds of it: an event the test
// waits on, not a time. It fails the test if ctx ends first.
func (e *env) waitFor(ctx context.Context, what string, ok func(*schema.Migration) bool) {
	e.t.Helper()
	for {
		rec, err := e.m.store.Load(ctx)
		if err != nil {
			e.t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok(&rec.Migration) {
			return
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			e.t.Fatalf("waiting for %s: %v", what, err)
		}
	}
}

// Several workers, each its own Migrator with its own name, share one
// backfill; one is killed in the middle of a slice (its context ends and
// its leases stay, as after SIGKILL). The others take its slices over once
// its leases expire, from their checkpoints, and every worker returns
// only when every slice is done. The target then holds every source
// document once, at its version, on its shard.
func TestBackfillWorkersOneKilled(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 600)
	ctx := context.Background()
	e.dualWriting(t)
	total := int64(e.docs.live())
	const workers = 3
	ms := make([]*Migrator, workers)
	for i := range ms {
		ms[i] = e.worker(nil)
	}
	// Worker 0 dies when it has read its second page, that page unwritten.
	kill, die := context.WithCancel(ctx)
	defer die()
	ms[0].abandon = true
	var pages atomic.Int64
	ms[0].search = &hookSearcher{Searcher: e.admin, onPage: func(_ context.Context, index string, p bulk.SearchParams, _ *bulk.Page) {
		if index == e.v1 && p.Preference != "" && pages.Add(1) == 2 {
			die()
		}
	}}
	reps := make([]*BackfillReport, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i, m := range ms {
		wctx := ctx
		if i == 0 {
			wctx = kill
		}
		wg.Go(func() {
			reps[i], errs[i] = m.Backfill(wctx, BackfillConfig{Slices: 2, Page: 50, Worker: fmt.Sprintf("worker-%d", i), Lease: 2 * time.Second})
		})
	}
	wg.Wait()
	if !errors.Is(errs[0], context.Canceled) {
		t.Errorf("killed worker: Backfill = %v, want context.Canceled", errs[0])
	}
	var takeovers float64
	for i := 1; i < workers; i++ {
		if errs[i] != nil {
			t.Fatalf("worker-%d: Backfill = %v", i, errs[i])
		}
		takeovers += testutil.ToFloat64(ms[i].met.takeovers)
	}
	// The slice worker 0 was reading when it died was still leased to it.
	if takeovers < 1 {
		t.Errorf("the surviving workers took over %v slices, want at least the one the killed worker held", takeovers)
	}
	mig, err := e.m.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if mig.Phase != schema.PhaseBackfilled {
		t.Errorf("phase %s after the workers, want backfilled", mig.Phase)
	}
	tt := backfillTotals(mig.Backfill)
	if tt.SlicesDone != tt.Slices || tt.Checkpointed != total || !tt.Counted || tt.Copied+tt.Stale != total {
		t.Errorf("totals %+v, want every slice done, %d documents checkpointed and counted", tt, total)
	}
	for _, s := range mig.Backfill {
		if s.Owner != "" {
			t.Errorf("slice %d done but still leased to %s", s.Slice, s.Owner)
		}
	}
	var read int64
	for i, r := range reps {
		t.Logf("worker-%d: read %d, copied %d, stale %d", i, r.Read, r.Copied, r.Stale)
		read += r.Read
	}
	if read < total {
		t.Errorf("the workers read %d documents in all, want at least the %d of the source", read, total)
	}
	if _, err := e.m.Verify(ctx, quickVerify); err != nil {
		t.Fatal(err)
	}
	e.checkTarget(ctx, e.v2)
}

// The frozen worker (lease.go) at the level of the copy: worker a holds
// slice 0 and freezes with a page read; its lease expires; worker b takes
// the slice over and finishes the backfill; a wakes, writes its page
// (stale: b wrote those documents already) and is refused its
// checkpoint, so it leaves the slice, finds everything done and returns.
// The leases are judged by a clock the test moves; a's lease is long
// enough in real time that its renewal timer never fires.
func TestBackfillFrozenWorkerStops(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 600)
	ctx := context.Background()
	e.dualWriting(t)
	clk := &fakeClock{now: time.Now()}
	const page = 20
	a, b := e.worker(clk), e.worker(clk)
	frozen, wake := make(chan struct{}), make(chan struct{})
	var pages atomic.Int64
	a.search = &hookSearcher{Searcher: e.admin, onPage: func(ctx context.Context, index string, p bulk.SearchParams, _ *bulk.Page) {
		if index != e.v1 || p.Preference != "_shards:0" || pages.Add(1) != 3 {
			return
		}
		close(frozen)
		select {
		case <-wake:
		case <-ctx.Done():
		}
	}}
	cfg := BackfillConfig{Slices: 1, Page: page, Lease: MaxLease}
	var aRep *BackfillReport
	var aErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := cfg
		c.Worker = "a"
		aRep, aErr = a.Backfill(ctx, c)
	}()
	<-frozen
	// a has checkpointed its first two pages of slice 0 (the third is the
	// one it froze on).
	e.waitFor(ctx, "a's second checkpoint", func(m *schema.Migration) bool {
		return len(m.Backfill) > 0 && m.Backfill[0].Docs == 2*page
	})
	clk.Sleep(ctx, MaxLease+time.Minute)
	c := cfg
	c.Worker = "b"
	bRep, err := b.Backfill(ctx, c)
	if err != nil {
		t.Fatalf("b: %v", err)
	}
	if n := testutil.ToFloat64(b.met.takeovers); n != 1 {
		t.Errorf("b took over %v slices, want 1 (slice 0, from a)", n)
	}
	close(wake)
	<-done
	if aErr != nil {
		t.Fatalf("a, woken after the takeover: %v", aErr)
	}
	// a wrote the page it held (every copy stale) and read at most one
	// page ahead; it checkpointed only its first two pages.
	if aRep.Read > 4*page || aRep.Stale < page {
		t.Errorf("a read %d and found %d stale after waking, want at most %d read and its page (%d) stale", aRep.Read, aRep.Stale, 4*page, page)
	}
	mig, err := e.m.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src := e.stored(ctx, e.v1, e.src.NumShards())
	var last string
	var n int64
	for id, d := range src {
		if d.Shard == 0 {
			n++
			last = max(last, id)
		}
	}
	if s := mig.Backfill[0]; !s.Done || s.Docs != n || s.After != last || s.Claim != 2 || s.Owner != "" {
		t.Errorf("slice 0: %+v; want done by b's claim (2) with all %d documents, after %q", s, n, last)
	}
	if tt := backfillTotals(mig.Backfill); tt.Checkpointed != int64(e.docs.live()) || tt.Copied+tt.Stale != tt.Checkpointed {
		t.Errorf("totals %+v, want %d documents checkpointed once", tt, e.docs.live())
	}
	t.Logf("a: read %d, copied %d, stale %d; b: read %d, copied %d, stale %d", aRep.Read, aRep.Copied, aRep.Stale, bRep.Read, bRep.Copied, bRep.Stale)
	if _, err := e.m.Verify(ctx, quickVerify); err != nil {
		t.Fatal(err)
	}
	e.checkTarget(ctx, e.v2)
}

// A worker that starts, or finishes, while others checkpoint writes the
// migration document they write, and loses to them as often as they
// write: its start and its finish are retried through the contention,
// as every claim and checkpoint is, not given up after maxConflicts
// (TestBackfillWorkersOneKilled met it on a loaded machine: "the
// migration changed concurrently (10 attempts)"). Here another writer
// changes the document before each of the worker's first writes, more
// times than maxConflicts.
func TestBackfillStartsThroughContention(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 100)
	ctx := context.Background()
	e.dualWriting(t)
	other := e.worker(nil)
	m := e.worker(nil)
	var cut int
	m.store.beforePut = func() {
		if cut > 3*maxConflicts {
			return
		}
		cut++
		// A write of the other worker's between the read and the write.
		if _, err := other.store.UpdateContended(ctx, func(*schema.Migration) error { return nil }); err != nil {
			t.Error(err)
		}
	}
	if _, err := m.Backfill(ctx, BackfillConfig{Worker: "contended"}); err != nil {
		t.Fatalf("Backfill = %v, want it done through %d conflicting writes", err, cut)
	}
	mig, err := m.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if mig.Phase != schema.PhaseBackfilled {
		t.Errorf("phase %s, want %s", mig.Phase, schema.PhaseBackfilled)
	}
}
