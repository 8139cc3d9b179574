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
// The check. A dish upsert that OpenSearch answers created (201) put the
// document on a shard that did not hold it: the dish is new, or it came
// from another restaurant, or an older version of it is being replayed
// under a restaurant it has since left. An upsert answered stale may be
// the same write delivered again after a crash cut its check short. Those
// two answers, and only those, are checked: in steady state a dish's
// later versions are answered updated (200) and cost nothing. A check
// waits for a refresh of the index that starts after its write was
// acknowledged, shared with every check, move and lookup of the moment
// (refresher), then reads every copy of the dish's id in one search of
// every shard, batched with the other checks waiting; the copy with the
// highest version is the current one, and every other copy is deleted
// with version_type=external at the current copy's version, which the
// index refuses if that copy has meanwhile become newer. The write's
// answer counts for its event only when its check is done, so an event
// whose check did not end is delivered again, and checked again.
//
// Why every order ends with one copy: two versions of a dish written
// under two routings, by one instance or two, are each acknowledged
// before their check's refresh starts. Whichever check's refresh starts
// later sees both copies (the other write was acknowledged before the
// earlier refresh started, so before this one), and deletes the older.
// A replay of an old version under the old restaurant is created again
// only once the delete's tombstone is gone (index.gc_deletes), and is
// then checked like any creation: it finds the newer copy and deletes
// itself.
//
// The source's word. A change-data-capture event that names the dish's
// former restaurant (Change.FormerRestaurantID, from Debezium's before
// image) also deletes the dish under that restaurant's routing at the
// event's version, copy or not: the tombstone refuses, for as long as it
// lives, an older version still on its way under the old restaurant.
//
// Dual writes: each index a write reaches checks its own copies, under
// its own map.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/schema"
)

// maxCheckBatch bounds the dish ids one search of a check reads.
const maxCheckBatch = 1000

// dishCheck is one dish write to check: its event, the write's answer
// (counted for the event once the check is done) and where it went.
type dishCheck struct {
	ev *event
	r  bulk.Result
	t  target
	// former is the routing, under t's map, of the restaurant the source
	// says the dish had before ("" when it did not say, or the same).
	former string
}

// reparenter runs the checks, batched per index, on a goroutine of its
// own. Writer callbacks add checks; it never touches the loop's state.
type reparenter struct {
	ix *indexer
	// fail stops the pipeline (set by New); a check that fails for good
	// leaves its event unfinished, so its partition could commit nothing
	// more.
	fail func(error)

	mu      sync.Mutex
	waiting []dishCheck
	wake    chan struct{} // holds a token while waiting may be non-empty

	checked, removed atomic.Int64
}

func newReparenter(ix *indexer) *reparenter {
	return &reparenter{ix: ix, wake: make(chan struct{}, 1)}
}

// needsCheck reports whether r, an answer to a write of ev, is one that
// may have left another copy of the dish: an upsert created, or answered
// stale (the same write delivered again, its first check cut short).
//
// A dish delete answered not found is checked too: the dish was not under
// this restaurant, so it may be under another, its versions under this
// one never written (coalesced into this delete, or waiting for their
// restaurant when the delete cancelled them).
//
// An upsert whose source named a former restaurant is always checked, its
// write coalesced into a newer one's included, for the tombstone it
// leaves there.
func needsCheck(ev *event, r bulk.Result) bool {
	c := ev.change
	if c == nil || c.Type != TypeDish || r.Item == nil {
		return false
	}
	if ev.formerCell != 0 {
		return true
	}
	if r.Coalesced {
		return false
	}
	if c.Op == OpDelete {
		return r.Item.Action == bulk.Delete && r.Outcome == bulk.NotFound
	}
	return r.Item.Action == bulk.Index && ((r.Outcome == bulk.OK && r.Status == 201 && !c.First) || r.Outcome == bulk.Stale)
}

// add queues a check. Writer workers call it; it never waits.
func (rp *reparenter) add(c dishCheck) {
	rp.mu.Lock()
	rp.waiting = append(rp.waiting, c)
	rp.mu.Unlock()
	select {
	case rp.wake <- struct{}{}:
	default:
	}
}

// run checks what is queued until ctx ends. A check that cannot be done
// (the pipeline stops) fails its write: the event is never finished, so
// it is delivered again.
func (rp *reparenter) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			rp.failAll(ctx.Err())
			return
		case <-rp.wake:
		}
		for {
			rp.mu.Lock()
			batch := rp.waiting
			rp.waiting = nil
			rp.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			byIndex := make(map[string][]dishCheck)
			var order []string
			for _, c := range batch {
				idx := c.r.Item.Index
				if byIndex[idx] == nil {
					order = append(order, idx)
				}
				byIndex[idx] = append(byIndex[idx], c)
			}
			for _, idx := range order {
				cs := byIndex[idx]
				for len(cs) > 0 {
					n := min(len(cs), maxCheckBatch)
					err := rp.check(ctx, idx, cs[:n])
					if err != nil && ctx.Err() == nil && rp.fail != nil {
						rp.fail(fmt.Errorf("pipeline: check dishes for copies under another restaurant in %s: %w", idx, err))
					}
					for _, c := range cs[:n] {
						r := c.r
						if err != nil {
							r.Outcome, r.Err = bulk.Failed, fmt.Errorf("check for other copies of %s: %w", r.Item.ID, err)
						}
						rp.ix.answered(c.ev, r)
					}
					cs = cs[n:]
				}
			}
		}
	}
}

// failAll fails the writes of the checks still queued.
func (rp *reparenter) failAll(err error) {
	rp.mu.Lock()
	batch := rp.waiting
	rp.waiting = nil
	rp.mu.Unlock()
	for _, c := range batch {
		r := c.r
		r.Outcome, r.Err = bulk.Failed, fmt.Errorf("check for other copies of %s: %w", r.Item.ID, err)
		rp.ix.answered(c.ev, r)
	}
}

// copyAt is one stored copy of a dish.
type copyAt struct {
	routing string
	version int64
}

// check runs the checks cs of one index: it removes every copy of their
// dishes older than the dish's newest, and deletes each dish under the
// former restaurant its source named.
func (rp *reparenter) check(ctx context.Context, index string, cs []dishCheck) error {
	ids := make([]string, 0, len(cs))
	floors := make(map[string]int64, len(cs))
	var created map[string]copyAt
	var tombs []copyAt
	var tombIDs []string
	for _, c := range cs {
		id := c.r.Item.ID
		ids = append(ids, id)
		floors[id] = max(floors[id], c.r.Item.Version)
		if c.r.Item.Action == bulk.Index && !c.r.Coalesced && !c.ev.change.First &&
			((c.r.Outcome == bulk.OK && c.r.Status == 201) || c.r.Outcome == bulk.Stale) {
			if created == nil {
				created = make(map[string]copyAt)
			}
			created[id] = copyAt{routing: c.r.Item.Routing, version: c.r.Item.Version}
		}
		if c.former != "" && c.former != c.r.Item.Routing {
			tombIDs = append(tombIDs, c.r.Item.ID)
			tombs = append(tombs, copyAt{routing: c.former, version: c.r.Item.Version})
		}
	}
	rp.checked.Add(int64(len(cs)))
	rp.ix.met.checked.Add(float64(len(cs)))
	return rp.removeSuperseded(ctx, index, &cs[0].t, ids, floors, created, tombIDs, tombs)
}

// removeSuperseded finds the copies of the dishes ids in index (t's) and
// deletes every one older than its dish's newest version — the newest
// copy's, or floors[id] (the version of the write checked, a delete's
// included) if higher — with version_type=external at that version; and
// deletes tombIDs[i] at tombs[i] whether a copy is there or not. Copies
// at one version under two routings (a move between its copy and its
// delete) are left alone.
//
// A dish written (created, or answered stale: delivered again) at a
// version that is not its first (created: where, at which version), with
// no copy under another routing, has its older versions still to come,
// or gone: it is deleted at its newest version under every other shard's
// routing, copy or not, so that an older version arriving later is
// refused there as stale while the tombstones live (index.gc_deletes).
func (rp *reparenter) removeSuperseded(ctx context.Context, index string, t *target, ids []string, floors map[string]int64, created map[string]copyAt, tombIDs []string, tombs []copyAt) error {
	ix := rp.ix
	if err := ix.refresh(ctx, index); err != nil {
		return err
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	copies, err := rp.copies(ctx, index, ids)
	if err != nil {
		return err
	}
	type del struct{ id, routing string }
	dels := make(map[del]int64)
	deleteAt := func(id, routing string, version int64) {
		k := del{id, routing}
		if v, ok := dels[k]; !ok || version > v {
			dels[k] = version
		}
	}
	for id, cps := range copies {
		newest := floors[id]
		for _, cp := range cps {
			newest = max(newest, cp.version)
		}
		for _, cp := range cps {
			if cp.version < newest {
				deleteAt(id, cp.routing, newest)
			}
		}
	}
	for i, tb := range tombs {
		deleteAt(tombIDs[i], tb.routing, tb.version)
	}
	for id, at := range created {
		newest := max(at.version, floors[id])
		elsewhere := false
		for _, cp := range copies[id] {
			elsewhere = elsewhere || cp.routing != at.routing
			newest = max(newest, cp.version)
		}
		if elsewhere {
			continue
		}
		for i := range t.m.NumShards() {
			if r := t.m.Shard(i).Routing; r != at.routing {
				deleteAt(id, r, newest)
			}
		}
	}
	if len(dels) == 0 {
		return nil
	}
	items := make([]bulk.Item, 0, len(dels))
	for k, v := range dels {
		items = append(items, bulk.Item{
			Action: bulk.Delete, Index: index, ID: k.id, Routing: k.routing,
			Version: v, VersionType: bulk.External, Shard: t.labelOf(k.routing),
		})
	}
	rs, err := ix.writer.Do(ctx, items...)
	if err != nil {
		return err
	}
	for _, r := range rs {
		switch r.Outcome {
		case bulk.OK:
			rp.removed.Add(1)
			ix.met.reparented.Inc()
		case bulk.Failed:
			return fmt.Errorf("%w: delete superseded copy %s/%s (routing %s): %w", ErrWriteFailed, index, r.Item.ID, r.Item.Routing, r.Err)
		case bulk.Permanent:
			// Refused for good (a reason of the index's own): the newer
			// copy is written; the older stays, and verify reports it.
			ix.log.Warn("delete of a superseded dish copy refused", "index", index, "id", r.Item.ID, "routing", r.Item.Routing, "error", r.Err)
		}
	}
	return nil
}

// checkCopies checks the dishes a move copied to their restaurant's new
// shard (items, of targets' indexes), as a dish write answered created is
// checked: the move read them before a newer version of one under another
// restaurant may have been written and checked. It runs on the move's
// task, after the copies are acknowledged. (A copy whose old place took a
// newer version before the move's delete of it is deleted by the move
// itself: movePlan.revived.)
func (rp *reparenter) checkCopies(ctx context.Context, targets []target, items []bulk.Item) error {
	for i := range targets {
		var ids []string
		for _, it := range items {
			if it.Index == targets[i].index {
				ids = append(ids, it.ID)
			}
		}
		for len(ids) > 0 {
			n := min(len(ids), maxCheckBatch)
			if err := rp.removeSuperseded(ctx, targets[i].index, &targets[i], ids[:n], nil, nil, nil, nil); err != nil {
				return err
			}
			ids = ids[n:]
		}
	}
	return nil
}

// copies reads every stored copy of ids in index, in one search of every
// shard.
func (rp *reparenter) copies(ctx context.Context, index string, ids []string) (map[string][]copyAt, error) {
	ix := rp.ix
	body, err := json.Marshal(map[string]any{
		"query":   map[string]any{"ids": map[string]any{"values": ids}},
		"_source": []string{schema.FieldVersion},
		// A dish is stored at most a few times (each check removes the
		// extra copies it sees); a page larger than that is not needed.
		"size": min(4*len(ids), 10_000),
	})
	if err != nil {
		return nil, err
	}
	var pg *bulk.Page
	err = retry(ctx, ix.log, "read the copies of "+strconv.Itoa(len(ids))+" dishes", func() error {
		var err error
		pg, err = ix.admin.Search(ctx, index, body, bulk.SearchParams{})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string][]copyAt, len(ids))
	for _, h := range pg.Hits {
		var src struct {
			Version json.Number `json:"version"`
		}
		if err := json.Unmarshal(h.Source, &src); err != nil {
			return nil, fmt.Errorf("copy of %s in %s: %w", h.ID, index, err)
		}
		v, err := src.Version.Int64()
		if err != nil {
			return nil, fmt.Errorf("copy of %s in %s: version %q: %w", h.ID, index, src.Version, err)
		}
		out[h.ID] = append(out[h.ID], copyAt{routing: h.Routing, version: v})
	}
	return out, nil
}
