package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang/geo/s2"
	"golang.org/x/sync/errgroup"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/schema"
)

// dirEntry is what the directory knows of one restaurant.
type dirEntry struct {
	// cell holds the restaurant's location: the leaf cell of its
	// location, learnt from an event or read from the index (only a stored
	// restaurant without a location, or one whose location disagrees with
	// its geo_cell, gives the map-level cell of its geo_cell). Routing
	// under any map is derived from it, so during a migration one
	// directory serves the source and the target even when their maps'
	// levels differ.
	cell s2.CellID
	// version is the newest version seen, of an upsert or of a delete.
	version int64
	// deleted: the newest version seen is a delete. The entry is kept so
	// that an older upsert replayed later is recognised as stale.
	deleted bool
}

// directory maps restaurant ids to their location and version. It is
// owned by the processing goroutine (and by the warm-up before it); only
// the counters are read concurrently, for Stats and metrics.
type directory struct {
	m    map[string]dirEntry
	live atomic.Int64 // entries that are not deleted
}

func newDirectory() *directory { return &directory{m: make(map[string]dirEntry)} }

// get returns the entry of a restaurant.
func (d *directory) get(id string) (dirEntry, bool) {
	e, ok := d.m[id]
	return e, ok
}

// lookup returns the cell of a live restaurant.
func (d *directory) lookup(id string) (s2.CellID, bool) {
	e, ok := d.m[id]
	if !ok || e.deleted {
		return 0, false
	}
	return e.cell, true
}

// set records a live restaurant at cell with version, if version is newer
// than what the directory holds. It reports whether it changed anything.
func (d *directory) set(id string, cell s2.CellID, version int64) bool {
	old, ok := d.m[id]
	if ok && version <= old.version {
		return false
	}
	if !ok || old.deleted {
		d.live.Add(1)
	}
	d.m[id] = dirEntry{cell: cell, version: version}
	return true
}

// warm records a restaurant found in the index. Two copies of one
// restaurant (possible only if a move was interrupted between writing the
// new copy and deleting the old one) resolve to the higher version.
func (d *directory) warm(id string, cell s2.CellID, version int64) {
	d.set(id, cell, version)
}

// remove marks a restaurant deleted at version, if version is newer than
// what the directory holds. It reports whether it changed anything.
func (d *directory) remove(id string, version int64) bool {
	old, ok := d.m[id]
	if ok && version <= old.version {
		return false
	}
	if ok && !old.deleted {
		d.live.Add(-1)
	}
	d.m[id] = dirEntry{cell: old.cell, version: version, deleted: true}
	return true
}

// size is the number of live restaurants.
func (d *directory) size() int64 { return d.live.Load() }

// cellAt returns the cell at level that contains c: its parent when c is
// finer, c itself when it is already at that level or coarser (a warmed
// map-level cell asked for a finer level can say no more).
func cellAt(c s2.CellID, level int) s2.CellID {
	if c.Level() > level {
		return c.Parent(level)
	}
	return c
}

// adopt replaces the entries with those of nd, read again from the index,
// keeping the deletes newer than what nd says (the index shows no deleted
// document, and an older upsert replayed later must still be stale).
func (d *directory) adopt(nd *directory) {
	for id, e := range d.m {
		if !e.deleted {
			continue
		}
		if n, ok := nd.m[id]; !ok || n.version < e.version {
			nd.m[id] = e
			if ok && !n.deleted {
				nd.live.Add(-1)
			}
		}
	}
	d.m = nd.m
	d.live.Store(nd.live.Load())
}

// replace sets restaurant id's entry to what nd, read from the index,
// holds of it, keeping a delete newer than that (as adopt does, for one
// restaurant): a restaurant nd lacks becomes unknown.
func (d *directory) replace(id string, nd *directory) {
	old, had := d.m[id]
	n, found := nd.m[id]
	if had && old.deleted && (!found || n.version < old.version) {
		return
	}
	if had && !old.deleted {
		d.live.Add(-1)
	}
	if !found {
		delete(d.m, id)
		return
	}
	d.m[id] = n
	if !n.deleted {
		d.live.Add(1)
	}
}

// warmSlices is how many shards warm reads at once.
const warmSlices = 4

// warm fills d from the restaurants stored in the target's index: their
// geo_cell and version. It reads shard by shard, warmSlices at a time,
// each in doc_id order with search_after under the routing of the map's
// geoshard on that shard (the routing only picks the shard: the search
// returns every restaurant stored there, whatever routing it was written
// with). A search that only one shard answers costs that shard's
// documents per page, not the whole index's.
func (ix *indexer) warm(ctx context.Context, t *target, d *directory) error {
	start := time.Now()
	if err := retry(ctx, ix.log, "refresh "+t.index, func() error { return ix.admin.Refresh(ctx, t.index) }); err != nil {
		return err
	}
	var mu sync.Mutex // guards d and skipped
	skipped := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(warmSlices)
	for shard := range t.m.NumShards() {
		routing := t.m.Shard(shard).Routing
		g.Go(func() error {
			return ix.warmShard(gctx, t, routing, func(hits []bulk.Hit) {
				mu.Lock()
				defer mu.Unlock()
				for _, h := range hits {
					if err := ix.warmHit(t, h, d); err != nil {
						skipped++
						ix.log.Warn("directory: skipping a restaurant document", "index", t.index, "error", err)
					}
				}
			})
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	ix.warmStats.done.Store(true)
	ix.warmStats.reads.Add(1)
	ix.log.Info("directory warm", "index", t.index, "restaurants", d.size(), "skipped", skipped, "pages", ix.warmStats.pages.Load(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// warmShard pages through the restaurants of the shard that routing
// reaches and hands each page to add.
func (ix *indexer) warmShard(ctx context.Context, t *target, routing string, add func([]bulk.Hit)) error {
	const logEvery = 20
	var after json.RawMessage
	for page := 1; ; page++ {
		q := map[string]any{
			"query":            map[string]any{"term": map[string]any{schema.FieldRelation: schema.RelationRestaurant}},
			"_source":          []string{schema.FieldGeoCell, schema.FieldVersion, schema.FieldLocation},
			"sort":             []any{map[string]any{schema.FieldDocID: "asc"}},
			"size":             ix.warmSize,
			"track_total_hits": page == 1,
		}
		if after != nil {
			q["search_after"] = []json.RawMessage{after}
		}
		body, err := json.Marshal(q)
		if err != nil {
			return err
		}
		var pg *bulk.Page
		err = retry(ctx, ix.log, "warm the directory", func() error {
			var err error
			pg, err = ix.admin.Search(ctx, t.index, body, bulk.SearchParams{Routing: routing})
			return err
		})
		if err != nil {
			return err
		}
		if page == 1 {
			ix.warmStats.total.Add(pg.Total)
		}
		add(pg.Hits)
		pages := ix.warmStats.pages.Add(1)
		seen := ix.warmStats.seen.Add(int64(len(pg.Hits)))
		if pages%logEvery == 0 {
			ix.log.Info("warming the directory", "index", t.index, "pages", pages, "restaurants", seen, "total", ix.warmStats.total.Load())
		}
		if len(pg.Hits) < ix.warmSize || len(pg.Hits) == 0 {
			return nil
		}
		last := pg.Hits[len(pg.Hits)-1]
		if len(last.Sort) == 0 {
			return fmt.Errorf("pipeline: warm: search of %s returned no sort values", t.index)
		}
		after = last.Sort[0]
	}
}

// rewarm reads the directory again after the consumer group began a new
// generation whose assignment could not be read (one that could marks
// the partitions it gained cold instead: gained.go). Partitions may have
// moved: another instance may have
// created, moved or deleted restaurants of a partition that is ours now,
// and our directory does not know. Everything in flight is answered first (quiesce), and
// the index refreshed, so the scan sees every acknowledged write (ours and
// the previous owner's; what the previous owner had not acknowledged it
// had not committed either, so those events come to us again). Delete
// versions the index cannot show are kept. Dishes waiting for a
// restaurant the index now has are written.
func (ix *indexer) rewarm(ctx context.Context, gen int64) error {
	start := time.Now()
	if err := ix.quiesce(ctx); err != nil {
		return err
	}
	nd := newDirectory()
	ix.warmStats.pages.Store(0)
	ix.warmStats.seen.Store(0)
	ix.warmStats.total.Store(0)
	t := ix.targets[0]
	if err := ix.warm(ctx, &t, nd); err != nil {
		return err
	}
	ix.dir.adopt(nd)
	ix.dirGen = gen
	released := 0
	for rid := range ix.pend.byRest {
		if _, ok := ix.dir.lookup(rid); !ok {
			continue
		}
		for _, d := range ix.pend.take(rid) {
			released++
			if err := ix.dishUpsert(ctx, d); err != nil {
				return err
			}
		}
	}
	ix.log.Info("consumer group rebalanced: directory read again", "generation", gen, "restaurants", ix.dir.size(), "pending_released", released, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// lookupRestaurants reads restaurants from the write index (the primary
// target) into the directory (where the index holds a newer version than
// the directory), in one search.
func (ix *indexer) lookupRestaurants(ctx context.Context, rids []string) error {
	if len(rids) == 0 {
		return nil
	}
	found, err := ix.searchRestaurants(ctx, &ix.targets[0], rids)
	if err != nil {
		return err
	}
	for id, e := range found.m {
		ix.dir.warm(id, e.cell, e.version)
	}
	return nil
}

func (ix *indexer) warmHit(t *target, h bulk.Hit, d *directory) error {
	rel, id, err := schema.ParseID(h.ID)
	if err != nil || rel != schema.RelationRestaurant {
		return fmt.Errorf("_id %q is not a restaurant id", h.ID)
	}
	var src struct {
		GeoCell  string      `json:"geo_cell"`
		Version  json.Number `json:"version"`
		Location *struct {
			Lat *float64 `json:"lat"`
			Lon *float64 `json:"lon"`
		} `json:"location"`
	}
	if err := json.Unmarshal(h.Source, &src); err != nil {
		return fmt.Errorf("%s: %w", h.ID, err)
	}
	cell := s2.CellIDFromToken(src.GeoCell)
	if !cell.IsValid() {
		return fmt.Errorf("%s: geo_cell %q is not a cell token", h.ID, src.GeoCell)
	}
	if l := src.Location; l != nil && l.Lat != nil && l.Lon != nil {
		// The location's leaf cell, as an event gives it, if it agrees
		// with geo_cell (which a reshard routes by, so it stays the truth).
		leaf := s2.CellIDFromLatLng(s2.LatLngFromDegrees(*l.Lat, *l.Lon))
		if leaf.IsValid() && cell.Level() <= leaf.Level() && leaf.Parent(cell.Level()) == cell {
			cell = leaf
		}
	}
	v, err := strconv.ParseInt(src.Version.String(), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: version %q: %w", h.ID, src.Version, err)
	}
	if _, routing := t.routing(cell); h.Routing != "" && h.Routing != routing {
		// Kept: geo_cell is what a reshard routes by, so it stays the
		// truth for the restaurant's dishes too.
		ix.log.Warn("directory: restaurant stored under another routing than its geo_cell's", "index", t.index, "routing", h.Routing, "want", routing)
	}
	d.warm(id, cell, v)
	return nil
}
