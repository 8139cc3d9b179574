package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/schema"
)

// A restaurant whose location leaves its geoshard moves with all its
// dishes: OpenSearch cannot move a document between shards, so each is
// written under the new routing and deleted under the old. The steps run
// in an order that a crash at any point leaves repairable by redelivery.
// The directory is warmed from the index, where the restaurant still sits
// at its old location until the last step, so a redelivered event finds
// it there and does the move again:
//
//  1. wait until every earlier write of the restaurant and its dishes is
//     acknowledged (the restaurant is quiet, indexer.go) and refresh, so
//     the search sees them; page through the dishes under the old routing
//     and write each under the new routing with its own version and the
//     new geo_cell.
//  2. delete each old copy with version_type=external_gte and its
//     version. (A dish written again since is newer and survives.)
//  3. delete the old restaurant copy with the event's version.
//  4. write the restaurant under the new routing (the event's own write),
//     then update the directory.
//
// Steps 1 to 3 run on a task, off the processing loop: only the
// restaurant is held meanwhile (its later events and its dishes' wait),
// and each step waits for the answers of its own writes (Writer.Do), and
// of no others, before the next starts. So a crash after step 1 leaves
// copies on both shards of dishes (the redelivered move rewrites them,
// stale or not, and deletes those of dishes deleted or changed at the
// old place meanwhile: planLeftovers); after step 2 the dishes are only at the new place and
// the restaurant at the old one; after step 3 the restaurant is in no
// shard, so the redelivered upsert
// finds it unknown and simply writes it at its new location, where its
// dishes already are. Replayed copies come back Stale or NotFound.
//
// The copies in step 1 use external_gte, not external: if the restaurant
// moved away from the new shard earlier, that shard holds a delete
// tombstone of each dish at the very version being copied, which
// external would refuse (the dish would be lost) and external_gte
// accepts. The copy is the stored document of that version, so writing it
// again changes nothing else.
//
// A location change within the geoshard that changes the cell rewrites
// the dishes' geo_cell in place (step 1 under the same routing), so that a
// reshard, which routes by geo_cell, keeps each dish with its restaurant.
//
// # Dual writes
//
// During a migration every step runs on both indexes, each under its own
// map (the geoshard may change under one map and not under the other,
// and then that index only rewrites geo_cell), and takes the dishes from
// the source, as the dual-write rules say (doc.go). A step is
// acknowledged by both before the next one starts, but a crash inside a
// step may leave it done
// on one index only, and the directory is warmed from one index, the
// primary. So a restaurant copy is removed from the other index before
// the primary (step 3 is split in two, and a restaurant delete deletes
// the other index's copy first): a restaurant the primary still shows is
// one a redelivered event moves or deletes again on both, idempotently;
// one the primary no longer shows has no copy left anywhere that a
// redelivered event would have to find. And the event's own write, done
// by the primary and not by the other index, comes again at a version
// the directory already has: the same version at the same place is
// written again rather than taken as stale (indexer_decide.go); the source
// answers it Stale but holds it live at that very version, so the other
// index is written too (indexer_targets.go, emitSourceFirst).

// moveStep is one step of a move or a delete with its dishes, in the
// order they run.
type moveStep int

const (
	stepCopyDishes            moveStep = iota + 1 // a move: the dishes' copies on the new shard
	stepDeleteOldDishes                           // a move: the dishes' old copies
	stepDeleteRevived                             // a move: copies of dishes that changed restaurant meanwhile
	stepDeleteOtherOldCopy                        // a move during dual writes: the restaurant's old copy in the other index
	stepDeleteOldCopy                             // a move: the restaurant's old copy
	stepDeleteDishes                              // a delete: the restaurant's dishes
	stepDeleteRestaurantOther                     // a delete during dual writes: the restaurant in the other index
	stepProbeGone                                 // a move, after the copies: what became of the dishes an earlier attempt left at the new place
	stepTombstones                                // a delete: the restaurant's tombstone under every other routing
)

func (s moveStep) String() string {
	switch s {
	case stepCopyDishes:
		return "copy dishes"
	case stepProbeGone:
		return "probe the old place for dishes an earlier attempt left"
	case stepDeleteRevived:
		return "delete copies of dishes that changed restaurant meanwhile"
	case stepDeleteOldDishes:
		return "delete old dish copies"
	case stepDeleteOtherOldCopy:
		return "delete old restaurant copy from the other index"
	case stepDeleteOldCopy:
		return "delete old restaurant copy"
	case stepDeleteDishes:
		return "delete dishes"
	case stepDeleteRestaurantOther:
		return "delete restaurant from the other index"
	case stepTombstones:
		return "leave the restaurant's tombstone under every routing"
	}
	return fmt.Sprintf("step %d", int(s))
}

// step writes one step's items and waits for their answers, and for
// none other (Writer.Do). rej is the first rejection, prefixed with the
// step: the event is dead-lettered and the change stops where it is (the
// index stays consistent: every step leaves each document in one place or
// duplicated, never lost). A write that failed for good is an error.
func (ix *indexer) step(ctx context.Context, ev *event, name moveStep, items []bulk.Item) (rej, err error) {
	_, rej, err = ix.stepResults(ctx, ev, name, items)
	return rej, err
}

// stepResults is step, with the items' results.
//
// The items belong to ev's generation: once it ends, what is not sent yet
// is withdrawn (indexer_fence.go).
func (ix *indexer) stepResults(ctx context.Context, ev *event, name moveStep, items []bulk.Item) (rs []bulk.Result, rej, err error) {
	for i := range items {
		items[i].Ref = genTag(ev.gen)
	}
	rs, err = ix.writer.Do(ctx, items...)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range rs {
		switch r.Outcome {
		case bulk.Failed:
			return nil, nil, fmt.Errorf("%w: %s of restaurant %s: %w", ErrWriteFailed, name, ev.change.ID, r.Err)
		case bulk.Permanent:
			if rej == nil {
				rej = fmt.Errorf("%s: %w", name, r.Err)
			}
		}
	}
	if rej != nil {
		ix.log.Warn("restaurant change stopped: a write was rejected", "step", name, "partition", ev.part.String(), "offset", ev.offset, "error", rej)
		return rs, rej, nil
	}
	if ix.stepHook != nil {
		if err := ix.stepHook(name); err != nil {
			return nil, nil, err
		}
	}
	return rs, nil, nil
}

// refreshAll makes every acknowledged write visible to the searches of a
// move or delete, in every target. The restaurant is quiet (whenQuiet):
// every earlier write of it and of its dishes is acknowledged. The
// refresh is shared with the other moves and deletes of the moment
// (refresher), so its cost is not the move's own.
func (ix *indexer) refreshAll(ctx context.Context, targets []target) error {
	for i, t := range targets {
		if slices.ContainsFunc(targets[:i], func(o target) bool { return o.index == t.index }) {
			continue
		}
		if err := ix.refresh(ctx, t.index); err != nil {
			return err
		}
	}
	return nil
}

// relocate runs steps 1 to 3 of a move (or the in-place geo_cell rewrite)
// for every target, on a task. rej is set when a write was rejected: the
// event is dead-lettered instead.
func (ix *indexer) relocate(ctx context.Context, targets []target, ev *event, from, to s2.CellID) (rej, err error) {
	if err := ix.refreshAll(ctx, targets); err != nil {
		return nil, err
	}
	plan, err := ix.planMove(ctx, targets, ev, from, to)
	if err != nil {
		return nil, err
	}
	if rej, err := ix.step(ctx, ev, stepCopyDishes, plan.copies); rej != nil || err != nil {
		return rej, err
	}
	if len(plan.leftovers) > 0 {
		rs, rej, err := ix.stepResults(ctx, ev, stepProbeGone, plan.probes())
		if rej != nil || err != nil {
			return rej, err
		}
		plan.oldDishes = append(plan.oldDishes, plan.gone(rs)...)
	}
	if len(plan.oldRestaurants) == 0 {
		return nil, nil // the cell changed, the shard did not
	}
	for _, st := range plan.deletes(targets[0].index) {
		rs, rej, err := ix.stepResults(ctx, ev, st.name, st.items)
		if rej != nil || err != nil {
			return rej, err
		}
		if st.name == stepDeleteOldDishes {
			if rej, err := ix.step(ctx, ev, stepDeleteRevived, plan.revived(rs)); rej != nil || err != nil {
				return rej, err
			}
		}
	}
	ix.moves.Add(1)
	ix.met.moves.Inc()
	return nil, nil
}

// oldCopy is a document a move leaves on the old shard, deleted once its
// copy at the new cell is written.
type oldCopy struct {
	index, id, routing, label string
	version                   int64
}

// movePlan is what a move writes and then deletes, over every target.
type movePlan struct {
	// copies are the restaurant's dishes rewritten at the new cell.
	copies []bulk.Item
	// oldDishes are the dishes' copies on the old shard, and
	// oldRestaurants the restaurant's, of the targets whose shard changes
	// (none when only the cell does).
	oldDishes, oldRestaurants []oldCopy
	// leftovers are the copies an earlier attempt of the move left on the
	// new shard of dishes the old one no longer holds (planLeftovers).
	leftovers []leftover
}

// planMove reads the restaurant's dishes at from (the source target's,
// during dual writes: sourceDishes) and plans their copies at to and the
// deletes of what stays behind, for every target whose cell changes.
func (ix *indexer) planMove(ctx context.Context, targets []target, ev *event, from, to s2.CellID) (movePlan, error) {
	rid := ev.change.ID
	var plan movePlan
	src, err := ix.sourceDishes(ctx, targets, rid, from)
	if err != nil {
		return plan, err
	}
	for i := range targets {
		t := &targets[i]
		level := t.m.Level()
		fromShard, fromRouting := t.routing(from)
		toShard, toRouting := t.routing(to)
		toToken := cellAt(to, level).ToToken()
		if fromShard == toShard && cellAt(from, level) == cellAt(to, level) {
			continue
		}
		dishes, err := ix.dishesIn(ctx, targets, i, src, rid, fromRouting)
		if err != nil {
			return plan, err
		}
		for _, d := range dishes {
			body, err := withGeoCell(d.hit.Source, toToken)
			if err != nil {
				return plan, fmt.Errorf("pipeline: dish %s: rewrite source: %w", d.hit.ID, err)
			}
			plan.copies = append(plan.copies, bulk.Item{
				Action: bulk.Index, Index: t.index, ID: d.hit.ID, Routing: toRouting, Version: d.version,
				VersionType: bulk.ExternalGTE, Body: body, Shard: t.labels[toShard],
			})
			if fromShard != toShard {
				plan.oldDishes = append(plan.oldDishes, oldCopy{t.index, d.hit.ID, fromRouting, t.labels[fromShard], d.version})
			}
		}
		if fromShard != toShard {
			plan.oldRestaurants = append(plan.oldRestaurants, oldCopy{t.index, schema.RestaurantID(rid), fromRouting, t.labels[fromShard], ev.change.Version})
			if err := ix.planLeftovers(ctx, t, rid, fromShard, toShard, dishes, &plan); err != nil {
				return plan, err
			}
		}
	}
	return plan, nil
}

// planLeftovers lists the restaurant's dishes stored at the new place
// that the old place does not hold live. While a move runs the restaurant
// is held and the directory puts its dishes at the old place, so such a
// dish is what an earlier attempt of this very move, cut short (a crash,
// or the end of its generation: indexer_fence.go), copied there. Either that
// attempt also deleted its old copy (step 2), and the copy at the new
// place is the dish, to keep; or the dish was deleted, or moved to
// another restaurant, at the old place since, where the restaurant still
// was, and the copy at the new place would outlive it. The two differ by
// the old place's tombstone: step 2 leaves one at the copy's own version,
// a later delete or change a newer one. probes asks the old place, and
// gone deletes the copies the answers condemn.
func (ix *indexer) planLeftovers(ctx context.Context, t *target, rid string, from, to int, moving []storedDish, plan *movePlan) error {
	carried := make(map[string]bool, len(moving))
	for _, d := range moving {
		carried[d.hit.ID] = true
	}
	fromRouting, toRouting := t.m.Shard(from).Routing, t.m.Shard(to).Routing
	return ix.eachDish(ctx, t.index, rid, toRouting, func(h bulk.Hit, v int64) error {
		if !carried[h.ID] {
			plan.leftovers = append(plan.leftovers, leftover{
				old:  oldCopy{t.index, h.ID, fromRouting, t.labels[from], v},
				left: oldCopy{t.index, h.ID, toRouting, t.labels[to], v},
			})
		}
		return nil
	})
}

// leftover is a dish's copy at a move's new place that its old place does
// not hold live (planLeftovers).
type leftover struct {
	old, left oldCopy
}

// probes are deletes at the old place, with external_gte at each
// leftover's version: where step 2 of an earlier attempt left its
// tombstone, or nothing is (the tombstone expired), they change nothing
// that is live; a newer tombstone refuses them, naming its version.
func (plan movePlan) probes() []bulk.Item {
	out := make([]bulk.Item, len(plan.leftovers))
	for i, l := range plan.leftovers {
		o := l.old
		out[i] = bulk.Item{Action: bulk.Delete, Index: o.index, ID: o.id, Routing: o.routing, Version: o.version, VersionType: bulk.ExternalGTE, Shard: o.label}
	}
	return out
}

// gone returns the deletes of the leftovers whose probe met a newer
// version at the old place, at that version: the dish was deleted or
// changed since the copy was made.
func (plan movePlan) gone(rs []bulk.Result) []oldCopy {
	var out []oldCopy
	for _, r := range rs {
		if r.Outcome != bulk.Stale {
			continue
		}
		for _, l := range plan.leftovers {
			if l.old.index == r.Item.Index && l.old.id == r.Item.ID && r.Stored > l.left.version {
				c := l.left
				c.version = r.Stored
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// revived returns the deletes of the copies that must not stay: those of
// the dishes whose old copy's delete (rs) was refused as stale. Between
// the move's read and that delete something newer took the old place: a
// newer version of the dish written under another restaurant on that
// shard, or the tombstone its check left when the dish changed restaurant
// (reparent.go). The copy at the new place is then an older version than
// the dish has, and is deleted at its version plus one, which no real
// version of the dish can be below (a newer one exists).
func (plan movePlan) revived(rs []bulk.Result) []bulk.Item {
	var out []bulk.Item
	for _, r := range rs {
		if r.Outcome != bulk.Stale {
			continue
		}
		for _, c := range plan.copies {
			if c.Index == r.Item.Index && c.ID == r.Item.ID {
				out = append(out, bulk.Item{
					Action: bulk.Delete, Index: c.Index, ID: c.ID, Routing: c.Routing,
					Version: c.Version + 1, VersionType: bulk.External, Shard: c.Shard,
				})
				break
			}
		}
	}
	return out
}

// deleteStep is one step of a move's deletes.
type deleteStep struct {
	name  moveStep
	items []bulk.Item
}

// deletes are the plan's deletes in step order: the old dishes, then the
// old restaurant copy of the other target (a step only during dual
// writes), then the primary's, whose index is primary: the copy leaves
// the other target before the primary (see Dual writes above).
func (plan movePlan) deletes(primary string) []deleteStep {
	var other, prim []oldCopy
	for _, o := range plan.oldRestaurants {
		if o.index == primary {
			prim = append(prim, o)
		} else {
			other = append(other, o)
		}
	}
	items := func(copies []oldCopy, vtype bulk.VersionType) []bulk.Item {
		out := make([]bulk.Item, len(copies))
		for i, o := range copies {
			out[i] = bulk.Item{
				Action: bulk.Delete, Index: o.index, ID: o.id, Routing: o.routing, Version: o.version,
				VersionType: vtype, Shard: o.label,
			}
		}
		return out
	}
	steps := []deleteStep{{stepDeleteOldDishes, items(plan.oldDishes, bulk.ExternalGTE)}}
	if len(other) > 0 {
		steps = append(steps, deleteStep{stepDeleteOtherOldCopy, items(other, bulk.External)})
	}
	return append(steps, deleteStep{stepDeleteOldCopy, items(prim, bulk.External)})
}

// deleteDependents deletes, on a task, every dish of a live restaurant at
// cell (unless dishes is false: the source deletes them itself,
// restaurantDelete), each with external_gte and its own version (a dish
// written since with a newer version survives, as it should: it came
// after the delete), and during dual writes the restaurant's copy in the
// other index. The
// restaurant leaves the other target before the primary: the directory
// is read from the primary, so a restaurant the primary still has is one
// a redelivered delete finds and deletes again; one the primary no longer
// has must be gone everywhere. The primary's copy is the event's own
// write, which the loop adds after this. rej is set when a write was
// rejected.
func (ix *indexer) deleteDependents(ctx context.Context, targets []target, ev *event, cell s2.CellID, dishes bool) (rej, err error) {
	rid := ev.change.ID
	if !dishes {
		return ix.deleteOtherCopy(ctx, targets, ev, cell)
	}
	if err := ix.refreshAll(ctx, targets); err != nil {
		return nil, err
	}
	src, err := ix.sourceDishes(ctx, targets, rid, cell)
	if err != nil {
		return nil, err
	}
	var items []bulk.Item
	for i := range targets {
		t := &targets[i]
		shard, routing := t.routing(cell)
		dishes, err := ix.dishesIn(ctx, targets, i, src, rid, routing)
		if err != nil {
			return nil, err
		}
		for _, d := range dishes {
			items = append(items, bulk.Item{
				Action: bulk.Delete, Index: t.index, ID: d.hit.ID, Routing: routing, Version: d.version,
				VersionType: bulk.ExternalGTE, Shard: t.labels[shard],
			})
		}
	}
	if rej, err := ix.step(ctx, ev, stepDeleteDishes, items); rej != nil || err != nil {
		return rej, err
	}
	return ix.deleteOtherCopy(ctx, targets, ev, cell)
}

// deleteOtherCopy deletes, during dual writes, ev's restaurant at cell in
// the other index, before the primary's (deleteDependents).
func (ix *indexer) deleteOtherCopy(ctx context.Context, targets []target, ev *event, cell s2.CellID) (rej, err error) {
	if len(targets) < 2 {
		return nil, nil
	}
	rid := ev.change.ID
	var items []bulk.Item
	for i := range targets[1:] {
		t := &targets[1+i]
		shard, routing := t.routing(cell)
		items = append(items, bulk.Item{
			Action: bulk.Delete, Index: t.index, ID: schema.RestaurantID(rid), Routing: routing, Version: ev.change.Version,
			VersionType: bulk.External, Shard: t.labels[shard],
		})
	}
	return ix.step(ctx, ev, stepDeleteRestaurantOther, items)
}

// restaurantTombstones deletes ev's restaurant at the delete's version
// under every routing of every target but the one of at (nil: none),
// where the delete itself goes. The index keeps no deleted document, so a
// member that never saw the delete (the partition's next owner, whose
// directory was read from the index) takes a replay of an older upsert
// for a restaurant it does not know, and writes it under the replay's own
// routing (confirmRestaurant): only a tombstone there refuses it. A
// delete under a routing that holds nothing leaves one (external
// versioning), and one that meets a newer version is stale, and harmless.
// The tombstones last as long as the index keeps them
// (index.gc_deletes).
func (ix *indexer) restaurantTombstones(ctx context.Context, targets []target, ev *event, at *s2.CellID) (rej, err error) {
	id := schema.RestaurantID(ev.change.ID)
	var items []bulk.Item
	for i := range targets {
		t := &targets[i]
		own := ""
		if at != nil {
			_, own = t.routing(*at)
		}
		for s := range t.m.NumShards() {
			r := t.m.Shard(s).Routing
			if r == own {
				continue
			}
			items = append(items, bulk.Item{
				Action: bulk.Delete, Index: t.index, ID: id, Routing: r, Version: ev.change.Version,
				VersionType: bulk.External, Shard: t.labels[s],
			})
		}
	}
	return ix.step(ctx, ev, stepTombstones, items)
}

// storedDish is a dish as an index stores it, with its version.
type storedDish struct {
	hit     bulk.Hit
	version int64
}

// sourceDishes returns, during dual writes, the dishes of restaurant rid
// at cell in the migration's source, the index with the complete data
// (the other may not have them yet: the backfill copies them); nil
// without dual writes.
func (ix *indexer) sourceDishes(ctx context.Context, targets []target, rid string, cell s2.CellID) ([]storedDish, error) {
	if len(targets) < 2 {
		return nil, nil
	}
	t := &targets[sourceIndex(targets)]
	_, routing := t.routing(cell)
	var out []storedDish
	err := ix.eachDish(ctx, t.index, rid, routing, func(h bulk.Hit, v int64) error {
		out = append(out, storedDish{h, v})
		return nil
	})
	return out, err
}

// dishesIn returns the dishes of restaurant rid a move or delete applies
// to in target i: those the index holds under routing, and during dual
// writes every dish of the source (src), whether the index holds it or
// not, each at the higher of the two versions. A write or delete of a
// dish the index lacks, with external_gte at the source's version, puts
// it in its new place or leaves a tombstone at the old one, which refuses
// a backfill copy of that version read before the change.
func (ix *indexer) dishesIn(ctx context.Context, targets []target, i int, src []storedDish, rid, routing string) ([]storedDish, error) {
	t := &targets[i]
	if len(targets) > 1 && i == sourceIndex(targets) {
		return src, nil
	}
	byID := make(map[string]storedDish, len(src))
	for _, d := range src {
		byID[d.hit.ID] = d
	}
	err := ix.eachDish(ctx, t.index, rid, routing, func(h bulk.Hit, v int64) error {
		if d, ok := byID[h.ID]; !ok || v > d.version {
			byID[h.ID] = storedDish{h, v}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]storedDish, 0, len(byID))
	for _, d := range byID {
		out = append(out, d)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].hit.ID < out[b].hit.ID })
	return out, nil
}

// eachDish pages through the dishes of restaurant rid stored under
// routing, sorted by doc_id with search_after, and calls fn with each and
// its version.
func (ix *indexer) eachDish(ctx context.Context, index, rid, routing string, fn func(bulk.Hit, int64) error) error {
	var after json.RawMessage
	for {
		q := map[string]any{
			"query": map[string]any{"term": map[string]any{schema.FieldRestaurantID: rid}},
			"sort":  []any{map[string]any{schema.FieldDocID: "asc"}},
			"size":  ix.searchSize,
		}
		if after != nil {
			q["search_after"] = []json.RawMessage{after}
		}
		body, err := json.Marshal(q)
		if err != nil {
			return err
		}
		var page *bulk.Page
		select {
		case ix.searchSlots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		err = retry(ctx, ix.log, "search dishes of restaurant "+rid, func() error {
			var err error
			page, err = ix.admin.Search(ctx, index, body, bulk.SearchParams{Routing: routing})
			return err
		})
		<-ix.searchSlots
		if err != nil {
			return err
		}
		for _, h := range page.Hits {
			if h.Routing != "" && h.Routing != routing {
				continue // another geoshard's document on the same physical shard
			}
			var src struct {
				Version json.Number `json:"version"`
			}
			if err := json.Unmarshal(h.Source, &src); err != nil {
				return fmt.Errorf("pipeline: dish %s in %s: %w", h.ID, index, err)
			}
			v, err := strconv.ParseInt(src.Version.String(), 10, 64)
			if err != nil {
				return fmt.Errorf("pipeline: dish %s in %s: version %q: %w", h.ID, index, src.Version, err)
			}
			if err := fn(h, v); err != nil {
				return err
			}
		}
		if len(page.Hits) < ix.searchSize || len(page.Hits) == 0 {
			return nil
		}
		last := page.Hits[len(page.Hits)-1]
		if len(last.Sort) == 0 {
			return fmt.Errorf("pipeline: search of %s returned no sort values", index)
		}
		after = last.Sort[0]
	}
}

// retry runs an admin call until it succeeds, with the project's backoff
// (bulk.Retry), for as long as it takes: nothing transient is fatal. What
// bulk.Transient calls transient (no answer or a request timed out, 429,
// 500, 502, 503, 504) is retried, with a warning each time; anything else
// (a missing index, a refusal), or an error f wraps in backoff.Permanent,
// stops the pipeline, as does the end of ctx.
func retry(ctx context.Context, log *slog.Logger, op string, f func() error) error {
	attempt := 0
	err := bulk.Retry(ctx, bulk.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second},
		bulk.Transient, func(err error, wait time.Duration) {
			attempt++
			log.Warn("request failed; retrying", "step", op, "attempt", attempt, "in", wait, "error", err)
		}, f)
	if err != nil {
		return fmt.Errorf("pipeline: %s: %w", op, err)
	}
	return nil
}
