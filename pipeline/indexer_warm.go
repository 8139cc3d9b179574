package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/golang/geo/s2"
	"golang.org/x/sync/errgroup"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/pipeline/directory"
	"github.com/geoshard/geoshard/schema"
)

// warmSlices is how many shards warm reads at once.
const warmSlices = 4

// warm fills d from the restaurants stored in the target's index: their
// geo_cell and version. It reads shard by shard, warmSlices at a time,
// each in doc_id order with search_after under the routing of the map's
// geoshard on that shard (the routing only picks the shard: the search
// returns every restaurant stored there, whatever routing it was written
// with). A search that only one shard answers costs that shard's
// documents per page, not the whole index's. Each slice decodes its pages
// on its own goroutine; only filling d is done one page at a time.
func (ix *indexer) warm(ctx context.Context, t *target, d *directory.Directory) error {
	start := time.Now()
	if err := ix.refresh(ctx, t.index); err != nil {
		return err
	}
	var mu sync.Mutex // guards d and skipped
	skipped := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(warmSlices)
	for shard := range t.m.NumShards() {
		routing := t.m.Shard(shard).Routing
		g.Go(func() error {
			var page []warmed
			return ix.warmShard(gctx, t, routing, func(docs []warmDoc) {
				page = page[:0]
				bad := 0
				for i := range docs {
					w, err := ix.readDoc(t, &docs[i])
					if err != nil {
						bad++
						ix.log.Warn("directory: skipping a restaurant document", "index", t.index, "error", err)
						continue
					}
					page = append(page, w)
				}
				mu.Lock()
				defer mu.Unlock()
				skipped += bad
				for _, w := range page {
					d.Warm(w.id, w.cell, w.version)
				}
			})
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	ix.warmStats.done.Store(true)
	ix.warmStats.reads.Add(1)
	ix.log.Info("directory warm", "index", t.index, "restaurants", d.Len(), "skipped", skipped, "pages", ix.warmStats.pages.Load(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// warmShard pages through the restaurants of the shard that routing
// reaches and hands each page to add.
//
// It asks for whole documents: filtering _source costs OpenSearch more (it
// parses each document and writes the fields asked for out again: 75 ms
// for a page of 10,000 restaurants against 22 ms, on OpenSearch 2.19) than
// skipping the other fields costs here. That holds for documents of some
// 300 bytes, as BenchmarkWarm writes; were restaurant documents many
// kilobytes, the transfer could cost more than the filtering: measure.
// A page is decoded in one pass, each source straight into a
// restaurantSource; a page with a document of another shape than ingest
// writes is read again hit by hit, so that only that document is skipped.
func (ix *indexer) warmShard(ctx context.Context, t *target, routing string, add func([]warmDoc)) error {
	const logEvery = 20
	params := bulk.SearchParams{Routing: routing}
	var after json.RawMessage
	for page := 1; ; page++ {
		q := map[string]any{
			"query":            map[string]any{"term": map[string]any{schema.FieldRelation: schema.RelationRestaurant}},
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
		var pg warmPage
		err = retry(ctx, ix.log, "warm the directory", func() error {
			pg = warmPage{}
			err := ix.admin.Send(ctx, bulk.SearchRequest(t.index, body, params), &pg)
			if te := (*json.UnmarshalTypeError)(nil); !errors.As(err, &te) {
				return err
			}
			raw, err := ix.admin.Search(ctx, t.index, body, params)
			if err != nil {
				return err
			}
			pg.Hits.Total.Value = raw.Total
			pg.Hits.Hits = make([]warmDoc, len(raw.Hits))
			for i, h := range raw.Hits {
				pg.Hits.Hits[i] = docOf(h)
			}
			return nil
		})
		if err != nil {
			return err
		}
		docs := pg.Hits.Hits
		if page == 1 {
			ix.warmStats.total.Add(pg.Hits.Total.Value)
		}
		add(docs)
		pages := ix.warmStats.pages.Add(1)
		seen := ix.warmStats.seen.Add(int64(len(docs)))
		if pages%logEvery == 0 {
			ix.log.Info("warming the directory", "index", t.index, "pages", pages, "restaurants", seen, "total", ix.warmStats.total.Load())
		}
		if len(docs) < ix.warmSize || len(docs) == 0 {
			return nil
		}
		last := docs[len(docs)-1]
		if len(last.Sort) == 0 {
			return fmt.Errorf("pipeline: warm: search of %s returned no sort values", t.index)
		}
		after = last.Sort[0]
	}
}

// warmPage is a page of warmShard's search.
type warmPage struct {
	Hits struct {
		Total struct {
			Value int64 `json:"value"`
		} `json:"total"`
		Hits []warmDoc `json:"hits"`
	} `json:"hits"`
}

// warmDoc is a hit of a search for restaurants.
type warmDoc struct {
	ID      string            `json:"_id"`
	Routing string            `json:"_routing"`
	Source  restaurantSource  `json:"_source"`
	Sort    []json.RawMessage `json:"sort"`
	// err is why Source could not be decoded.
	err error
}

// restaurantSource holds the fields of a restaurant document the
// directory reads.
type restaurantSource struct {
	GeoCell string `json:"geo_cell"`
	// Version is read as a json.Number would be, so that no value stops
	// the decoding of a page: parseVersion.
	Version  json.RawMessage `json:"version"`
	Location *struct {
		Lat *float64 `json:"lat"`
		Lon *float64 `json:"lon"`
	} `json:"location"`
}

// docOf decodes a hit's source.
func docOf(h bulk.Hit) warmDoc {
	doc := warmDoc{ID: h.ID, Routing: h.Routing, Sort: h.Sort}
	if err := json.Unmarshal(h.Source, &doc.Source); err != nil {
		doc.err = fmt.Errorf("%s: %w", h.ID, err)
	}
	return doc
}

// parseVersion reads a version: a JSON number, or a string that holds
// one (as a json.Number takes it).
func parseVersion(raw json.RawMessage) (int64, error) {
	var n json.Number
	switch {
	case len(raw) > 0 && raw[0] == '"':
		if err := json.Unmarshal(raw, &n); err != nil {
			return 0, err
		}
	case string(raw) != "null":
		n = json.Number(raw)
	}
	return strconv.ParseInt(n.String(), 10, 64)
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
	for id, e := range found.All() {
		ix.dir.Warm(id, e.Cell, e.Version)
	}
	return nil
}

// warmHit records in d the restaurant of a hit of a search for
// restaurants.
func (ix *indexer) warmHit(t *target, h bulk.Hit, d *directory.Directory) error {
	w, err := ix.readHit(t, h)
	if err != nil {
		return err
	}
	d.Warm(w.id, w.cell, w.version)
	return nil
}

// warmed is a restaurant read from the index, as the directory takes it.
type warmed struct {
	id      string
	cell    s2.CellID
	version int64
}

// readHit reads the restaurant of a hit of a search for restaurants.
func (ix *indexer) readHit(t *target, h bulk.Hit) (warmed, error) {
	doc := docOf(h)
	return ix.readDoc(t, &doc)
}

// readDoc reads the restaurant of a decoded hit.
func (ix *indexer) readDoc(t *target, doc *warmDoc) (warmed, error) {
	if doc.err != nil {
		return warmed{}, doc.err
	}
	rel, id, err := schema.ParseID(doc.ID)
	if err != nil || rel != schema.RelationRestaurant {
		return warmed{}, fmt.Errorf("_id %q is not a restaurant id", doc.ID)
	}
	src := &doc.Source
	cell := s2.CellIDFromToken(src.GeoCell)
	if !cell.IsValid() {
		return warmed{}, fmt.Errorf("%s: geo_cell %q is not a cell token", doc.ID, src.GeoCell)
	}
	if l := src.Location; l != nil && l.Lat != nil && l.Lon != nil {
		// The location's leaf cell, as an event gives it, if it agrees
		// with geo_cell (which a reshard routes by, so it stays the truth).
		leaf := s2.CellIDFromLatLng(s2.LatLngFromDegrees(*l.Lat, *l.Lon))
		if leaf.IsValid() && cell.Level() <= leaf.Level() && leaf.Parent(cell.Level()) == cell {
			cell = leaf
		}
	}
	v, err := parseVersion(src.Version)
	if err != nil {
		return warmed{}, fmt.Errorf("%s: version %s: %w", doc.ID, src.Version, err)
	}
	if _, routing := t.routing(cell); doc.Routing != "" && doc.Routing != routing {
		// Kept: geo_cell is what a reshard routes by, so it stays the
		// truth for the restaurant's dishes too.
		ix.log.Warn("directory: restaurant stored under another routing than its geo_cell's", "index", t.index, "routing", doc.Routing, "want", routing)
	}
	return warmed{id: id, cell: cell, version: v}, nil
}
