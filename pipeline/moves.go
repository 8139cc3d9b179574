package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
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
//  1. flush the writer (every earlier write of the restaurant's dishes is
//     acknowledged) and refresh, so the search sees them; page through the
//     dishes under the old routing and write each under the new routing
//     with its own version and the new geo_cell; flush.
//  2. delete each old copy with version_type=external_gte and its
//     version; flush. (A dish written again since is newer and survives.)
//  3. delete the old restaurant copy with the event's version; flush.
//  4. write the restaurant under the new routing (the event's own write),
//     then update the directory.
//
// Each flush makes the next step start only when the previous one is
// acknowledged: a crash after step 1 leaves copies on both shards of
// dishes (the redelivered move rewrites them, stale or not); after step 2
// the dishes are only at the new place and the restaurant at the old one;
// after step 3 the restaurant is in no shard, so the redelivered upsert
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
// map: the geoshard may change under one map and not under the other, and
// then that index only rewrites geo_cell. The dishes a step applies to
// are taken from the migration's source, the index with the complete
// data (the target may not have them yet: the backfill copies them),
// together with those the index itself holds, and the step is applied to
// each index whether it holds a copy or not: a copy is written at the new
// place with external_gte at the dish's version, and the old copy deleted
// with external_gte at that version, which on an index without the copy
// leaves a tombstone (the migration raises gc_deletes) that refuses a
// backfill copy read before the move and written after it. The same
// holds for the in-place geo_cell rewrite and for the dishes of a
// deleted restaurant. A step is acknowledged by both
// before the next one starts, but a crash inside a step may leave it done
// on one index only, and the directory is warmed from one index, the
// primary. So a restaurant copy is removed from the other index before
// the primary (step 3 is split in two, and a restaurant delete deletes
// the other index's copy first): a restaurant the primary still shows is
// one a redelivered event moves or deletes again on both, idempotently;
// one the primary no longer shows has no copy left anywhere that a
// redelivered event would have to find. And the event's own write, done
// by the primary and not by the other index, comes again at a version
// the directory already has: the same version at the same place is
// written again rather than taken as stale (handle.go); the source
// answers it Stale but holds it live at that very version, so the other
// index is written too (targets.go, emitSourceFirst).

// auxGroup collects the outcomes of the writes of one step.
type auxGroup struct {
	mu        sync.Mutex
	n         int
	permanent error
	failed    error
}

func (g *auxGroup) add(r bulk.Result) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	switch r.Outcome {
	case bulk.Permanent:
		if g.permanent == nil {
			g.permanent = r.Err
		}
	case bulk.Failed:
		if g.failed == nil {
			g.failed = r.Err
		}
	}
}

// settle waits for a step's writes. ok is false when one was rejected:
// the event has been dead-lettered and the move stops where it is (the
// index stays consistent: every step leaves each document in one place or
// duplicated, never lost).
func (p *Pipeline) settle(ctx context.Context, ev *event, g *auxGroup, step string) (ok bool, err error) {
	if err := p.writer.Flush(ctx); err != nil {
		return false, err
	}
	g.mu.Lock()
	failed, permanent := g.failed, g.permanent
	g.mu.Unlock()
	switch {
	case failed != nil:
		return false, fmt.Errorf("%w: %s of restaurant %s: %w", ErrWriteFailed, step, ev.change.ID, failed)
	case permanent != nil:
		p.log.Warn("restaurant change stopped: a write was rejected", "step", step, "partition", ev.part.String(), "offset", ev.offset, "error", permanent)
		return false, p.deadLetter(ctx, ev, ReasonRejected, step+": "+permanent.Error(), resultDeadLetter)
	}
	if p.stepHook != nil {
		if err := p.stepHook(step); err != nil {
			return false, err
		}
	}
	return true, nil
}

// flushAndRefresh makes every write so far visible to search.
func (p *Pipeline) flushAndRefresh(ctx context.Context) error {
	if err := p.writer.Flush(ctx); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, t := range p.targets {
		if seen[t.index] {
			continue
		}
		seen[t.index] = true
		err := p.retry(ctx, "refresh "+t.index, func() error { return p.admin.Refresh(ctx, t.index) })
		if err != nil {
			return err
		}
	}
	return nil
}

// relocate runs steps 1 to 3 of a move (or the in-place geo_cell rewrite)
// for every target. ok is false when the event was dead-lettered instead.
func (p *Pipeline) relocate(ctx context.Context, ev *event, from, to s2.CellID) (ok bool, err error) {
	rid := ev.change.ID
	if err := p.flushAndRefresh(ctx); err != nil {
		return false, err
	}
	type oldCopy struct {
		index, id, routing, label string
		version                   int64
	}
	var olds []oldCopy
	var oldRestaurants []oldCopy
	src, err := p.sourceDishes(ctx, rid, from)
	if err != nil {
		return false, err
	}
	copies := &auxGroup{}
	for i := range p.targets {
		t := &p.targets[i]
		level := t.m.Level()
		fromShard, fromRouting := t.routing(from)
		toShard, toRouting := t.routing(to)
		toToken := cellAt(to, level).ToToken()
		if fromShard == toShard && cellAt(from, level) == cellAt(to, level) {
			continue
		}
		dishes, err := p.dishesIn(ctx, i, src, rid, fromRouting)
		if err != nil {
			return false, err
		}
		for _, d := range dishes {
			body, err := withGeoCell(d.hit.Source, toToken)
			if err != nil {
				return false, fmt.Errorf("pipeline: dish %s: rewrite source: %w", d.hit.ID, err)
			}
			if err := p.writer.Add(ctx, bulk.Item{
				Action: bulk.Index, Index: t.index, ID: d.hit.ID, Routing: toRouting, Version: d.version,
				VersionType: bulk.ExternalGTE, Body: body, Shard: t.labels[toShard], Ref: copies,
			}); err != nil {
				return false, err
			}
			if fromShard != toShard {
				olds = append(olds, oldCopy{t.index, d.hit.ID, fromRouting, t.labels[fromShard], d.version})
			}
		}
		if fromShard != toShard {
			oldRestaurants = append(oldRestaurants, oldCopy{t.index, schema.RestaurantID(rid), fromRouting, t.labels[fromShard], ev.change.Version})
		}
	}
	if ok, err := p.settle(ctx, ev, copies, "copy dishes"); !ok || err != nil {
		return false, err
	}
	if len(oldRestaurants) == 0 {
		return true, nil // the cell changed, the shard did not
	}
	// The old restaurant copy leaves the other target before the primary
	// (see Dual writes above).
	var otherRestaurants, primaryRestaurants []oldCopy
	for _, o := range oldRestaurants {
		if o.index == p.targets[0].index {
			primaryRestaurants = append(primaryRestaurants, o)
		} else {
			otherRestaurants = append(otherRestaurants, o)
		}
	}
	for _, step := range []struct {
		name   string
		copies []oldCopy
		vtype  bulk.VersionType
	}{
		{"delete old dish copies", olds, bulk.ExternalGTE},
		{"delete old restaurant copy from the other index", otherRestaurants, bulk.External},
		{"delete old restaurant copy", primaryRestaurants, bulk.External},
	} {
		if len(step.copies) == 0 && step.name == "delete old restaurant copy from the other index" {
			continue
		}
		g := &auxGroup{}
		for _, o := range step.copies {
			if err := p.writer.Add(ctx, bulk.Item{
				Action: bulk.Delete, Index: o.index, ID: o.id, Routing: o.routing, Version: o.version,
				VersionType: step.vtype, Shard: o.label, Ref: g,
			}); err != nil {
				return false, err
			}
		}
		if ok, err := p.settle(ctx, ev, g, step.name); !ok || err != nil {
			return false, err
		}
	}
	p.moves.Add(1)
	p.met.moves.Inc()
	return true, nil
}

// deleteElsewhere deletes document id, routed from cell, from every target
// but the primary, with the event's version, and waits for it.
func (p *Pipeline) deleteElsewhere(ctx context.Context, ev *event, id string, cell s2.CellID, step string) (ok bool, err error) {
	g := &auxGroup{}
	for i := range p.targets[1:] {
		t := &p.targets[1+i]
		shard, routing := t.routing(cell)
		if err := p.writer.Add(ctx, bulk.Item{
			Action: bulk.Delete, Index: t.index, ID: id, Routing: routing, Version: ev.change.Version,
			VersionType: bulk.External, Shard: t.labels[shard], Ref: g,
		}); err != nil {
			return false, err
		}
	}
	return p.settle(ctx, ev, g, step)
}

// deleteDishes deletes every dish of a live restaurant at cell, each with
// external_gte and its own version (a dish written since with a newer
// version survives, as it should: it came after the delete). ok is false
// when the event was dead-lettered instead.
func (p *Pipeline) deleteDishes(ctx context.Context, ev *event, rid string, cell s2.CellID) (ok bool, err error) {
	if err := p.flushAndRefresh(ctx); err != nil {
		return false, err
	}
	src, err := p.sourceDishes(ctx, rid, cell)
	if err != nil {
		return false, err
	}
	g := &auxGroup{}
	for i := range p.targets {
		t := &p.targets[i]
		shard, routing := t.routing(cell)
		dishes, err := p.dishesIn(ctx, i, src, rid, routing)
		if err != nil {
			return false, err
		}
		for _, d := range dishes {
			if err := p.writer.Add(ctx, bulk.Item{
				Action: bulk.Delete, Index: t.index, ID: d.hit.ID, Routing: routing, Version: d.version,
				VersionType: bulk.ExternalGTE, Shard: t.labels[shard], Ref: g,
			}); err != nil {
				return false, err
			}
		}
	}
	return p.settle(ctx, ev, g, "delete dishes")
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
func (p *Pipeline) sourceDishes(ctx context.Context, rid string, cell s2.CellID) ([]storedDish, error) {
	if len(p.targets) < 2 {
		return nil, nil
	}
	t := &p.targets[sourceIndex(p.targets)]
	_, routing := t.routing(cell)
	var out []storedDish
	err := p.eachDish(ctx, t.index, rid, routing, func(h bulk.Hit, v int64) error {
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
func (p *Pipeline) dishesIn(ctx context.Context, i int, src []storedDish, rid, routing string) ([]storedDish, error) {
	t := &p.targets[i]
	if len(p.targets) > 1 && i == sourceIndex(p.targets) {
		return src, nil
	}
	byID := make(map[string]storedDish, len(src))
	for _, d := range src {
		byID[d.hit.ID] = d
	}
	err := p.eachDish(ctx, t.index, rid, routing, func(h bulk.Hit, v int64) error {
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
func (p *Pipeline) eachDish(ctx context.Context, index, rid, routing string, fn func(bulk.Hit, int64) error) error {
	var after json.RawMessage
	for {
		q := map[string]any{
			"query": map[string]any{"term": map[string]any{schema.FieldRestaurantID: rid}},
			"sort":  []any{map[string]any{schema.FieldDocID: "asc"}},
			"size":  p.searchPageSize,
		}
		if after != nil {
			q["search_after"] = []json.RawMessage{after}
		}
		body, err := json.Marshal(q)
		if err != nil {
			return err
		}
		var page *bulk.Page
		err = p.retry(ctx, "search dishes of restaurant "+rid, func() error {
			var err error
			page, err = p.admin.Search(ctx, index, body, bulk.SearchParams{Routing: routing})
			return err
		})
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
		if len(page.Hits) < p.searchPageSize || len(page.Hits) == 0 {
			return nil
		}
		last := page.Hits[len(page.Hits)-1]
		if len(last.Sort) == 0 {
			return fmt.Errorf("pipeline: search of %s returned no sort values", index)
		}
		after = last.Sort[0]
	}
}

// retry runs an admin call until it succeeds, with exponential backoff and
// jitter, for up to five minutes; a call that still fails stops the
// pipeline. A missing index is not retried, nor an error f wraps in
// backoff.Permanent.
func (p *Pipeline) retry(ctx context.Context, op string, f func() error) error {
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(100*time.Millisecond),
		backoff.WithMaxInterval(5*time.Second),
		backoff.WithMaxElapsedTime(5*time.Minute),
	)
	attempt := 0
	err := backoff.Retry(func() error {
		attempt++
		err := f()
		if err == nil {
			return nil
		}
		var perm *backoff.PermanentError
		if errors.As(err, &perm) {
			return err // f says it is not worth retrying
		}
		if bulk.IsNotFound(err) || ctx.Err() != nil {
			return backoff.Permanent(err)
		}
		p.log.Warn("opensearch call failed; retrying", "step", op, "attempt", attempt, "error", err)
		return err
	}, backoff.WithContext(b, ctx))
	if err != nil {
		var perm *backoff.PermanentError
		if errors.As(err, &perm) {
			err = perm.Err
		}
		return fmt.Errorf("pipeline: %s: %w", op, err)
	}
	return nil
}
