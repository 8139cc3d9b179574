package pipeline

// Dishes that change restaurant.
//
// A dish's restaurant_id is an ordinary column of the source: an UPDATE
// moves a dish to another restaurant (a chain moves an item, a data fix,
// two listings merged). The new version is written under its new
// restaurant's routing; when that routing is another shard's, the copy
// under the old restaurant stays where it was unless something removes
// it, and the index holds the dish twice.
//
// The spread. A dish write that may have left a copy elsewhere is
// followed by a delete of the dish, at the write's version and with
// version_type=external, under the routing of every other shard of the
// index's map, whether a copy is there or not. A copy older than the
// write is deleted; a newer one refuses the delete, and the write's own
// copy, superseded, is deleted in its turn; where no copy is, the delete
// leaves a tombstone that refuses an older version arriving later, for as
// long as it lives (index.gc_deletes). So whatever the order in which the versions of a
// dish under two restaurants are written, by one instance or several,
// through moves of either restaurant (a move's copy of the old version is
// refused by the tombstone, or deleted by the spread), the index ends
// with one copy, the newest. The write's answer counts for its event only
// once its spread is answered: an event whose spread did not end is
// delivered again, and spread again.
//
// Which writes spread: the cost is paid only where a change is possible.
//
//   - A dish upsert answered created (201) at a version that is not the
//     dish's first (Change.First: an INSERT, or a native version of 0 or
//     1), or answered stale (the same write delivered again, its spread
//     cut short). In steady state a dish's later versions are answered
//     updated (200), and a new dish's first version is not spread: a
//     stream without dishes changing restaurant pays nothing.
//   - A dish delete answered not found: the dish was not under this
//     restaurant, so it may be under another, its upserts here never
//     written (coalesced into the delete, or never arrived).
//   - Any dish event whose source named its former restaurant
//     (Change.FormerRestaurantID, from a before image).
//
// A dish's first version is not spread, so a first version that arrives
// after the tombstones of a later one are gone is kept beside it (doc.go,
// Limits). Dual writes: each index a write reaches spreads under its own
// map.

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
	"github.com/geoshard/geoshard/decode"
)

// dishCheck is one dish write to spread: its event, the write's answer
// (counted for the event once the spread is answered) and its target.
type dishCheck struct {
	ev *event
	r  bulk.Result
	t  target
	// look: the write created a first version; its other copies are
	// looked for rather than deleted blindly (look).
	look bool
}

// reparenter spreads dish writes, batched, on a goroutine of its own.
// Writer callbacks add them; it never touches the loop's state.
type reparenter struct {
	ix *indexer
	// trustFirst: first versions are not looked for
	// (Config.TrustFirstVersions).
	trustFirst bool
	// fail stops the pipeline (set by New): a spread that fails for good
	// leaves its event unfinished, so its partition could commit nothing
	// more.
	fail func(error)

	mu      sync.Mutex
	waiting []dishCheck
	wake    chan struct{} // holds a token while waiting may be non-empty
	// looks are the first versions to look for (look): their writes are
	// already counted, so they wait for larger batches; looking is set
	// while a batch of them runs.
	looks   []dishCheck
	looking atomic.Bool

	checked, looked, removed atomic.Int64
}

func newReparenter(ix *indexer) *reparenter {
	return &reparenter{ix: ix, wake: make(chan struct{}, 1)}
}

// needsCheck reports whether r, an answer to a write of ev, is one that
// may have left another copy of the dish (see above), and whether it is
// looked for (look) rather than spread: a first version created.
func needsCheck(ev *event, r bulk.Result) (need, look bool) {
	c := ev.change
	if c == nil || c.Type != decode.TypeDish || r.Item == nil {
		return false, false
	}
	if f := c.FormerRestaurantID; f != "" && f != c.RestaurantID {
		return true, false
	}
	if r.Coalesced {
		return false, false
	}
	if c.Op == decode.OpDelete {
		return r.Item.Action == bulk.Delete && r.Outcome == bulk.NotFound, false
	}
	if r.Item.Action != bulk.Index {
		return false, false
	}
	if r.Outcome == bulk.OK && r.Status == 201 {
		return true, c.First
	}
	return r.Outcome == bulk.Stale, false
}

// add queues a check. Writer workers call it; it never waits. A look's
// write counts at once: the look runs behind it, in larger batches (an
// event is not held for it; a look lost to a crash leaves what verify
// reports).
func (rp *reparenter) add(c dishCheck) {
	rp.mu.Lock()
	if c.look {
		rp.looks = append(rp.looks, c)
	} else {
		rp.waiting = append(rp.waiting, c)
	}
	rp.mu.Unlock()
	if c.look {
		rp.ix.answered(c.ev, c.r)
		return
	}
	select {
	case rp.wake <- struct{}{}:
	default:
	}
}

// looksIdle reports whether no look waits or runs.
func (rp *reparenter) looksIdle() bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return len(rp.looks) == 0 && !rp.looking.Load()
}

// maxLookBatch bounds the ids one look searches for, and lookEvery is how
// often the looks run.
const (
	maxLookBatch = 5000
	lookEvery    = 500 * time.Millisecond
)

// runLooks looks for the queued first versions, every lookEvery, until
// ctx ends.
func (rp *reparenter) runLooks(ctx context.Context) {
	t := time.NewTicker(lookEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			rp.mu.Lock()
			batch := rp.looks
			if len(batch) > maxLookBatch {
				batch, rp.looks = batch[:maxLookBatch:maxLookBatch], batch[maxLookBatch:]
			} else {
				rp.looks = nil
			}
			rp.looking.Store(len(batch) > 0)
			rp.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			if err := rp.look(ctx, batch); err != nil && ctx.Err() == nil {
				rp.ix.log.Warn("looking for other copies of new dishes failed; verify reports any left", "dishes", len(batch), "error", err)
			}
		}
	}
}

// maxSpreadBatch bounds the writes one batch of checks covers: one
// search of every shard reads the other copies of all its first
// versions.
const maxSpreadBatch = 1000

// maxCheckBatches bounds the batches of checks in flight at once: a
// batch waits for a search and for its deletes' answers, and the writes
// behind it wait for it.
const maxCheckBatches = 4

// run checks what is queued until ctx ends, up to maxCheckBatches batches
// at once (each check stands alone: their order does not matter). A check
// that cannot be done (the pipeline stops) fails its write: the event is
// never finished, so it is delivered again.
func (rp *reparenter) run(ctx context.Context) {
	slots := make(chan struct{}, maxCheckBatches)
	var batches sync.WaitGroup
	defer func() {
		batches.Wait()
		rp.failAll(ctx.Err())
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-rp.wake:
		}
		for {
			rp.mu.Lock()
			batch := rp.waiting
			if len(batch) > maxSpreadBatch {
				batch, rp.waiting = batch[:maxSpreadBatch:maxSpreadBatch], batch[maxSpreadBatch:]
			} else {
				rp.waiting = nil
			}
			rp.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				rp.mu.Lock()
				rp.waiting = append(batch, rp.waiting...)
				rp.mu.Unlock()
				return
			}
			batches.Go(func() {
				defer func() { <-slots }()
				rp.checkBatch(ctx, batch)
			})
		}
	}
}

// checkBatch runs one batch of checks and counts their writes. The
// checks of an ended generation are not made (indexer_fence.go): their events
// stay unfinished, for their next owner to spread.
func (rp *reparenter) checkBatch(ctx context.Context, batch []dishCheck) {
	live := batch[:0:0]
	for _, c := range batch {
		if rp.ix.fenced(c.ev.gen) {
			rp.ix.abandon(c.ev, c.r)
			continue
		}
		live = append(live, c)
	}
	batch = live
	if len(batch) == 0 {
		return
	}
	err := rp.spread(ctx, batch)
	if errors.Is(err, errGenerationEnded) {
		// Cut short by the fence: the checks' events are their next
		// owner's.
		for _, c := range batch {
			rp.ix.abandon(c.ev, c.r)
		}
		return
	}
	if err != nil && ctx.Err() == nil && rp.fail != nil {
		rp.fail(fmt.Errorf("pipeline: delete the other copies of changed dishes: %w", err))
	}
	for _, c := range batch {
		r := c.r
		if err != nil {
			r.Outcome, r.Err = bulk.Failed, fmt.Errorf("delete the other copies of %s: %w", r.Item.ID, err)
		}
		rp.ix.answered(c.ev, r)
	}
}

// failAll fails the writes of the spreads still queued.
func (rp *reparenter) failAll(err error) {
	rp.mu.Lock()
	batch := rp.waiting
	rp.waiting = nil
	rp.mu.Unlock()
	for _, c := range batch {
		r := c.r
		r.Outcome, r.Err = bulk.Failed, fmt.Errorf("delete the other copies of %s: %w", r.Item.ID, err)
		rp.ix.answered(c.ev, r)
	}
}

// spread deletes the dish of each check under every routing of its
// target's map but the one written, at the write's version. A delete
// refused as stale because the shard holds a newer version than the
// write's (a copy, or a delete's tombstone; bulk.Result.Stored) says the
// write is superseded: its own copy is deleted in turn, at its version
// plus one (no version of the dish between its and the newer one can be
// written there: it would be under another restaurant).
//
// A delete refused at exactly the write's version is left alone, live
// copy or tombstone: besides an earlier spread's tombstone of this very
// write, it is what an event delivered again behind a move of its
// restaurant that already landed meets (the move carried the dish at this
// version to the new place, while the event is decided at the old one,
// where the move's delete refuses it; the move, decided again after it,
// finds nothing more to carry). Deleting that copy would lose the dish.
// The other way to a copy at this version under another routing is a
// member deciding with a directory that no longer follows the
// restaurant, which the fence rules out (indexer_fence.go).
func (rp *reparenter) spread(ctx context.Context, cs []dishCheck) error {
	type del struct{ index, id, routing string }
	dels := make(map[del]int64)
	labels := make(map[del]string)
	askers := make(map[del][]int) // the checks whose spread asks for the delete
	var gen int64                 // the newest generation of the checks (genTag)
	for n, c := range cs {
		it := c.r.Item
		gen = max(gen, c.ev.gen)
		for i := range c.t.m.NumShards() {
			r := c.t.m.Shard(i).Routing
			if r == it.Routing {
				continue
			}
			k := del{it.Index, it.ID, r}
			if v, ok := dels[k]; !ok || it.Version > v {
				dels[k] = it.Version
				labels[k] = c.t.labels[i]
			}
			askers[k] = append(askers[k], n)
		}
	}
	rp.checked.Add(int64(len(cs)))
	rp.ix.met.checked.Add(float64(len(cs)))
	if len(dels) == 0 {
		return nil
	}
	items := make([]bulk.Item, 0, len(dels))
	for k, v := range dels {
		items = append(items, bulk.Item{
			Action: bulk.Delete, Index: k.index, ID: k.id, Routing: k.routing,
			Version: v, VersionType: bulk.External, Shard: labels[k], Ref: genTag(gen),
		})
	}
	rs, err := rp.deleteAll(ctx, items)
	if err != nil {
		return err
	}
	own := make(map[del]int64)
	ownLabel := make(map[del]string)
	for _, r := range rs {
		if r.Outcome != bulk.Stale {
			continue
		}
		for _, n := range askers[del{r.Item.Index, r.Item.ID, r.Item.Routing}] {
			c := &cs[n]
			if c.r.Item.Action != bulk.Index || r.Stored <= c.r.Item.Version {
				// A delete's own place holds nothing; a version equal to
				// the write's is left alone (above), and one the conflict
				// does not name proves nothing.
				continue
			}
			k := del{c.r.Item.Index, c.r.Item.ID, c.r.Item.Routing}
			if v := c.r.Item.Version + 1; v > own[k] {
				own[k], ownLabel[k] = v, c.r.Item.Shard
			}
		}
	}
	if rp.ix.fenced(gen) {
		return fmt.Errorf("%w: the second step of a spread", errGenerationEnded)
	}
	items = items[:0]
	for k, v := range own {
		items = append(items, bulk.Item{
			Action: bulk.Delete, Index: k.index, ID: k.id, Routing: k.routing,
			Version: v, VersionType: bulk.External, Shard: ownLabel[k], Ref: genTag(gen),
		})
	}
	_, err = rp.deleteAll(ctx, items)
	return err
}

// deleteAll sends items and waits for their answers.
func (rp *reparenter) deleteAll(ctx context.Context, items []bulk.Item) ([]bulk.Result, error) {
	ix := rp.ix
	if len(items) == 0 {
		return nil, nil
	}
	rs, err := ix.writer.Do(ctx, items...)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		switch r.Outcome {
		case bulk.OK:
			rp.removed.Add(1)
			ix.met.reparented.Inc()
		case bulk.Failed:
			if errors.Is(r.Err, bulk.ErrWithdrawn) {
				return nil, fmt.Errorf("%w: %s/%s (routing %s) withdrawn", errGenerationEnded, r.Item.Index, r.Item.ID, r.Item.Routing)
			}
			return nil, fmt.Errorf("%w: %s %s/%s (routing %s): %w", ErrWriteFailed, r.Item.Action, r.Item.Index, r.Item.ID, r.Item.Routing, r.Err)
		case bulk.Permanent:
			// Refused for good (a reason of the index's own): an older
			// copy may stay, and verify reports it.
			ix.log.Warn("delete of a dish's other copy refused", "index", r.Item.Index, "id", r.Item.ID, "routing", r.Item.Routing, "error", r.Err)
		}
	}
	return rs, nil
}

// look finds the other copies of the first versions cs created, in one
// search of every shard per index (no refresh: a copy written less than a
// refresh interval ago is a version written at the same moment, whose own
// write spreads, unless it is a first version too, which no source sends
// twice under two restaurants), and deletes every copy older than the
// newest found: the write's own when a newer version is stored elsewhere
// (a replay of a dish's first version after the tombstones of its later
// versions are gone, or another source's later record of the id), the
// others when the write is the newest. Copies at one version under two
// routings are left alone: a move between its copy and its delete looks
// the same as two sources' records of one id at one version.
func (rp *reparenter) look(ctx context.Context, cs []dishCheck) error {
	if len(cs) == 0 {
		return nil
	}
	byIndex := make(map[string][]dishCheck)
	for _, c := range cs {
		byIndex[c.r.Item.Index] = append(byIndex[c.r.Item.Index], c)
	}
	var items []bulk.Item
	for index, cs := range byIndex {
		ids := make([]string, len(cs))
		for i, c := range cs {
			ids[i] = c.r.Item.ID
		}
		copies, err := rp.copies(ctx, index, ids)
		if err != nil {
			return err
		}
		for _, c := range cs {
			it := c.r.Item
			found := copies[it.ID]
			// The write's own version counts whether its copy is seen yet
			// or not (not yet refreshed, or carried by a move).
			newest, own := it.Version, false
			for _, cp := range found {
				newest = max(newest, cp.version)
				own = own || cp.routing == it.Routing
			}
			for _, cp := range found {
				if cp.version < newest {
					items = append(items, bulk.Item{Action: bulk.Delete, Index: index, ID: it.ID, Routing: cp.routing,
						Version: newest, VersionType: bulk.External, Shard: c.t.labelOf(cp.routing)})
				}
			}
			if !own && newest > it.Version {
				// The write's own copy, not seen yet, is older than one
				// stored elsewhere.
				items = append(items, bulk.Item{Action: bulk.Delete, Index: index, ID: it.ID, Routing: it.Routing,
					Version: newest, VersionType: bulk.External, Shard: it.Shard})
			}
		}
	}
	rp.looked.Add(int64(len(cs)))
	_, err := rp.deleteAll(ctx, items)
	return err
}

// copyAt is one stored copy of a dish.
type copyAt struct {
	routing string
	version int64
}

// copies reads every stored copy of ids in index, in one search of every
// shard.
func (rp *reparenter) copies(ctx context.Context, index string, ids []string) (map[string][]copyAt, error) {
	ix := rp.ix
	body, err := json.Marshal(map[string]any{
		"query":   map[string]any{"ids": map[string]any{"values": ids}},
		"_source": false,
		"version": true, // the external version each copy was written at
		"size":    min(4*len(ids), 10_000),
	})
	if err != nil {
		return nil, err
	}
	var pg *bulk.Page
	err = retry(ctx, ix.log, "look for other copies of "+strconv.Itoa(len(ids))+" new dishes", func() error {
		var err error
		pg, err = ix.admin.Search(ctx, index, body, bulk.SearchParams{})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string][]copyAt, len(ids))
	for _, h := range pg.Hits {
		out[h.ID] = append(out[h.ID], copyAt{routing: h.Routing, version: h.Version})
	}
	return out, nil
}
