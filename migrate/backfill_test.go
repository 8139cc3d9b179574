package migrate

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// hookSearcher calls onPage with every page a search returns, before the
// caller sees it.
type hookSearcher struct {
	Searcher
	onPage func(ctx context.Context, index string, p bulk.SearchParams, pg *bulk.Page)
}

func (h *hookSearcher) Search(ctx context.Context, index string, body []byte, p bulk.SearchParams) (*bulk.Page, error) {
	pg, err := h.Searcher.Search(ctx, index, body, p)
	if err == nil && h.onPage != nil {
		h.onPage(ctx, index, p, pg)
	}
	return pg, err
}

// checkTarget checks that the target holds exactly the live documents of
// want, each at its version, on the shard the new map gives its cell, with
// that shard's routing key.
func (e *env) checkTarget(ctx context.Context, index string) {
	e.t.Helper()
	if err := e.admin.Refresh(ctx, index); err != nil {
		e.t.Fatal(err)
	}
	got := e.stored(ctx, index, e.dst.NumShards())
	n := 0
	for _, d := range e.docs.all() {
		s, ok := got[d.ID]
		if d.Deleted {
			if ok {
				e.t.Errorf("%s: deleted at version %d, but the target holds version %d", d.ID, d.Version, s.Version)
			}
			continue
		}
		n++
		want := e.dst.LocateCell(d.cell(e.dst.Level()))
		switch {
		case !ok:
			e.t.Errorf("%s (version %d) is missing from the target", d.ID, d.Version)
		case s.Version != d.Version:
			e.t.Errorf("%s: target version %d, want %d", d.ID, s.Version, d.Version)
		case s.Shard != want || s.Routing != e.dst.Shard(want).Routing:
			e.t.Errorf("%s: on shard %d with routing %q, want shard %d (%s)", d.ID, s.Shard, s.Routing, want, e.dst.Shard(want).Routing)
		case s.Cell != d.cell(e.dst.Level()).ToToken():
			e.t.Errorf("%s: geo_cell %s, want %s", d.ID, s.Cell, d.cell(e.dst.Level()).ToToken())
		}
	}
	if len(got) != n {
		e.t.Errorf("target holds %d documents, want %d", len(got), n)
	}
}

func TestBackfill(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 600)
	ctx := context.Background()
	var progress []BackfillProgress
	var mu sync.Mutex
	mig := e.migrateTo(ctx, BackfillConfig{Page: 250, ProgressInterval: time.Millisecond, Progress: func(p BackfillProgress) {
		mu.Lock()
		progress = append(progress, p)
		mu.Unlock()
	}})
	total := int64(e.docs.live())
	if mig.Phase != schema.PhaseVerified || mig.Verification == nil || !mig.Verification.OK || len(mig.Verification.Shards) != 24 {
		t.Fatalf("after backfill and verify: phase %s, verification %+v", mig.Phase, mig.Verification)
	}
	if sliceDocs(mig.Backfill) != total || len(mig.Backfill) != 18 {
		t.Errorf("slices %+v: want 18 slices copying %d documents", mig.Backfill, total)
	}
	for _, s := range mig.Backfill {
		if !s.Done {
			t.Errorf("slice %d not done", s.Slice)
		}
	}
	var sum int64
	for _, r := range mig.Verification.Shards {
		sum += r.Source
	}
	if sum != total {
		t.Errorf("verification counts %d source documents over the ranges, want %d", sum, total)
	}
	e.checkTarget(ctx, e.v2)
	last := progress[len(progress)-1]
	if !last.Done || last.Docs != total || last.Total != total || last.Read != total {
		t.Errorf("last progress %+v, want done with %d documents", last, total)
	}
	// Again: nothing to do.
	rep, err := e.m.Backfill(ctx, BackfillConfig{})
	if err != nil || !rep.Already {
		t.Errorf("second Backfill = %+v, %v; want already done", rep, err)
	}
}

// A job killed in the middle of a slice resumes from its checkpoints: it
// re-reads fewer documents than the source holds and ends correct.
func TestBackfillResumesAfterKill(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 600)
	ctx := context.Background()
	e.dualWriting(t)
	total := int64(e.docs.live())
	kill, cancel := context.WithCancel(ctx)
	var pages atomic.Int64
	e.m.search = &hookSearcher{Searcher: e.admin, onPage: func(_ context.Context, index string, p bulk.SearchParams, _ *bulk.Page) {
		if index == e.v1 && p.Preference != "" && pages.Add(1) == 12 {
			cancel() // mid-slice: this page is never written
		}
	}}
	rep, err := e.m.Backfill(kill, BackfillConfig{Page: 100, Slices: 3})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("killed Backfill = %v, want context.Canceled", err)
	}
	mig, _ := e.m.Load(ctx)
	if mig.Phase != schema.PhaseBackfilling {
		t.Fatalf("phase %s after the kill, want backfilling", mig.Phase)
	}
	done := sliceDocs(mig.Backfill)
	if done == 0 || done >= total {
		t.Fatalf("checkpoints hold %d of %d documents, want some", done, total)
	}
	// A checkpoint never runs ahead of the writes: everything up to it is
	// in the target.
	e.admin.Refresh(ctx, e.v2)
	inTarget := e.stored(ctx, e.v2, 24)
	src := e.stored(ctx, e.v1, 18)
	for _, s := range mig.Backfill {
		for id, d := range src {
			if d.Shard == s.SourceShard && s.After != "" && id <= s.After {
				if _, ok := inTarget[id]; !ok {
					t.Errorf("slice %d checkpoint %q, but %s is not in the target", s.Slice, s.After, id)
				}
			}
		}
	}
	t.Logf("killed after %d documents copied of %d (first run read %d)", done, total, rep.Read)

	e.m.search = nil
	rep, err = e.m.Backfill(ctx, BackfillConfig{Page: 100, Slices: 3})
	if err != nil {
		t.Fatal(err)
	}
	// The checkpoints read after the kill are a lower bound: a checkpoint
	// write the kill cut short on the client may still reach the cluster
	// afterwards (its page was written already), and the resumed run then
	// starts after it. Whatever it skipped that way, the verification and
	// checkTarget below would find missing.
	if rep.Read >= total || rep.Read > total-done {
		t.Errorf("resumed backfill read %d documents, want at most %d (the total %d less the %d checkpointed)", rep.Read, total-done, total, done)
	}
	if rep.Docs != total {
		t.Errorf("resumed backfill: %d documents in all, want %d", rep.Docs, total)
	}
	// Counted across the kill: the pages written but not checkpointed
	// count once, when the resumed run checkpoints them.
	if tt := rep.Totals; !tt.Counted || tt.Checkpointed != total || tt.Copied+tt.Stale != total {
		t.Errorf("resumed backfill totals %+v, want %d checkpointed, split into copied and stale", tt, total)
	}
	if _, err := e.m.Verify(ctx, quickVerify); err != nil {
		t.Fatal(err)
	}
	e.checkTarget(ctx, e.v2)
}

// Live writes win: a document updated or deleted between the backfill
// reading it and writing it keeps the live write's outcome.
func TestBackfillLiveWritesWin(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 300)
	ctx := context.Background()
	e.dualWriting(t)
	var once sync.Once
	var hookErr error
	e.m.search = &hookSearcher{Searcher: e.admin, onPage: func(ctx context.Context, index string, p bulk.SearchParams, pg *bulk.Page) {
		if index != e.v1 || len(pg.Hits) < 2 {
			return
		}
		once.Do(func() {
			// Ingest, between the read and the copy: the first document
			// of the page is deleted, the second updated, in both indexes.
			del := e.docs.byID[pg.Hits[0].ID]
			upd := e.docs.byID[pg.Hits[1].ID]
			del.Deleted, del.Version = true, del.Version+1
			upd.Version++
			hookErr = e.docs.write(ctx, e.client, e.v1, e.src, []*testDoc{del, upd})
			if hookErr == nil {
				hookErr = e.docs.write(ctx, e.client, e.v2, e.dst, []*testDoc{del, upd})
			}
		})
	}}
	rep, err := e.m.Backfill(ctx, BackfillConfig{Page: 50})
	if err != nil || hookErr != nil {
		t.Fatal(err, hookErr)
	}
	if rep.Stale != 2 {
		t.Errorf("backfill: %d stale copies, want 2 (the deleted and the updated document)", rep.Stale)
	}
	// The checkpoints keep the split: status shows the figures the run
	// reported, and they add up.
	want := BackfillTotals{Checkpointed: rep.Docs, Copied: rep.Copied, Stale: 2, Counted: true, SlicesDone: len(rep.Slices), Slices: len(rep.Slices)}
	if rep.Totals != want || rep.Copied+rep.Stale != rep.Docs {
		t.Errorf("backfill totals %+v (run copied %d, stale %d), want %+v", rep.Totals, rep.Copied, rep.Stale, want)
	}
	if st, err := e.m.Status(ctx, 0); err != nil || st.Backfill == nil || *st.Backfill != want {
		t.Errorf("status backfill = %+v (%v), want %+v", st.Backfill, err, want)
	}
	// A restart forgets the checkpoints, and their counts with them: the
	// totals are this run's alone (every document is in the target
	// already, at its version, so every copy is stale).
	e.m.search = nil
	again, err := e.m.Backfill(ctx, BackfillConfig{Page: 50, Restart: true})
	if err != nil {
		t.Fatal(err)
	}
	want = BackfillTotals{Checkpointed: again.Read, Copied: 0, Stale: again.Read, Counted: true, SlicesDone: len(again.Slices), Slices: len(again.Slices)}
	if again.Totals != want || again.Copied != 0 || again.Stale != again.Read {
		t.Errorf("restarted backfill totals %+v (run read %d, copied %d, stale %d), want %+v", again.Totals, again.Read, again.Copied, again.Stale, want)
	}
	if st, err := e.m.Status(ctx, 0); err != nil || st.Backfill == nil || *st.Backfill != want {
		t.Errorf("status backfill after the restart = %+v (%v), want %+v", st.Backfill, err, want)
	}
	if _, err := e.m.Verify(ctx, quickVerify); err != nil {
		t.Fatal(err)
	}
	e.checkTarget(ctx, e.v2)
}

// The raised gc_deletes is what makes the tombstone of a live delete
// outlive a late copy: ten minutes between the read and the write (far
// past the default 60s) still cannot resurrect the document.
func TestBackfillLateCopyAfterDelete(t *testing.T) {
	realenv.Parallel(t)
	realenv.EmulatorOnly(t, "ten minutes pass between the read and the write on the emulator's manual clock; on the real node the test would wait them out")
	clock := osfake.NewManualClock(time.Now())
	e := newEnvWith(t, 100, osfake.Options{Clock: clock.Now})
	ctx := context.Background()
	e.dualWriting(t)
	var gone *testDoc
	var hookErr error
	e.m.search = &hookSearcher{Searcher: e.admin, onPage: func(ctx context.Context, index string, _ bulk.SearchParams, pg *bulk.Page) {
		if index != e.v1 || len(pg.Hits) == 0 || gone != nil {
			return
		}
		d := *e.docs.byID[pg.Hits[0].ID]
		d.Deleted, d.Version = true, d.Version+1
		gone = &d
		for _, side := range []struct {
			index string
			mp    *router.Map
		}{{e.v1, e.src}, {e.v2, e.dst}} {
			if err := e.docs.write(ctx, e.client, side.index, side.mp, []*testDoc{&d}); err != nil {
				hookErr = err
			}
		}
		clock.Advance(10 * time.Minute)
	}}
	if _, err := e.m.Backfill(ctx, BackfillConfig{Slices: 1}); err != nil || hookErr != nil {
		t.Fatal(err, hookErr)
	}
	routing := e.dst.Shard(e.dst.LocateCell(gone.cell(10))).Routing
	if _, v, found, err := e.admin.Get(ctx, e.v2, gone.ID, routing); found || err != nil {
		t.Errorf("%s, deleted by a live write, was resurrected at version %d by the backfill (%v)", gone.ID, v, err)
	}
}

func TestBackfillRefusals(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 20)
	ctx := context.Background()
	var pe *PhaseError
	if _, err := e.m.Backfill(ctx, BackfillConfig{}); !errors.Is(err, ErrNoMigration) {
		t.Errorf("Backfill without a migration = %v, want ErrNoMigration", err)
	}
	if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Backfill(ctx, BackfillConfig{}); !errors.As(err, &pe) || pe.Phase != schema.PhaseCreated {
		t.Errorf("Backfill before dual writes = %v, want a PhaseError", err)
	}
	if _, err := e.m.DualWrites(ctx, AckConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Backfill(ctx, BackfillConfig{Slices: 19}); err == nil {
		t.Errorf("Backfill with 19 slices of an 18-shard source succeeded")
	}
	if _, err := e.m.Backfill(ctx, BackfillConfig{Page: MaxPage + 1}); err == nil {
		t.Errorf("Backfill with a page of %d succeeded", MaxPage+1)
	}
	if p := e.phase(ctx); p != schema.PhaseDualWrites {
		t.Errorf("refused backfills moved the phase to %s", p)
	}
	// A document without a usable geo_cell stops its slice, named.
	bad := bulk.Item{Action: bulk.Index, Index: e.v1, ID: "dish:nowhere", Routing: e.src.Shard(0).Routing,
		Body: []byte(`{"relation":"restaurant","geo_cell":"zz","version":1,"doc_id":"dish:nowhere"}`)}
	if err := e.writeItems(ctx, bad); err != nil {
		t.Fatal(err)
	}
	var se *SliceError
	if _, err := e.m.Backfill(ctx, BackfillConfig{}); !errors.As(err, &se) || se.SourceShard != 0 || !strings.Contains(err.Error(), "dish:nowhere") {
		t.Errorf("Backfill over a document without a cell = %v, want a SliceError of shard 0 naming it", err)
	}
}
