package pipeline

import (
	"context"
	"encoding/json"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/pipeline/directory"
	"github.com/geoshard/geoshard/schema"
)

// Partitions gained at a new consumer-group generation.
//
// The previous owner of a partition this member gains may have created,
// moved or deleted its restaurants, and this member's directory does not
// know. Rather than read the whole directory again (seconds to tens of
// seconds at hundreds of thousands of restaurants, during which nothing
// is decided), the member marks the gained partitions cold: the first
// event of each restaurant there holds the restaurant while it is looked
// up in the index, and only then is decided, with its later events behind
// it. Lookups are batched: every restaurant that comes while one search
// runs goes into the next, up to lookupBatch. A restaurant of a partition
// the member kept needs none (no other member wrote it), so events of the
// partitions it kept flow on.
//
// The generation first waits until nothing is in flight (quiesce) and
// refreshes the index, so that a lookup sees every write the previous
// owner had acknowledged; what it had not acknowledged it had not
// committed, so those events come to this member again. A lookup's answer
// replaces the directory's entry, keeping a delete the directory knows of
// at a newer version than the index shows (the index keeps no deleted
// document; see replace): a restaurant the index lacks is unknown, and is
// taken as live only once the index has taken its write
// (confirmRestaurant), as after a full read.

// lookupBatch bounds the restaurants one lookup search asks for.
const lookupBatch = 1000

// coldState is the indexer's record of gained partitions.
type coldState struct {
	// parts maps each cold partition (by number: every event topic's
	// partition N is one member's) to the restaurants looked up since it
	// was gained.
	parts map[int]map[string]bool
	// queue holds restaurants waiting for a lookup; running is set while
	// one runs.
	queue   []string
	running bool
	// rests are restaurants to look up at their next event whatever their
	// partition: those a fence cut short (indexer_fence.go).
	rests map[string]bool
}

// gain marks partitions cold and forgets those lost. It runs on the loop
// at a new generation; with partitions gained it first waits until
// nothing is in flight, then refreshes the primary index, so that lookups
// see every acknowledged write.
func (ix *indexer) gain(ctx context.Context, gen int64, gained, lost []int) error {
	start := time.Now()
	if len(gained) > 0 {
		// The lookups must see everything this member wrote, too.
		if err := ix.quiesce(ctx); err != nil {
			return err
		}
	}
	if ix.cold.parts == nil {
		ix.cold.parts = map[int]map[string]bool{}
	}
	for _, n := range lost {
		delete(ix.cold.parts, n)
	}
	for _, n := range gained {
		ix.cold.parts[n] = map[string]bool{}
	}
	if len(gained) > 0 {
		t := ix.targets[0]
		if err := ix.refresh(ctx, t.index); err != nil {
			return err
		}
	}
	ix.dirGen = gen
	ix.log.Info("consumer group rebalanced: restaurants of the gained partitions are looked up as they come", "generation", gen, "gained", gained, "lost", len(lost), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// needsLookup reports whether ev's restaurant must be looked up before
// ev is decided, and if so marks it as looked up from now on.
func (ix *indexer) needsLookup(ev *event) bool {
	if ix.cold.rests[ev.rid] {
		delete(ix.cold.rests, ev.rid)
		if fresh := ix.cold.parts[ev.part.partition]; fresh != nil {
			fresh[ev.rid] = true
		}
		return true
	}
	fresh, ok := ix.cold.parts[ev.part.partition]
	if !ok || fresh[ev.rid] {
		return false
	}
	fresh[ev.rid] = true
	return true
}

// lookUp holds restaurant rid until the index has told the directory
// what it stores of it.
func (ix *indexer) lookUp(ctx context.Context, rid string) {
	ix.rest(rid).held = true
	ix.cold.queue = append(ix.cold.queue, rid)
	ix.startLookups(ctx)
}

// startLookups starts a lookup of the queued restaurants unless one runs.
func (ix *indexer) startLookups(ctx context.Context) {
	if ix.cold.running || len(ix.cold.queue) == 0 {
		return
	}
	n := min(len(ix.cold.queue), lookupBatch)
	rids := ix.cold.queue[:n:n]
	ix.cold.queue = ix.cold.queue[n:]
	ix.cold.running = true
	t := ix.targets[0]
	ix.goTask(ctx, func(ctx context.Context) func(context.Context) error {
		found, err := ix.searchRestaurants(ctx, &t, rids)
		return func(ctx context.Context) error {
			if err != nil {
				return err
			}
			ix.cold.running = false
			ix.lookups.Add(int64(len(rids)))
			for _, rid := range rids {
				ix.dir.Replace(rid, found)
				if _, ok := ix.dir.Lookup(rid); ok {
					for _, d := range ix.pend.Take(rid) {
						if err := ix.dishUpsert(ctx, d); err != nil {
							return err
						}
					}
				}
				if err := ix.unhold(ctx, rid); err != nil {
					return err
				}
			}
			ix.met.pending.Set(float64(ix.pend.Len()))
			ix.startLookups(ctx)
			return nil
		}
	})
}

// searchRestaurants reads restaurants from t's index, in one search of
// every shard, into a directory of their own. It runs on a task.
func (ix *indexer) searchRestaurants(ctx context.Context, t *target, rids []string) (*directory.Directory, error) {
	ids := make([]string, len(rids))
	for i, rid := range rids {
		ids[i] = schema.RestaurantID(rid)
	}
	body, err := json.Marshal(map[string]any{
		"query":   map[string]any{"ids": map[string]any{"values": ids}},
		"_source": []string{schema.FieldGeoCell, schema.FieldVersion, schema.FieldLocation},
		"size":    2 * len(ids), // a restaurant stored twice (an interrupted move) resolves to its newer copy
	})
	if err != nil {
		return nil, err
	}
	var pg *bulk.Page
	err = retry(ctx, ix.log, "look up restaurants", func() error {
		var err error
		pg, err = ix.admin.Search(ctx, t.index, body, bulk.SearchParams{})
		return err
	})
	if err != nil {
		return nil, err
	}
	d := directory.New()
	for _, h := range pg.Hits {
		if err := ix.warmHit(t, h, d); err != nil {
			ix.log.Warn("directory: skipping a restaurant document", "index", t.index, "error", err)
		}
	}
	return d, nil
}

// dropPartitions forgets, without finishing them, the events of the
// partitions numbered lost that wait here: queued behind a held
// restaurant, or pending for an unknown one. The group gave those
// partitions to another member, which reads them again from the group's
// committed offset; deciding them here, with a directory that no longer
// follows their restaurants, could write a dish where its restaurant has
// just left. It returns how many were queued and how many pending.
//
// A task of such a restaurant that already runs (a move, a delete) runs
// to its end: its steps are idempotent, and the new owner, deciding the
// same event again, finds what it left.
func (ix *indexer) dropPartitions(lost func(partition int) bool) (queued, pending int) {
	for rid, rs := range ix.rests {
		kept := rs.queue[:0]
		for _, ev := range rs.queue {
			if !lost(ev.part.partition) {
				kept = append(kept, ev)
			}
		}
		queued += len(rs.queue) - len(kept)
		clear(rs.queue[len(kept):])
		rs.queue = kept
		ix.settle(rid)
	}
	ix.queuedBehind -= queued
	pending = len(ix.pend.Purge(func(ev *event) bool { return lost(ev.part.partition) }))
	ix.met.pending.Set(float64(ix.pend.Len()))
	return queued, pending
}
