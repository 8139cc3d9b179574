package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/pipeline/directory"
	"github.com/geoshard/geoshard/schema"
	"github.com/golang/geo/s2"
)

// restaurantUpsert writes a restaurant at its location, moving it and its
// dishes first if the location left the restaurant's cell, then writes the
// dishes that waited for it.
func (ix *indexer) restaurantUpsert(ctx context.Context, ev *event) error {
	c := ev.change
	cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(c.Lat, c.Lon))
	old, known := ix.dir.Get(c.ID)
	if known && (c.Version < old.Version || c.Version == old.Version && (old.Deleted || ix.cellChanged(old.Cell, cell))) {
		// The directory holds a newer version (live or deleted): writing
		// this one under its own location could leave a stray copy on
		// another shard, where no tombstone protects it.
		//
		// The same version at the same place is written again: it is this
		// very event, delivered again, and during dual writes the
		// directory, read from the primary, may show it although the other
		// target never acknowledged it. External versioning makes the copy
		// a target already has Stale.
		ix.host.finish(ev, resultStale)
		return nil
	}
	if ix.sourceDeletesDishes && known && old.Deleted && old.Cell != 0 && ix.cellChanged(old.Cell, cell) {
		// Re-created at another cell, where its delete left its dishes
		// under the old one (restaurantDelete): those written before the
		// delete was processed and not deleted since. They move with it,
		// as in a move of a live restaurant (indexer_moves.go): those of
		// the new incarnation are kept at its place, and an old one's own
		// delete, still to come, finds it there. The move's delete of the
		// old restaurant copy, at this version, also lands the delete
		// there first (see below).
		targets := ix.targets
		return ix.restaurantTask(ctx, ev,
			func(ctx context.Context) (error, error) { return ix.relocate(ctx, targets, ev, old.Cell, cell) },
			func(ctx context.Context) error { return ix.writeRestaurant(ctx, ev, cell) })
	}
	if known && old.Deleted && old.Cell != 0 && ix.shardChanged(old.Cell, cell) {
		// Re-created on another shard than the one its delete went to:
		// the delete must land first. Were the pipeline cut short with
		// the new copy written and the delete not, the old copy would
		// stay, live, where no redelivered event looks (the directory
		// would show the new copy's version).
		return ix.whenQuiet(ctx, c.ID, func(ctx context.Context) error {
			if err := ix.writeRestaurant(ctx, ev, cell); err != nil {
				return err
			}
			return ix.unhold(ctx, c.ID)
		})
	}
	if known && !old.Deleted && ix.cellChanged(old.Cell, cell) {
		targets := ix.targets
		return ix.restaurantTask(ctx, ev,
			func(ctx context.Context) (error, error) { return ix.relocate(ctx, targets, ev, old.Cell, cell) },
			func(ctx context.Context) error { return ix.writeRestaurant(ctx, ev, cell) })
	}
	if !known {
		return ix.confirmRestaurant(ctx, ev, cell)
	}
	return ix.writeRestaurant(ctx, ev, cell)
}

// confirmRestaurant writes a restaurant the directory knows nothing of,
// and holds it until the index has answered: only then does the
// directory take it as live and its waiting dishes go to the index. The
// directory is read from the index, which keeps no deleted document, so
// a restaurant deleted before the read is unknown here; a replay of an
// older upsert of it is refused by the delete's tombstone (Stale), and
// the restaurant is then recorded as deleted at that version instead, so
// that its dishes wait (and are dead-lettered) as they would have if the
// delete had been seen. (No other member writes the restaurant: it is
// keyed to a partition of this member's.)
func (ix *indexer) confirmRestaurant(ctx context.Context, ev *event, cell s2.CellID) error {
	c := ev.change
	members := ev.members
	ix.rest(c.ID).held = true
	ev.settled = func(ctx context.Context) error {
		ev.mu.Lock()
		failed, rejected, result := ev.failed, ev.rejected, ev.result
		ev.mu.Unlock()
		switch {
		case failed || rejected != nil:
			// Stopping, or dead-lettered: the directory learns nothing.
		case result == resultStale:
			// A delete's tombstone, or a copy the index holds at this
			// version or newer that the directory's read could not see (a
			// previous owner's write acknowledged after it): the index,
			// refreshed, tells which.
			ix.settleStale(ctx, c.ID, c.Version)
			return nil // settleStale ends the hold
		default:
			ix.dir.Set(c.ID, cell, c.Version)
			for _, d := range ix.pend.Take(c.ID) {
				if err := ix.dishUpsert(ctx, d); err != nil {
					return err
				}
			}
		}
		return ix.unhold(ctx, c.ID)
	}
	return ix.emit(ctx, ix.targets, ev, docWrite{
		action: bulk.Index, vtype: bulk.External, id: schema.RestaurantID(c.ID), version: c.Version, cell: cell,
		body: func(level int) []byte {
			return restaurantBody(members, c.ID, c.Version, cell, c.Lat, c.Lon, level)
		},
	})
}

// settleStale ends the hold of an unknown restaurant whose write came
// back Stale: on a task it refreshes the primary index and looks the
// restaurant up; found, the directory takes what the index holds and its
// waiting dishes go on; not found, the refusal was a delete's tombstone
// and the restaurant is recorded as deleted at version.
func (ix *indexer) settleStale(ctx context.Context, rid string, version int64) {
	t := ix.targets[0]
	ix.goTask(ctx, func(ctx context.Context) func(context.Context) error {
		err := ix.refresh(ctx, t.index)
		var found *directory.Directory
		if err == nil {
			found, err = ix.searchRestaurants(ctx, &t, []string{rid})
		}
		return func(ctx context.Context) error {
			if err != nil {
				return err
			}
			if e, ok := found.Get(rid); ok && !e.Deleted {
				ix.dir.Replace(rid, found)
				if _, live := ix.dir.Lookup(rid); live {
					for _, d := range ix.pend.Take(rid) {
						if err := ix.dishUpsert(ctx, d); err != nil {
							return err
						}
					}
				}
			} else {
				ix.dir.Remove(rid, version)
			}
			return ix.unhold(ctx, rid)
		}
	})
}

// writeRestaurant writes a restaurant's own document at cell, records it
// in the directory, and writes the dishes that waited for it.
func (ix *indexer) writeRestaurant(ctx context.Context, ev *event, cell s2.CellID) error {
	c := ev.change
	members := ev.members
	err := ix.emit(ctx, ix.targets, ev, docWrite{
		action: bulk.Index, vtype: bulk.External, id: schema.RestaurantID(c.ID), version: c.Version, cell: cell,
		body: func(level int) []byte {
			return restaurantBody(members, c.ID, c.Version, cell, c.Lat, c.Lon, level)
		},
	})
	if err != nil {
		return err
	}
	ix.dir.Set(c.ID, cell, c.Version)
	for _, d := range ix.pend.Take(c.ID) {
		if err := ix.dishUpsert(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// shardChanged reports whether a location change moves the restaurant to
// another shard under any target's map.
func (ix *indexer) shardChanged(from, to s2.CellID) bool {
	for i := range ix.targets {
		if ix.targets[i].m.LocateCell(from) != ix.targets[i].m.LocateCell(to) {
			return true
		}
	}
	return false
}

// cellChanged reports whether a location change moves the restaurant to
// another cell under any target's map (hence possibly another shard).
func (ix *indexer) cellChanged(from, to s2.CellID) bool {
	for i := range ix.targets {
		l := ix.targets[i].m.Level()
		if cellAt(from, l) != cellAt(to, l) {
			return true
		}
	}
	return false
}

// restaurantDelete deletes a restaurant and, by default, all its dishes
// (the cascade).
//
// Whether the cascade is right depends on the source, and ingest cannot
// tell from the events. A restaurant may be deleted and re-created (an
// upsert with a version above its delete) with new dishes, and nothing
// orders the dish topic against the restaurant topic: ingest may decide
// a dish upsert while its restaurant still looks live at the incarnation
// before the delete, though the source sent it after the re-creation.
// At the delete, such a dish (new, to keep) and a dish the source
// created before the delete and never deleted (old, to take with the
// restaurant) look the same: both were written while the directory held
// the restaurant live at the same version, before its delete, and no
// event of either follows. Two logs show it: R upserted, dish d
// upserted, R deleted, R upserted again (a source that relies on the
// cascade: d must end deleted); and R upserted, R deleted, R upserted
// again, dish d upserted (d must end live). Read with the dish topic
// ahead, the second reaches ingest exactly as the first does, in the
// first's own order. Nothing ingest keeps tells them apart: the dish's
// id, version and events, the restaurant's versions, the directory and
// the tombstones are the same, and nothing waits. (Re-admitting at the
// re-creation the dishes the cascade took would keep d in both, wrong
// for the first log even in its own order; sparing at the delete the
// dishes written while the restaurant was at its last version spares
// every dish of that version.)
// So the choice is the source's (Config.SourceDeletesDishes):
//
//   - By default the delete takes every dish it finds under the
//     restaurant (deleteDependents), as a source that relies on it needs,
//     in every order. It gives up the new dish of a re-created
//     restaurant that ingest decides before the delete: it goes too.
//   - A source that sends the delete of every live dish before deleting
//     its restaurant (the project's generators; CDC from a database that
//     logs the rows a foreign-key cascade removes) makes the cascade
//     unneeded: the dishes are left to their own deletes, which remove
//     them from under a deleted or unknown restaurant too (dishDelete,
//     reparent.go). What the delete finds under the restaurant is then
//     either new (read ahead) or old with its delete still to come (the
//     restaurant topic read ahead); either way it stays for now, and a
//     re-creation at another cell carries it there (restaurantUpsert).
//     The dishes waiting for the restaurant are left waiting too: they
//     may be new dishes waiting for the re-creation, and an old one is
//     cancelled by its own delete (a replay that comes after that delete
//     waits out PendingMaxAge and is dead-lettered, unless the
//     restaurant comes back). It gives up what a member that did not see
//     the delete cannot know: one that started between the delete and a
//     re-creation at another cell (its directory, read from the index,
//     does not know the restaurant) leaves the dishes read ahead of the
//     delete at the old place, off their restaurant's shard.
//
// By default any delete of a restaurant, stale or not, also finishes the
// dishes waiting for it: they belong to a deleted restaurant, whether
// they came before the delete (a redelivery after a crash looks like
// that: the index no longer shows the restaurant, its dishes wait, then
// its delete comes again) or are replays after it.
func (ix *indexer) restaurantDelete(ctx context.Context, ev *event) error {
	c := ev.change
	if !ix.sourceDeletesDishes {
		for _, x := range ix.pend.Take(c.ID) {
			ix.host.finish(x, resultStale)
		}
	}
	old, known := ix.dir.Get(c.ID)
	targets := ix.targets
	switch {
	case known && c.Version <= old.Version:
		ix.host.finish(ev, resultStale)
		return nil
	case !known || old.Deleted:
		// Nothing of it can be in the index (nothing is written without
		// routing); remember the version so an older upsert is stale, and
		// leave the delete's tombstone under every routing, so that the
		// index refuses an older upsert too, to a member that never saw
		// this delete.
		return ix.restaurantTask(ctx, ev,
			func(ctx context.Context) (error, error) { return ix.restaurantTombstones(ctx, targets, ev, nil) },
			func(context.Context) error {
				ix.dir.Remove(c.ID, c.Version)
				ix.host.finish(ev, resultNoop)
				return nil
			})
	}
	dishes := !ix.sourceDeletesDishes
	return ix.restaurantTask(ctx, ev,
		func(ctx context.Context) (error, error) {
			if rej, err := ix.deleteDependents(ctx, targets, ev, old.Cell, dishes); rej != nil || err != nil {
				return rej, err
			}
			return ix.restaurantTombstones(ctx, targets, ev, &old.Cell)
		},
		func(ctx context.Context) error {
			err := ix.emit(ctx, ix.targets[:1], ev, docWrite{
				action: bulk.Delete, vtype: bulk.External, id: schema.RestaurantID(c.ID), version: c.Version, cell: old.Cell,
			})
			if err != nil {
				return err
			}
			ix.dir.Remove(c.ID, c.Version)
			return nil
		})
}

// restaurantTask holds ev's restaurant and, once the restaurant is quiet,
// runs task (a move's or a delete's steps) on a goroutine of its own.
// Back on the loop, a rejected write dead-letters the event, success runs
// then, and either way the hold ends.
func (ix *indexer) restaurantTask(ctx context.Context, ev *event, task func(context.Context) (rej, err error), then func(context.Context) error) error {
	rid := ev.change.ID
	return ix.whenQuiet(ctx, rid, func(ctx context.Context) error {
		ix.goTask(ctx, func(ctx context.Context) func(context.Context) error {
			rej, err := task(ctx)
			return func(ctx context.Context) error {
				switch {
				case err != nil:
					return err
				case rej != nil:
					if err := ix.host.deadLetter(ctx, ev, decode.ReasonRejected, rej.Error(), resultDeadLetter); err != nil {
						return err
					}
				default:
					if err := then(ctx); err != nil {
						return err
					}
				}
				return ix.unhold(ctx, rid)
			}
		})
		return nil
	})
}

// dishUpsert writes a dish under its restaurant's routing, or holds it
// until the restaurant is known.
func (ix *indexer) dishUpsert(ctx context.Context, ev *event) error {
	// A waiting dish outlives the generation it came in when its
	// partition stays with this member: it is decided in the one it is
	// decided in (indexer_fence.go). Nothing of it flies meanwhile.
	ev.gen = ix.gen
	c := ev.change
	cell, ok := ix.dir.Lookup(c.RestaurantID)
	if !ok {
		if ix.pend.Holds(ev) {
			// A copy of this very event waits already, parked: this one
			// changes nothing, and waiting twice would decide the dish
			// twice (two dead letters for one orphan).
			ix.host.finish(ev, resultNoop)
			return nil
		}
		now := ix.now()
		at := ev.parkedAt
		if at.IsZero() {
			at = now
		}
		evicted := ix.pend.Add(ev, at)
		ix.host.park(ev, now)
		for _, x := range evicted {
			if err := ix.host.deadLetter(ctx, x, decode.ReasonUnknownRestaurant, "restaurant "+x.change.RestaurantID+" unknown; the pending set is full", resultPendingExpired); err != nil {
				return err
			}
		}
		ix.met.pending.Set(float64(ix.pend.Len()))
		return nil
	}
	members := ev.members
	ev.targets = ix.targets
	return ix.emit(ctx, ix.targets, ev, docWrite{
		action: bulk.Index, vtype: bulk.External, id: schema.DishID(c.ID), version: c.Version, cell: cell,
		body: func(level int) []byte {
			return dishBody(members, c.ID, c.RestaurantID, c.Version, cell, level)
		},
	})
}

// dishDelete deletes a dish under its restaurant's routing. If the
// restaurant is not live the delete first cancels a pending upsert of the
// dish. If it was deleted here, the delete goes to the place the
// restaurant had: a source that deletes the dishes itself
// (Config.SourceDeletesDishes) left them there, and a delete read after
// its restaurant's finds its dish as if the restaurant were live — one
// delete rather than one under every routing of the map. Not found there,
// it spreads like any delete not found (reparent.go). If the restaurant
// is unknown (never seen, or deleted before this instance read the index)
// the dish cannot be under it: the delete removes the dish from under any
// other restaurant it was written under before.
func (ix *indexer) dishDelete(ctx context.Context, ev *event) error {
	c := ev.change
	cell, ok := ix.dir.Lookup(c.RestaurantID)
	if !ok {
		for _, x := range ix.pend.Cancel(c.RestaurantID, c.ID, c.Version) {
			ix.host.finish(x, resultStale)
		}
		if e, known := ix.dir.Get(c.RestaurantID); known && e.Deleted && e.Cell.IsValid() {
			cell, ok = e.Cell, true
		}
	}
	if !ok {
		// The dish is not under this restaurant, but it may be under
		// another: each target answers as if deleted and not found there,
		// and the check removes the dish wherever it is (reparent.go).
		ev.targets = ix.targets
		ev.expect(len(ix.targets))
		ix.fly(ev)
		for i := range ix.targets {
			it := bulk.Item{Action: bulk.Delete, Index: ix.targets[i].index, ID: schema.DishID(c.ID), Version: c.Version, VersionType: bulk.External}
			ix.eventResult(ev, bulk.Result{Item: &it, Outcome: bulk.NotFound, Status: 404})
		}
		return nil
	}
	ev.targets = ix.targets
	return ix.emit(ctx, ix.targets, ev, docWrite{
		action: bulk.Delete, vtype: bulk.External, id: schema.DishID(c.ID), version: c.Version, cell: cell,
	})
}

// expirePending dead-letters the dishes that waited too long. Before it
// does, it asks the index once per restaurant: another instance may have
// written the restaurant meanwhile (where the assignment could not be
// read, a rebalance does not release the partitions lost, and their dishes
// may wait here for a restaurant that only the partition's new owner sees).
//
// It also asks the broker how far the group has committed the partitions
// of the dishes it is about to dead-letter: a dish behind the group's
// committed offset was finished by the member that committed it (no
// member commits past an event it has not finished: this instance's
// tracker never does), so it is finished here as a noop instead. That
// member owns or owned the partition; a commit this instance then makes
// for it may land behind the owner's, which only redelivers.
//
// A dish whose restaurant is held goes to the front of the restaurant's
// queue: it came before everything there.
func (ix *indexer) expirePending(ctx context.Context, maxAge time.Duration) error {
	expired := ix.pend.Expire(ix.now())
	if len(expired) == 0 {
		return nil
	}
	var rids []string
	seen := map[string]bool{}
	var held []*event
	kept := expired[:0]
	for _, x := range expired {
		rid := x.change.RestaurantID
		if rs := ix.rests[rid]; rs != nil && rs.held {
			held = append(held, x)
			continue
		}
		kept = append(kept, x)
		if !seen[rid] {
			seen[rid] = true
			rids = append(rids, rid)
		}
	}
	expired = kept
	for i := len(held) - 1; i >= 0; i-- {
		rs := ix.rests[held[i].rid]
		rs.queue = append([]*event{held[i]}, rs.queue...)
		ix.queuedBehind++
	}
	if err := ix.lookupRestaurants(ctx, rids); err != nil {
		return err
	}
	if ix.fenced(ix.gen) {
		// The generation ended during the lookup: the expired dishes are
		// decided by the next generation, which reads them back.
		ix.cut.any = true
		return nil
	}
	var dead []*event
	for _, x := range expired {
		rid := x.change.RestaurantID
		if _, ok := ix.dir.Lookup(rid); ok {
			if err := ix.dishUpsert(ctx, x); err != nil {
				return err
			}
			continue
		}
		dead = append(dead, x)
	}
	var committed map[partKey]int64
	if len(dead) > 0 {
		parts := map[partKey]bool{}
		for _, x := range dead {
			if x.parkedAt.IsZero() { // a parked dish's offset is committed while it waits
				parts[x.part] = true
			}
		}
		var err error
		if committed, err = ix.host.committedOffsets(ctx, parts); err != nil {
			ix.log.Warn("reading the group's committed offsets failed; dead-lettering the expired dishes", "error", err)
		}
		if ix.fenced(ix.gen) {
			ix.cut.any = true
			return nil
		}
	}
	for _, x := range dead {
		if c, ok := committed[x.part]; ok && c > x.offset && x.parkedAt.IsZero() {
			ix.log.Debug("expired dish already finished by another member", "partition", x.part.String(), "offset", x.offset, "committed", c)
			ix.host.finish(x, resultNoop)
			continue
		}
		rid := x.change.RestaurantID
		if err := ix.host.deadLetter(ctx, x, decode.ReasonUnknownRestaurant,
			fmt.Sprintf("restaurant %s unknown after %v", rid, maxAge), resultPendingExpired); err != nil {
			return err
		}
	}
	ix.met.pending.Set(float64(ix.pend.Len()))
	return nil
}
