package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/golang/geo/s2"
	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/schema"
)

// event is one fetched message on its way through the pipeline.
type event struct {
	part   partKey
	offset int64
	key    []byte
	value  []byte
	ts     time.Time // the Kafka message timestamp
	entry  *trackEntry
	change *Change
	// members are an upsert's doc members, reserved fields stripped.
	members []byte
	// origin is where a repartitioned event was in the dish topic (nil
	// for any other).
	origin *origin

	// rid is the restaurant the event belongs to: its own id, or its
	// dish's restaurant's.
	rid string
	// flying: the indexer counts the event's writes in flight (fly).
	flying bool
	// parkedAt is when the dish was parked to wait for its restaurant
	// (parking.go); zero if it never was. Set on the loop before the
	// event reaches another goroutine.
	parkedAt time.Time

	mu          sync.Mutex
	outstanding int    // writes not yet answered
	result      string // the first successful write's result label
	rejected    error  // a permanent error of one of its writes
	failed      bool   // a write failed for good: the event never finishes
	// settled, if set, runs on the loop once every write of the event is
	// answered (whatever the answers).
	settled func(context.Context) error
}

func (ev *event) labels() (typ, op string) {
	typ, op = labelUnknown, labelUnknown
	if ev.change != nil {
		if ev.change.Type != "" {
			typ = ev.change.Type
		}
		if ev.change.Op != "" {
			op = ev.change.Op
		}
	}
	return typ, op
}

// expect counts n writes about to be added for ev.
func (ev *event) expect(n int) {
	ev.mu.Lock()
	ev.outstanding += n
	ev.mu.Unlock()
}

// decoded is a message's change as Decode reads it, and what is wrong
// with it, if anything.
type decoded struct {
	change  *Change
	members []byte // an upsert's doc members, reserved fields stripped
	reason  Reason // "" for a good event
	detail  string
	origin  *origin // a repartitioned event's place in the dish topic
}

// decode reads a message's change.
func (p *Pipeline) decode(m kafka.Message) decoded {
	var o *origin
	if p.cfg.DishKey == DishKeyDish && m.Topic == p.cfg.RepartitionTopic {
		o = originOf(m)
	}
	c, bad := Decode(m.Key, m.Value, p.cfg.MaxEventBytes)
	if bad != nil {
		return decoded{change: c, reason: bad.Reason, detail: bad.Error(), origin: o}
	}
	d := decoded{change: c, origin: o}
	if c.Op == OpUpsert {
		members, err := docMembers(c.Doc)
		if err != nil {
			return decoded{change: c, reason: ReasonInvalidJSON, detail: "doc: " + err.Error(), origin: o}
		}
		d.members = members
	}
	return d
}

// handle processes one fetched message, decoded: it tracks it,
// dead-letters it if it is bad, and hands it to the indexer. It returns
// an error only when the pipeline cannot go on (ctx ended, or a fatal
// failure).
func (p *Pipeline) handle(ctx context.Context, m kafka.Message, d decoded) error {
	k := partKey{topic: m.Topic, partition: m.Partition}
	entry, dropped := p.track.track(k, m.Offset, m.HighWaterMark)
	if len(dropped) > 0 {
		p.redelivered(k, m.Offset, dropped)
	}
	p.fetched.Add(1)
	c := d.change
	ev := &event{part: k, offset: m.Offset, key: m.Key, value: m.Value, ts: m.Time, entry: entry, change: c, members: d.members, origin: d.origin}
	if d.reason != "" {
		return p.deadLetter(ctx, ev, d.reason, d.detail, resultDeadLetter)
	}
	ev.rid = c.ID
	if c.Type == TypeDish {
		ev.rid = c.RestaurantID
	}
	return p.ix.submit(ctx, ev)
}

// redelivered forgets the pending dishes a redelivery superseded: they
// come again.
func (p *Pipeline) redelivered(k partKey, offset int64, dropped []*trackEntry) {
	gone := make(map[*trackEntry]bool, len(dropped))
	for _, e := range dropped {
		gone[e] = true
	}
	n := len(p.ix.pend.purge(func(ev *event) bool { return gone[ev.entry] }))
	p.log.Info("redelivery restarts partition tracking", "partition", k.String(), "offset", offset, "dropped", len(dropped), "pending_dropped", n)
}

// restaurantUpsert writes a restaurant at its location, moving it and its
// dishes first if the location left the restaurant's cell, then writes the
// dishes that waited for it.
func (ix *indexer) restaurantUpsert(ctx context.Context, ev *event) error {
	c := ev.change
	cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(c.Lat, c.Lon))
	old, known := ix.dir.get(c.ID)
	if known && (c.Version < old.version || c.Version == old.version && (old.deleted || ix.cellChanged(old.cell, cell))) {
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
	if known && old.deleted && old.cell != 0 && ix.shardChanged(old.cell, cell) {
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
	if known && !old.deleted && ix.cellChanged(old.cell, cell) {
		targets := ix.targets
		return ix.restaurantTask(ctx, ev,
			func(ctx context.Context) (error, error) { return ix.relocate(ctx, targets, ev, old.cell, cell) },
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
			ix.dir.set(c.ID, cell, c.Version)
			for _, d := range ix.pend.take(c.ID) {
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
		var found *directory
		if err == nil {
			found, err = ix.searchRestaurants(ctx, &t, []string{rid})
		}
		return func(ctx context.Context) error {
			if err != nil {
				return err
			}
			if e, ok := found.get(rid); ok && !e.deleted {
				ix.dir.replace(rid, found)
				if _, live := ix.dir.lookup(rid); live {
					for _, d := range ix.pend.take(rid) {
						if err := ix.dishUpsert(ctx, d); err != nil {
							return err
						}
					}
				}
			} else {
				ix.dir.remove(rid, version)
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
	ix.dir.set(c.ID, cell, c.Version)
	for _, d := range ix.pend.take(c.ID) {
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

// restaurantDelete deletes a restaurant and all its dishes.
//
// Any delete of a restaurant, stale or not, also finishes the dishes
// waiting for it: they belong to a deleted restaurant, whether they came
// before the delete (a redelivery after a crash looks like that: the index
// no longer shows the restaurant, its dishes wait, then its delete comes
// again) or are replays after it.
func (ix *indexer) restaurantDelete(ctx context.Context, ev *event) error {
	c := ev.change
	for _, x := range ix.pend.take(c.ID) {
		ix.host.finish(x, resultStale)
	}
	old, known := ix.dir.get(c.ID)
	switch {
	case known && c.Version <= old.version:
		ix.host.finish(ev, resultStale)
		return nil
	case !known || old.deleted:
		// Nothing of it can be in the index (nothing is written without
		// routing); remember the version so an older upsert is stale.
		ix.dir.remove(c.ID, c.Version)
		ix.host.finish(ev, resultNoop)
		return nil
	}
	targets := ix.targets
	return ix.restaurantTask(ctx, ev,
		func(ctx context.Context) (error, error) { return ix.deleteDependents(ctx, targets, ev, old.cell) },
		func(ctx context.Context) error {
			err := ix.emit(ctx, ix.targets[:1], ev, docWrite{
				action: bulk.Delete, vtype: bulk.External, id: schema.RestaurantID(c.ID), version: c.Version, cell: old.cell,
			})
			if err != nil {
				return err
			}
			ix.dir.remove(c.ID, c.Version)
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
					if err := ix.host.deadLetter(ctx, ev, ReasonRejected, rej.Error(), resultDeadLetter); err != nil {
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
	c := ev.change
	cell, ok := ix.dir.lookup(c.RestaurantID)
	if !ok {
		now := ix.now()
		at := ev.parkedAt
		if at.IsZero() {
			at = now
		}
		evicted := ix.pend.add(ev, at)
		ix.host.park(ev, now)
		for _, x := range evicted {
			if err := ix.host.deadLetter(ctx, x, ReasonUnknownRestaurant, "restaurant "+x.change.RestaurantID+" unknown; the pending set is full", resultPendingExpired); err != nil {
				return err
			}
		}
		ix.met.pending.Set(float64(ix.pend.len()))
		return nil
	}
	members := ev.members
	return ix.emit(ctx, ix.targets, ev, docWrite{
		action: bulk.Index, vtype: bulk.External, id: schema.DishID(c.ID), version: c.Version, cell: cell,
		body: func(level int) []byte {
			return dishBody(members, c.ID, c.RestaurantID, c.Version, cell, level)
		},
	})
}

// dishDelete deletes a dish under its restaurant's routing. If the
// restaurant is unknown the dish cannot be in the index: the delete only
// cancels a pending upsert of the dish.
func (ix *indexer) dishDelete(ctx context.Context, ev *event) error {
	c := ev.change
	cell, ok := ix.dir.lookup(c.RestaurantID)
	if !ok {
		for _, x := range ix.pend.cancel(c.RestaurantID, c.ID, c.Version) {
			ix.host.finish(x, resultStale)
		}
		ix.host.finish(ev, resultNoop)
		return nil
	}
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
	expired := ix.pend.expire(ix.now())
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
	var dead []*event
	for _, x := range expired {
		rid := x.change.RestaurantID
		if _, ok := ix.dir.lookup(rid); ok {
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
	}
	for _, x := range dead {
		if c, ok := committed[x.part]; ok && c > x.offset && x.parkedAt.IsZero() {
			ix.log.Debug("expired dish already finished by another member", "partition", x.part.String(), "offset", x.offset, "committed", c)
			ix.host.finish(x, resultNoop)
			continue
		}
		rid := x.change.RestaurantID
		if err := ix.host.deadLetter(ctx, x, ReasonUnknownRestaurant,
			fmt.Sprintf("restaurant %s unknown after %v", rid, maxAge), resultPendingExpired); err != nil {
			return err
		}
	}
	ix.met.pending.Set(float64(ix.pend.len()))
	return nil
}

// deadLetter queues an event for the dead-letter topic, waiting while the
// queue is full. The event finishes when the write is acknowledged.
func (p *Pipeline) deadLetter(ctx context.Context, ev *event, r Reason, detail, result string) error {
	if err := p.dead.waitRoom(ctx); err != nil {
		return err
	}
	p.dead.enqueue(&deadLetter{ev: ev, reason: r, detail: detail, result: result})
	return nil
}

// deadLetterWritten finishes an event whose dead letter is acknowledged.
func (p *Pipeline) deadLetterWritten(d *deadLetter) {
	if !p.finish(d.ev, d.result) {
		return
	}
	p.deadLetters.Add(1)
	p.met.deadLetters.WithLabelValues(string(d.reason)).Inc()
	p.mu.Lock()
	p.deadCount[d.reason]++
	p.mu.Unlock()
}

// onResult is the bulk writer's callback, called from its workers.
//
// An index that refuses a write for a reason of its own (a write block, a
// missing index) does not make the event bad: the write counts as failed,
// not rejected, so the event is neither dead-lettered nor finished, and
// the pipeline stops (ErrIndexUnwritable). With two targets this keeps
// one index from silently lacking a change the other has.
func (p *Pipeline) onResult(r bulk.Result) {
	if r.Outcome == bulk.Permanent && indexRefused(r.Err) {
		err := fmt.Errorf("%w: %s %s/%s (routing %s): %w", ErrIndexUnwritable, r.Item.Action, r.Item.Index, r.Item.ID, r.Item.Routing, r.Err)
		r.Outcome, r.Err = bulk.Failed, err
		p.fail(err)
	}
	p.ix.result(r)
	if r.Outcome == bulk.Failed && errors.Is(r.Err, bulk.ErrRetryBudget) {
		p.fail(fmt.Errorf("%w: %s %s/%s (routing %s): %w", ErrWriteFailed, r.Item.Action, r.Item.Index, r.Item.ID, r.Item.Routing, r.Err))
	}
}

// indexRefused reports an item error that is about the index, not the
// document: 403 cluster_block_exception (index.blocks.write, read_only;
// the disk flood-stage block is a 429, which the writer retries) or 404
// index_not_found_exception.
func indexRefused(err error) bool {
	var ie *bulk.ItemError
	if !errors.As(err, &ie) {
		return false
	}
	return (ie.Status == 403 && ie.Type == "cluster_block_exception") ||
		(ie.Status == 404 && ie.Type == "index_not_found_exception")
}

// rejected dead-letters an event the index rejected a write of.
func (p *Pipeline) rejected(ev *event, err error) {
	p.dead.enqueue(&deadLetter{ev: ev, reason: ReasonRejected, detail: err.Error(), result: resultDeadLetter})
}

// committedOffsets reads the group's committed offsets of parts.
func (p *Pipeline) committedOffsets(ctx context.Context, parts map[partKey]bool) (map[partKey]int64, error) {
	if p.groupCommitted == nil {
		return nil, nil
	}
	return p.groupCommitted(ctx, parts)
}

func resultOf(r bulk.Result) string {
	switch {
	case r.Coalesced:
		return resultCoalesced
	case r.Outcome == bulk.Stale:
		return resultStale
	case r.Outcome == bulk.NotFound:
		return resultNotFound
	}
	return resultWritten
}

// finish records an event as finished, so its offset may be committed,
// and counts it. It reports false for an event a redelivery superseded.
func (p *Pipeline) finish(ev *event, result string) bool {
	if !p.track.finish(ev.entry) {
		return false
	}
	p.unpark(ev)
	typ, op := ev.labels()
	p.met.events.WithLabelValues(typ, op, result).Inc()
	now := p.now()
	switch result {
	case resultWritten, resultStale, resultNotFound, resultCoalesced:
		if !ev.ts.IsZero() {
			p.met.endToEnd.Observe(now.Sub(ev.ts).Seconds())
		}
	}
	p.mu.Lock()
	p.counts[EventKey{Type: typ, Op: op, Result: result}]++
	p.mu.Unlock()
	p.finished.Add(1)
	p.lastProgress.Store(now.UnixNano())
	return true
}
