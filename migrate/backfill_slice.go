package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// page is one page of a slice's scan.
type page struct {
	hits []bulk.Hit
	// after is the doc_id of the last hit (the checkpoint once the page
	// is written).
	after string
	// last: the scan found nothing after this page.
	last bool
	err  error
}

// held is a lease a copier holds while it copies the slice.
type held struct {
	lease
	mu sync.Mutex
	// renewed is when the last write that pushed the lease out began
	// (the process's own monotonic time).
	renewed time.Time
}

func (h *held) touch(at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if at.After(h.renewed) {
		h.renewed = at
	}
}

func (h *held) since() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return time.Since(h.renewed)
}

// copyLeased copies the slice c claimed, under its lease: renewed while
// the copy runs, given up the moment another claim replaces it. It
// returns an error wrapping ErrLeaseLost when that happens, after which
// the copier writes nothing more of the slice. A copy that stops (ctx
// ended) or fails releases the lease, so that another worker takes the
// slice over at once; only a killed process leaves its leases to expire.
func (b *backfill) copyLeased(ctx context.Context, c *claimed) error {
	h := &held{lease: c.lease, renewed: time.Now()}
	b.setHeld(h.Slice, true)
	defer b.setHeld(h.Slice, false)
	if c.from != "" {
		b.m.met.takeovers.Inc()
		b.m.log.Info("slice taken over", "step", StepBackfill, "slice", h.Slice, "worker", h.Owner, "from", c.from,
			"claim", h.Claim, "after", c.state.After, "docs", c.state.Docs)
	} else {
		b.m.log.Debug("slice claimed", "step", StepBackfill, "slice", h.Slice, "worker", h.Owner, "claim", h.Claim, "after", c.state.After)
	}

	sctx, stop := context.WithCancelCause(ctx)
	var renewer sync.WaitGroup
	renewer.Add(1)
	go func() {
		defer renewer.Done()
		b.keepLease(sctx, stop, h)
	}()
	err := b.copySlice(sctx, c.state, h)
	stop(nil)
	renewer.Wait()
	// The renewer's reason to stop the copy, if it stopped it first.
	if cause := context.Cause(sctx); ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	switch {
	case err == nil:
		return nil // the last checkpoint released the lease
	case isLeaseLost(err):
		b.m.log.Warn("slice lease lost: the slice is left to its new holder", "step", StepBackfill, "slice", h.Slice, "worker", h.Owner, "error", err)
		return err
	}
	if ctx.Err() == nil || !b.m.abandon {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkpointTimeout)
		if rerr := b.leases.release(rctx, h.lease); rerr != nil {
			b.m.log.Warn("slice lease not released: another worker takes the slice over once it expires", "step", StepBackfill,
				"slice", h.Slice, "worker", h.Owner, "error", rerr)
		}
		cancel()
	}
	return err
}

// keepLease renews h whenever a third of the lease has passed without a
// checkpoint (which renews it too), until ctx ends. A renewal refused
// because the lease is lost, or failed for good, stops the copy (stop,
// with the error).
func (b *backfill) keepLease(ctx context.Context, stop context.CancelCauseFunc, h *held) {
	every := b.cfg.Lease / 3
	for {
		if wait := every - h.since(); wait > 0 {
			if sleep(ctx, wait) != nil {
				return
			}
			continue
		}
		at := time.Now()
		rec, err := b.leases.renew(ctx, h.lease)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			stop(err)
			return
		}
		h.touch(at)
		b.observe(rec)
	}
}

// checkpointTimeout bounds a checkpoint's write once begun.
const checkpointTimeout = 30 * time.Second

// checkpoint stores a slice's progress under its lease, and renews the
// lease. It refuses if the lease is lost (ErrLeaseLost), or if the
// migration has left phase backfilling meanwhile (another operator
// cancelled it).
//
// A checkpoint once begun is finished even when ctx ends: a write the
// client abandons may still be applied by the server later, after the
// job has returned and another has read the migration, so that two jobs
// would disagree about where the slice stands. Finishing it (within
// checkpointTimeout) means that when the job returns, the stored
// checkpoints are the ones it reports.
func (b *backfill) checkpoint(ctx context.Context, h *held, st schema.SliceState) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkpointTimeout)
	defer cancel()
	at := time.Now()
	rec, err := b.leases.checkpoint(ctx, h.lease, st)
	if err != nil {
		return err
	}
	h.touch(at)
	b.observe(rec)
	return nil
}

// copySlice copies one source shard from its checkpoint to its end,
// checkpointing under h. A reader goroutine fetches the next page while
// the current one is written, so reading and writing overlap by one page.
func (b *backfill) copySlice(ctx context.Context, st schema.SliceState, h *held) error {
	ctx, cancel := context.WithCancel(ctx)
	var readers sync.WaitGroup
	defer func() {
		cancel()
		readers.Wait()
	}()
	var sc sliceCounter
	w, failed, err := b.newWriter(&sc)
	if err != nil {
		return err
	}
	defer func() {
		// Let the writes in flight finish (or fail) even when the job is
		// being stopped: their outcome does not matter any more (the
		// checkpoint has not moved past them), but a writer is closed.
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer ccancel()
		w.Close(cctx)
	}()

	pages := make(chan page, 1)
	readers.Add(1)
	go func() {
		defer readers.Done()
		b.readPages(ctx, st, pages)
	}()
	fail := func(err error) error {
		return &SliceError{Slice: st.Slice, SourceShard: st.SourceShard, After: st.After, Err: err}
	}
	// The writer's counters at the last checkpoint: a page's counts are
	// what the counters moved by while its writes were acknowledged (Flush
	// waits for every outcome), added to the slice's as checkpointed.
	var lastCopied, lastStale int64
	for p := range pages {
		if p.err != nil {
			return fail(p.err)
		}
		items := make([]bulk.Item, len(p.hits))
		for i, h := range p.hits {
			if items[i], err = b.item(h); err != nil {
				return fail(err)
			}
		}
		n := len(items)
		b.read.Add(int64(n))
		if err := b.bucket.wait(ctx, n); err != nil {
			return fail(err)
		}
		for _, it := range items {
			if err := w.Add(ctx, it); err != nil {
				return fail(err)
			}
		}
		if err := w.Flush(ctx); err != nil {
			return fail(err)
		}
		if err := failed(); err != nil {
			return fail(err)
		}
		// Every write of the page is acknowledged: only now may the
		// checkpoint move past it.
		next := st
		next.After, next.Docs, next.Done = p.after, st.Docs+int64(n), p.last
		copied, stale := sc.copied.Load(), sc.stale.Load()
		next.Copied, next.Stale = st.Copied+copied-lastCopied, st.Stale+stale-lastStale
		if err := b.checkpoint(ctx, h, next); err != nil {
			return fail(err)
		}
		st, lastCopied, lastStale = next, copied, stale
		b.m.met.docs.Add(float64(n))
		if p.last {
			b.m.log.Debug("slice done", "step", StepBackfill, "slice", st.Slice, "docs", st.Docs)
			return nil
		}
	}
	// The reader stopped without a last page: the context ended.
	return fail(ctx.Err())
}

// sliceCounter counts a slice's writes by outcome.
type sliceCounter struct{ copied, stale atomic.Int64 }

// newWriter starts a slice's bulk writer, which counts its outcomes in
// sc and the run's. failed returns the first item that did not end as
// written or stale.
func (b *backfill) newWriter(sc *sliceCounter) (w *bulk.Writer, failed func() error, err error) {
	var mu sync.Mutex
	var first error
	wc := b.cfg.Bulk
	wc.Registerer = nil
	wc.OnResult = func(r bulk.Result) {
		switch r.Outcome {
		case bulk.OK:
			b.copied.Add(1)
			sc.copied.Add(1)
		case bulk.Stale:
			b.stale.Add(1)
			sc.stale.Add(1)
		case bulk.NotFound:
		default:
			mu.Lock()
			if first == nil {
				first = fmt.Errorf("copy %s: %s: %w", r.Item.ID, r.Outcome, r.Err)
			}
			mu.Unlock()
		}
	}
	w, err = bulk.New(b.m.client, wc)
	if err != nil {
		return nil, nil, fmt.Errorf("migrate: backfill: %w", err)
	}
	return w, func() error {
		mu.Lock()
		defer mu.Unlock()
		return first
	}, nil
}

// readPages sends the slice's pages from its checkpoint on, until a last
// page, an error, or ctx ends (then it sends nothing more).
func (b *backfill) readPages(ctx context.Context, st schema.SliceState, out chan<- page) {
	defer close(out)
	size := b.cfg.Page
	params := bulk.SearchParams{Preference: "_shards:" + strconv.Itoa(st.SourceShard)}
	after := st.After
	for {
		var p page
		var pg *bulk.Page
		p.err = retryRead(ctx, "read a page of slice "+strconv.Itoa(st.Slice), func() error {
			var err error
			pg, err = b.searcher.Search(ctx, b.mig.Source.Index, pageRequest(size, after), params)
			return err
		})
		if p.err == nil {
			p.hits, p.after, p.last = pg.Hits, after, len(pg.Hits) < size
			if len(pg.Hits) > 0 {
				p.after, p.err = sortAfter(pg.Hits[len(pg.Hits)-1])
			}
		}
		select {
		case out <- p:
		case <-ctx.Done():
			return
		}
		if p.err != nil || p.last {
			return
		}
		after = p.after
	}
}

// sortAfter is the doc_id a hit was sorted by.
func sortAfter(h bulk.Hit) (string, error) {
	var s *string
	if len(h.Sort) != 1 || json.Unmarshal(h.Sort[0], &s) != nil || s == nil {
		return "", fmt.Errorf("%s: %w", h.ID, errNoDocID)
	}
	return *s, nil
}

// copyFields are what the backfill reads of a document.
type copyFields struct {
	GeoCell string `json:"geo_cell"`
	Version *int64 `json:"version"`
}

// item is the target write of a source document: routed under the new
// map by its geo_cell, with its own version as the external version.
func (b *backfill) item(h bulk.Hit) (bulk.Item, error) {
	var f copyFields
	if err := json.Unmarshal(h.Source, &f); err != nil {
		return bulk.Item{}, fmt.Errorf("document %s: %w", h.ID, err)
	}
	if f.Version == nil {
		return bulk.Item{}, fmt.Errorf("document %s has no %s", h.ID, schema.FieldVersion)
	}
	cell, err := router.ParseCellAt(f.GeoCell, b.tgtMap.Level())
	if err != nil {
		return bulk.Item{}, fmt.Errorf("document %s: %s: %w", h.ID, schema.FieldGeoCell, err)
	}
	s := b.tgtMap.Shard(b.tgtMap.LocateCell(cell))
	return bulk.Item{
		Action: bulk.Index, Index: b.mig.Target.Index, ID: h.ID, Routing: s.Routing,
		Version: *f.Version, VersionType: bulk.External, Body: h.Source, Shard: s.Name,
	}, nil
}
